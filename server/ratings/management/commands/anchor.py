"""``manage.py anchor``: play a run's accepted networks against GNU Go at fixed levels and refit the
run's ratings with them (see server.ratings.anchors)."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from common.elo import Z95
from server.ratings import anchors, matches
from server.ratings.services import refit
from server.runs.models import Run


class Command(BaseCommand):
    help = (
        "Play the run's accepted networks against GNU Go at fixed levels (those with fewer than --games "
        "games against a level), then refit the run's ratings with GNU Go as fixed players."
    )

    def add_arguments(self, parser):
        parser.add_argument("--run", help="the run (default: the current run)")
        parser.add_argument("--levels", default="1,5,10", help="GNU Go levels, comma separated (default 1,5,10)")
        parser.add_argument("--games", type=int, default=20, help="games per network and level (default 20)")
        parser.add_argument("--visits", type=int, default=200, help="the network's visits per move (default 200)")
        parser.add_argument("--size", type=int, default=9, help="board size (default 9)")
        parser.add_argument("--komi", type=float, default=7.0, help="komi (default 7)")
        parser.add_argument("--newest", type=int, default=None, help="only the newest N accepted networks")
        parser.add_argument("--log", default=None, help="the games' log (default: DATA_DIR/anchor.log)")

    def handle(self, *args, **options):
        if matches.gnugo_path() is None:
            raise CommandError("GNU Go is not installed (Debian package gnugo): there is no anchor to play")
        run = Run.objects.filter(name=options["run"]).first() if options["run"] else Run.objects.current()
        if run is None:
            raise CommandError(f"there is no run named {options['run']!r}" if options["run"] else "no run is active")
        try:
            levels = [int(v) for v in options["levels"].split(",") if v.strip()]
            chosen = [anchors.gnugo_anchor(level) for level in levels]
        except ValueError as e:
            raise CommandError(f"--levels {options['levels']!r}: {e}") from None
        if options["games"] < 1 or options["visits"] < 1 or not 5 <= options["size"] <= 19:
            raise CommandError("--games and --visits must be at least 1, --size from 5 to 19")
        log_path = Path(options["log"] or Path(settings.DATA_DIR) / "anchor.log")
        played = 0
        for anchor in chosen:
            for network in anchors.to_play(run, anchor, options["games"], options["newest"]):
                self.stdout.write(f"{network.name} against {anchor.name} ({options['games']} games)")
                match = anchors.play(
                    network, anchor, options["games"], options["visits"], options["size"], options["komi"], log_path
                )
                if match is not None:
                    played += match.games
                    self.stdout.write(f"  {match.wins} wins, {match.draws} draws, {match.losses} losses")
        if played:
            refit(run)
        for rating in run.anchor_ratings.select_related("anchor"):
            elo = "not rated" if rating.elo is None else f"Elo {rating.elo:+.0f} ± {Z95 * (rating.elo_se or 0):.0f}"
            self.stdout.write(f"{rating.anchor.name}: {elo} over {rating.games} games")
        self.stdout.write(f"{played} games played")
