"""What the client and the server must agree on: Go rules, SGF, and (later) features, model and data."""

__version__ = "0.1.0"
