"""Staff's writes on stored games: turning them off (out of training, ratings and every count) and on
again. Game ingestion, the other write, is ``server.games.ingest``."""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import QuerySet

from server.games import signals

log = logging.getLogger(__name__)


def set_disabled(games: QuerySet, disabled: bool) -> int:
    """Disable (or enable) the games of the queryset that are not so yet; the apps above redo the counts
    they change in the background (``signals.games_counting_changed``): the runs' tallies and training
    windows, and for rating games the gatings (a decision taken on games disabled since is put in
    doubt) and the ratings. Returns the number of games changed."""
    with transaction.atomic():
        changing = games.exclude(disabled=disabled)
        runs = list(changing.values_list("run_id", flat=True).distinct().order_by())
        changed = changing.update(disabled=disabled)
        if changed:
            signals.games_counting_changed.send(sender=games.model, run_ids=runs)
    if changed:
        log.info("%d %s game(s) %s", changed, games.model._meta.verbose_name, "disabled" if disabled else "enabled")
    return changed
