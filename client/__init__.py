"""The volunteer's program (``python -m client``)."""
