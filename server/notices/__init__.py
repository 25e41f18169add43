"""What the server tells people without being asked: announcements on every page and in the
client's status panel, Atom feeds of releases and accepted networks, and webhooks posted when a
network is accepted, released or rolled back."""
