"""What a change of an account's standing tells the apps above it, which connect to this signal in
their ``ready()``. It is sent inside the transaction of the change."""

from django.dispatch import Signal

# The account's games stopped or started counting everywhere (put in quarantine or let out of it):
# ``sender`` is the User model, ``user`` the account.
standing_changed = Signal()
