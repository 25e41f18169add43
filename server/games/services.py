"""Staff's writes on stored games: turning them off (out of training, ratings and every count) and on
again. Game ingestion, the other write, is ``server.games.ingest``."""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import QuerySet

from server.dashboard.services import queue_recounts
from server.games.models import RatingGame
from server.ratings.tasks import rating_games_changed

log = logging.getLogger(__name__)


def set_disabled(games: QuerySet, disabled: bool) -> int:
    """Disable (or enable) the games of the queryset that are not so yet; the counts they change are
    redone in the background: the runs' tallies and training windows, and for rating games the
    gatings (a decision taken on games disabled since is put in doubt) and the ratings. Returns the
    number of games changed."""
    with transaction.atomic():
        changing = games.exclude(disabled=disabled)
        runs = list(changing.values_list("run_id", flat=True).distinct().order_by())
        changed = changing.update(disabled=disabled)
        if changed:
            rating = games.model is RatingGame
            queue_recounts(runs, window=not rating)  # the site counts both kinds; the window, self-play
            if rating:
                rating_games_changed(runs)
    if changed:
        log.info("%d %s game(s) %s", changed, games.model._meta.verbose_name, "disabled" if disabled else "enabled")
    return changed
