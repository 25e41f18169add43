"""``manage.py shard``: pack the runs' self-play games into shards now (see ``server.games.shards``)."""

from __future__ import annotations

import logging

from django.core.management.base import BaseCommand, CommandError

from server.games.shards import pack_due, unpacked
from server.runs.models import Run

log = logging.getLogger(__name__)


class Command(BaseCommand):
    help = (
        "Pack the runs' self-play games into shards: every shard that is due (full, its day over, or its oldest "
        "game waited long enough); with --all, then the rest of the games too. The server does the same after "
        "uploads; this is for a server whose uploads stopped, and before reading the shards of a day."
    )

    def add_arguments(self, parser):
        parser.add_argument("--run", help="only this run")
        parser.add_argument("--all", action="store_true", help="pack every game not in a shard yet, due or not")

    def handle(self, *args, **options):
        runs = Run.objects.order_by("name")
        if options["run"]:
            runs = runs.filter(name=options["run"])
            if not runs.exists():
                raise CommandError(f"there is no run {options['run']!r}")
        failed = 0
        for run in runs:
            try:
                closed = pack_due(run, force=options["all"])
            except Exception as e:  # the other runs are still packed; the command then fails
                failed += 1
                log.exception("run %s: packing failed", run.name)
                self.stderr.write(f"{run.name}: packing failed: {e}")
                continue
            waiting = unpacked(run).count()
            self.stdout.write(
                f"{run.name}: {len(closed)} shard(s) closed, {sum(s.games for s in closed)} games, "
                f"{sum(s.rows for s in closed):,} rows; {waiting} game(s) wait for the next"
            )
        if failed:
            raise CommandError(f"packing failed for {failed} run(s) (see above); the next run tries again")
