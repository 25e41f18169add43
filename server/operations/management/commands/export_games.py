"""``manage.py export_games``: the daily archives of a run's games (see ``server.operations.exports``)."""

from __future__ import annotations

import logging
from datetime import date, timedelta

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Min
from django.utils import timezone

from server.games.models import RatingGame, TrainingGame
from server.operations.exports import NotPacked, export_day
from server.operations.models import DataExport
from server.runs.models import Run

logger = logging.getLogger(__name__)


class Command(BaseCommand):
    help = (
        "Make the daily archives of the runs' games (an SGF zip; the npz archive lists the day's shards, packed "
        "first): by default yesterday's (UTC) of every run, and every earlier day that lacks one of them."
    )

    def add_arguments(self, parser):
        parser.add_argument("--run", help="only this run")
        parser.add_argument("--day", type=date.fromisoformat, help="only this UTC day (YYYY-MM-DD)")
        parser.add_argument(
            "--force", action="store_true", help="make the archives again even if they exist (every day's, or --day's)"
        )

    def handle(self, *args, **options):
        runs = Run.objects.all()
        if options["run"]:
            runs = runs.filter(name=options["run"])
            if not runs.exists():
                raise CommandError(f"there is no run {options['run']!r}")
        yesterday = timezone.now().date() - timedelta(days=1)
        if options["day"] and options["day"] > yesterday:
            self.stderr.write(f"{options['day']} is not over yet: its archives would miss the games still to come")
        made = failed = 0
        kinds = DataExport.Kind.values
        for run in runs:
            if options["day"]:
                wanted = [(options["day"], kind) for kind in kinds]
            else:
                firsts = [
                    model.objects.filter(run=run).aggregate(first=Min("created_at"))["first"]
                    for model in (TrainingGame, RatingGame)
                ]
                if not any(firsts):
                    continue
                first = min(f for f in firsts if f is not None)
                days = [first.date() + timedelta(days=k) for k in range((yesterday - first.date()).days + 1)]
                # Each kind on its own: a day whose npz archive failed after its SGF archive was made
                # gets the npz archive at the next run.
                done = set() if options["force"] else set(DataExport.objects.filter(run=run).values_list("day", "kind"))
                wanted = [(day, kind) for day in days for kind in kinds if (day, kind) not in done]
            for day, kind in wanted:
                try:
                    export = export_day(run, day, kind, force=options["force"])
                except NotPacked as e:  # made at a later run, once its games are all in shards
                    failed += 1
                    self.stderr.write(f"{run.name} {day} {kind}: not made: {e}")
                    continue
                except Exception as e:  # the other archives are still made; the command then fails
                    failed += 1
                    logger.exception("run %s: the %s export of %s failed", run.name, kind, day)
                    self.stderr.write(f"{run.name} {day} {kind}: failed: {e}")
                    continue
                if export is not None:
                    made += 1
                    self.stdout.write(f"{run.name} {day} {kind}: {export.games} games, {export.size_bytes:,} bytes")
        self.stdout.write(f"{made} archive(s) ready")
        if failed:
            raise CommandError(f"{failed} archive(s) failed (see above); the next run makes them")
