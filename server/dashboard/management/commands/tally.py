"""manage.py tally [--run NAME] [--rebuild] [--window]: count the finished days of the runs'
contributions now (pages do it when they first need them), again from the start with --rebuild
(after games were disabled), and each contributor's rows in the training window with --window."""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError

from server.dashboard import tallies
from server.runs.models import Run


class Command(BaseCommand):
    help = "Count the contributions of finished days (and the training window's) for the dashboard."

    def add_arguments(self, parser):
        parser.add_argument("--run", help="only this run (default: every run)")
        parser.add_argument("--rebuild", action="store_true", help="count every day again")
        parser.add_argument("--window", action="store_true", help="count the training window's rows too")

    def handle(self, *args, run=None, rebuild=False, window=False, **options):
        runs = Run.objects.filter(name=run) if run else Run.objects.all()
        if run and not runs.exists():
            raise CommandError(f"there is no run {run!r}")
        for r in runs:
            t0 = time.perf_counter()
            if rebuild:
                tallies.rebuild(r)
            else:
                tallies.tally_state(r)
            self.stdout.write(f"{r.name}: days counted in {time.perf_counter() - t0:.1f} s")
            if window:
                t0 = time.perf_counter()
                state = tallies.count_window(r)
                self.stdout.write(
                    f"{r.name}: training window counted in {time.perf_counter() - t0:.1f} s "
                    f"({state.window_games} games, {state.window_rows} rows)"
                )
