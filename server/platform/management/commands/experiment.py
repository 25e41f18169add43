"""``manage.py experiment``: proof that the platform learns.

It runs the whole platform (``manage.py platform``) on a fresh data folder for a fixed budget of
minutes, starting from the random network, then measures what came of it and writes a report
(``report.md`` and ``report.json`` in ``--out``): the Elo of every accepted generation from the run's
rating games, the newest generation against the random network, the uniform random player and GNU
Go, and the learning curve: the run's network at checkpoints against GNU Go's levels. The report
also gives the machine's load average while the platform ran and during the matches.

    SENTE_DATA_DIR=sente-experiment .venv/bin/python manage.py experiment --minutes 60 --out experiment
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from server.platform.demo import DEMO_RUN
from server.platform.experiment import machine, measure, write_report
from server.platform.management.commands.platform import settings_document
from server.platform.processes import LoadMeter


class Command(BaseCommand):
    help = (
        "Run the platform from the random network for a fixed number of minutes on a fresh data folder "
        "(SENTE_DATA_DIR), then rate its generations and play the newest against the random network, the uniform "
        "random player and GNU Go, and its network at checkpoints against GNU Go's levels (the learning curve); "
        "writes report.md and report.json."
    )

    def add_arguments(self, parser):
        parser.add_argument("--minutes", type=float, required=True, help="how long the platform runs")
        parser.add_argument("--out", type=Path, required=True, help="folder for the report")
        parser.add_argument(
            "--board", type=int, default=7, choices=range(5, 10), metavar="5..9", help="board size (default 7)"
        )
        parser.add_argument("--architecture", help="the network (default b3c32 on 9x9, tiny on the smaller boards)")
        parser.add_argument(
            "--settings-file",
            type=Path,
            help="a JSON settings document for the run (default: the demo's own); the report names what it changes",
        )
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument(
            "--random-games",
            type=int,
            default=100,
            help="games of the newest generation against the random network (default 100)",
        )
        parser.add_argument(
            "--uniform-games", type=int, default=20, help="games against the uniform random player (default 20)"
        )
        parser.add_argument(
            "--gnugo-games",
            type=int,
            help="games of the newest generation against GNU Go, also the curve's at the end of the run "
            "(default 40 on 9x9, 20 on the other boards; 0: none)",
        )
        parser.add_argument("--gnugo-level", type=int, default=1)
        parser.add_argument(
            "--visits", type=int, help="visits per move in those games (default: the run's rating games')"
        )
        parser.add_argument(
            "--curve-minutes", type=float, default=30.0, help="minutes between the curve's checkpoints (default 30)"
        )
        parser.add_argument(
            "--curve-levels", default="1,5", help="GNU Go's levels the curve plays, comma separated (default 1,5)"
        )
        parser.add_argument(
            "--curve-visit-factors",
            default="1,4",
            help="the curve's visits per move, as multiples of --visits, comma separated (default 1,4)",
        )
        parser.add_argument(
            "--curve-games", type=int, default=20, help="games per checkpoint, level and visits (default 20; 0: none)"
        )
        parser.add_argument(
            "--jobs", type=int, default=os.cpu_count() or 1, help="the curve's matches at once (default: the cores)"
        )

    def handle(self, *args, **options):
        from server.ratings.anchors import GNUGO_LEVELS
        from server.runs.models import Run

        if options["minutes"] <= 0:
            raise CommandError(f"--minutes {options['minutes']}: must be positive")
        if options["curve_minutes"] <= 0:
            raise CommandError(f"--curve-minutes {options['curve_minutes']}: must be positive")
        for key in ("curve_games", "gnugo_games"):
            if options[key] is not None and options[key] < 0:
                raise CommandError(f"--{key.replace('_', '-')} {options[key]}: must be 0 or more")
        if options["jobs"] < 1:
            raise CommandError(f"--jobs {options['jobs']}: must be at least 1")
        levels = _numbers("--curve-levels", options["curve_levels"], GNUGO_LEVELS)
        factors = _numbers("--curve-visit-factors", options["curve_visit_factors"], range(1, 1001))
        gnugo_games = options["gnugo_games"]
        if gnugo_games is None:
            gnugo_games = 40 if options["board"] == 9 else 20
        settings_document(options["settings_file"])  # a bad file is refused before anything runs
        data = Path(settings.DATA_DIR)
        call_command("migrate", interactive=False, verbosity=0)
        if Run.objects.filter(name=DEMO_RUN).exists():
            raise CommandError(
                f"the experiment starts from the random network, but {data} holds a demo run "
                "already: run it with SENTE_DATA_DIR set to a new folder"
            )
        started = time.monotonic()
        with LoadMeter() as platform_load:
            call_command(
                "platform",
                minutes=options["minutes"],
                port=options["port"],
                board=options["board"],
                architecture=options["architecture"],
                settings_file=options["settings_file"],
                status_seconds=60.0,
                stdout=self.stdout,
                stderr=self.stderr,
            )
        ran = (time.monotonic() - started) / 60
        with LoadMeter() as match_load:
            report = measure(
                Run.objects.get(name=DEMO_RUN),
                options["out"],
                ran,
                machine(),
                random_games=options["random_games"],
                uniform_games=options["uniform_games"],
                gnugo_games=gnugo_games,
                gnugo_level=options["gnugo_level"],
                visits=options["visits"],
                curve_every=options["curve_minutes"],
                curve_levels=levels,
                curve_factors=factors,
                curve_games=options["curve_games"],
                jobs=options["jobs"],
                progress=self.stdout.write,
            )
        report.load = {"platform": platform_load.summary(), "matches": match_load.summary()}
        path = write_report(report, options["out"])
        self.stdout.write(report.markdown())
        self.stdout.write(f"report written to {path}")


def _numbers(option: str, text: str, allowed: range) -> tuple[int, ...]:
    """A comma-separated list of whole numbers within ``allowed``, each once, in the order given."""
    try:
        numbers = tuple(dict.fromkeys(int(x) for x in text.split(",") if x.strip()))
    except ValueError:
        raise CommandError(f"{option} {text!r}: expected whole numbers separated by commas, such as 1,5") from None
    if not numbers:
        raise CommandError(f"{option} {text!r}: expected at least one number")
    wrong = [n for n in numbers if n not in allowed]
    if wrong:
        raise CommandError(f"{option} {text!r}: {wrong[0]} is not from {allowed.start} to {allowed.stop - 1}")
    return numbers
