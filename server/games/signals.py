"""What the games' writes tell the apps above them (ratings, audit, dashboard), which connect to
these signals in their ``ready()``: the games app calls none of them itself. Both are sent inside
the transaction of the write, so a receiver's own writes commit or roll back with it, and work it
queues with ``transaction.on_commit`` starts only once the write is there."""

from django.dispatch import Signal

# A game was stored: ``sender`` is its model (TrainingGame or RatingGame), ``game`` the new row.
game_stored = Signal()

# Games stopped or started counting (turned off or on by staff): ``sender`` is their model,
# ``run_ids`` the runs they belong to.
games_counting_changed = Signal()
