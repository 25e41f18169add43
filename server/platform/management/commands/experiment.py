"""``manage.py experiment``: proof that the platform learns.

It runs the whole platform (``manage.py platform``) on a fresh data folder for a fixed budget of
minutes, starting from the random network, then measures what came of it and writes a report
(``report.md`` and ``report.json`` in ``--out``): the Elo of every accepted generation from the run's
rating games, and the newest generation against the random network and against GNU Go.

    SENTE_DATA_DIR=sente-experiment .venv/bin/python manage.py experiment --minutes 60 --out experiment
"""

from __future__ import annotations

import os
import platform as system
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db.models import Sum

from server.platform.demo import DEMO_RUN
from server.platform.experiment import Report, generations, play_gnugo, play_random, write_report


class Command(BaseCommand):
    help = ("Run the platform from the random network for a fixed number of minutes on a fresh data folder "
            "(SENTE_DATA_DIR), then rate its generations and play the newest against the random network and GNU "
            "Go; writes report.md and report.json.")

    def add_arguments(self, parser):
        parser.add_argument("--minutes", type=float, required=True, help="how long the platform runs")
        parser.add_argument("--out", type=Path, required=True, help="folder for the report")
        parser.add_argument("--board", type=int, default=7, choices=range(5, 10), metavar="5..9",
                            help="board size (default 7)")
        parser.add_argument("--architecture", default="tiny", help="the network (default tiny)")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--random-games", type=int, default=100,
                            help="games of the newest generation against the random network (default 100)")
        parser.add_argument("--gnugo-games", type=int, default=20, help="games against GNU Go (default 20; 0: none)")
        parser.add_argument("--gnugo-level", type=int, default=1)
        parser.add_argument("--visits", type=int, help="visits per move in those games (default: the run's "
                                                       "rating games')")

    def handle(self, *args, **options):
        from server.games.models import RatingGame, TrainingGame
        from server.networks.models import Network
        from server.ratings.service import refit
        from server.runs.models import Run

        if options["minutes"] <= 0:
            raise CommandError(f"--minutes {options['minutes']}: must be positive")
        data = Path(settings.DATA_DIR)
        call_command("migrate", interactive=False, verbosity=0)
        if Run.objects.filter(name=DEMO_RUN).exists():
            raise CommandError(f"the experiment starts from the random network, but {data} holds a demo run "
                               "already: run it with SENTE_DATA_DIR set to a new folder")
        out = options["out"]
        call_command("platform", minutes=options["minutes"], port=options["port"], board=options["board"],
                     architecture=options["architecture"], status_seconds=60.0, stdout=self.stdout,
                     stderr=self.stderr)

        run = Run.objects.get(name=DEMO_RUN)
        self.stdout.write("rating the generations")
        refit(run)
        report = Report(run=run.name, board=options["board"], architecture=options["architecture"],
                        minutes=options["minutes"], machine=_machine())
        games = TrainingGame.objects.filter(run=run)
        report.selfplay_games = games.count()
        report.rows = games.aggregate(rows=Sum("rows"))["rows"] or 0
        report.rating_games = RatingGame.objects.filter(run=run).count()
        report.candidates = Network.objects.filter(run=run, is_random=False).count()
        report.generations = generations(run)
        newest = run.networks.filter(name=report.generations[-1].name, is_random=False).first()
        match = run.current_settings().settings.rating
        visits = options["visits"] or match.visits
        log = out / "matches.log"
        out.mkdir(parents=True, exist_ok=True)
        if newest is None:
            report.versus_random = report.versus_gnugo = {"skipped": "no generation was accepted"}
        else:
            self.stdout.write(f"{newest.name} against the random network ({options['random_games']} games)")
            report.versus_random = play_random(newest, match, options["random_games"], visits, log)
            if options["gnugo_games"] > 0:
                self.stdout.write(f"{newest.name} against GNU Go level {options['gnugo_level']} "
                                  f"({options['gnugo_games']} games)")
                report.versus_gnugo = play_gnugo(newest, options["board"], match.komi, options["gnugo_games"],
                                                 visits, options["gnugo_level"], log)
        path = write_report(report, out)
        self.stdout.write(report.markdown())
        self.stdout.write(f"report written to {path}")


def _machine() -> str:
    return f"{os.cpu_count() or 1} CPU cores ({system.processor() or system.machine()})"
