"""What the networks' writes tell the apps above them, which connect to these signals in their
``ready()``. Sent inside the transaction of the write."""

from django.dispatch import Signal

# A network was stored (uploaded or exported by the trainer): ``sender`` is Network, ``network`` the
# new row, a candidate until a receiver decides otherwise (a run that gates nothing accepts it).
network_stored = Signal()
