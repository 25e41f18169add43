"""Playing strength benchmark: our search with KataGo's g170 b6c96 network against GNU Go level 10.

9x9, komi 7, Chinese rules (area scoring), 100 visits per move, colours alternating, through GTP
child processes and the referee of ``python -m client twogtp`` (two passes end a game; it is scored
by area as the rules engine scores it). KataGo itself won 3 of 4 games in this setting; the target
is at least 60% of 20 games.

Run from the project root: .venv/bin/python tests/bench/bench_gnugo.py [--games 20] [--visits 100]
It needs GNU Go (Debian package gnugo). The last line is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from client.gtp.twogtp import GtpProcess, play_match  # noqa: E402
from common.go.geometry import BLACK, WHITE  # noqa: E402
from common.go.rules import Rules  # noqa: E402

MODEL = ROOT.parent / "shared" / "models" / "g170-b6c96-s175395328-d26788732.bin.gz"
GNUGO = shutil.which("gnugo") or ("/usr/games/gnugo" if os.path.exists("/usr/games/gnugo") else None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=20)
    parser.add_argument("--visits", type=int, default=100)
    parser.add_argument("--level", type=int, default=10)
    parser.add_argument("--out", default=None, help="directory for the games' SGF files")
    args = parser.parse_args()
    if GNUGO is None:
        print("GNU Go is not installed (apt-get install gnugo)", file=sys.stderr)
        return 1
    rules = Rules.from_text("chinese")
    sente_cmd = [
        sys.executable,
        "-m",
        "client",
        "gtp",
        "--model",
        str(MODEL),
        "--visits",
        str(args.visits),
        "--device",
        "cpu",
        "--seed",
        "1",
        "--compile",
    ]
    gnugo_cmd = [GNUGO, "--mode", "gtp", "--level", str(args.level), "--chinese-rules"]
    out = Path(args.out) if args.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    wins = 0
    wins_as = {BLACK: 0, WHITE: 0}
    margins = []
    start = time.perf_counter()
    with GtpProcess(sente_cmd, "sente") as sente, GtpProcess(gnugo_cmd, "gnugo") as gnugo:
        for k in range(args.games):
            our_color = BLACK if k % 2 == 0 else WHITE
            black, white = (sente, gnugo) if our_color == BLACK else (gnugo, sente)
            match = play_match(black, white, (9, 9), rules, komi=7.0)
            result = match.game.result
            won = result is not None and result.winner == our_color
            wins += won
            wins_as[our_color] += won
            sign = 1 if our_color == WHITE else -1
            margins.append(sign * result.score if result and not result.resignation else None)
            if out:
                (out / f"game-{k:02d}.sgf").write_text(match.record.to_sgf())
            print(
                f"game {k + 1}: sente {'black' if our_color == BLACK else 'white'}, {match.record.result} "
                f"after {match.game.num_moves} moves ({match.reason}); sente {wins}/{k + 1}",
                flush=True,
            )
    seconds = time.perf_counter() - start
    rate = wins / args.games
    print(
        f"sente (g170, {args.visits} visits) vs GNU Go level {args.level}: {wins}/{args.games} = {100 * rate:.0f}% "
        f"(as black {wins_as[BLACK]}, as white {wins_as[WHITE]}) in {seconds / 60:.1f} min"
    )
    print(
        json.dumps(
            {
                "games": args.games,
                "wins": wins,
                "win_rate": rate,
                "wins_as_black": wins_as[BLACK],
                "wins_as_white": wins_as[WHITE],
                "visits": args.visits,
                "gnugo_level": args.level,
                "minutes": round(seconds / 60, 1),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
