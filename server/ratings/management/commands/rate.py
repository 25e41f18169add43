"""``manage.py rate``: count a run's gatings again and refit its ratings now, or keep them fresh
(``--watch``)."""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError

from server.games.models import RatingGame
from server.ratings.fit import FitError
from server.ratings.promotion import recount
from server.ratings.services import refit
from server.runs.models import Run


class Command(BaseCommand):
    help = (
        "Count the gatings of a run (default: the current run) again from the rating games that count, and "
        "refit its ratings. With --watch, keep running and refit whenever new rating games have come, at most "
        "every SECONDS."
    )

    def add_arguments(self, parser):
        parser.add_argument("--run", help="the run's name (default: the current run)")
        parser.add_argument(
            "--watch",
            type=float,
            metavar="SECONDS",
            help="keep refitting when new rating games arrive, at most this often",
        )

    def handle(self, *args, **options):
        name = options["run"]
        if options["watch"] is not None and options["watch"] <= 0:
            raise CommandError(f"--watch: {options['watch']} must be a positive number of seconds")
        seen: dict[int, tuple] = {}
        while True:
            run = Run.objects.filter(name=name).first() if name else Run.objects.current()
            if run is None:
                raise CommandError(f"there is no run {name!r}" if name else "no run is active")
            games = RatingGame.objects.filter(run=run)
            mark = (games.count(), games.order_by("-id").values_list("id", flat=True).first())
            if seen.get(run.pk) != mark:
                for gating in recount(run):
                    reason = (gating.doubt or {}).get("reason", "")
                    self.stdout.write(f"run {run.name}: the gating of {gating.candidate.name} is in doubt: {reason}")
                try:
                    networks, fit = refit(run)
                except FitError as e:
                    raise CommandError(f"run {run.name}: the ratings cannot be refitted: {e}") from None
                seen[run.pk] = mark
                best = max(
                    ((fit.elo[k], n.name) for k, n in enumerate(networks) if fit.elo[k] == fit.elo[k]),
                    default=(0.0, "-"),
                )
                self.stdout.write(
                    f"run {run.name}: {len(networks)} networks rated from {mark[0]} games "
                    f"({fit.iterations} Newton steps); strongest {best[1]} at {best[0]:+.0f} Elo"
                )
            if options["watch"] is None:
                return
            time.sleep(options["watch"])
