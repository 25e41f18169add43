"""GNU Go as referee: random games where both engines must agree on the legal moves and the
stones after every move (simple ko, suicide illegal: GNU Go's rules)."""

import os
import shutil
import sys

import pytest

from client.gtp.twogtp import GtpProcess
from tests.e2e.needs import missing

GNUGO = shutil.which("gnugo") or ("/usr/games/gnugo" if os.path.exists("/usr/games/gnugo") else None)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gnugo():
    if GNUGO is None:
        missing("GNU Go", "apt-get install gnugo (.ci/run installs it)")
    with GtpProcess([GNUGO, "--mode", "gtp", "--level", "0"], "gnugo") as proc:
        yield proc


@pytest.fixture(scope="module")
def sente():
    cmd = [
        sys.executable,
        "-m",
        "client",
        "gtp",
        "--player",
        "random",
        "--seed",
        "2024",
        "--rules",
        '{"ko":"SIMPLE","scoring":"AREA","suicide":false}',
    ]
    with GtpProcess(cmd, "sente") as proc:
        yield proc


def stones(engine: GtpProcess, color: str) -> set[str]:
    return set(engine.send(f"list_stones {color}").upper().split())


@pytest.mark.parametrize("size,games", [(9, 30), (19, 6)])
def test_random_games_agree_with_gnu_go(gnugo, sente, size, games):
    total_moves = 0
    for _ in range(games):
        for engine in (gnugo, sente):
            engine.send(f"boardsize {size}")
            engine.send("clear_board")
        colors = ["black", "white"]
        passes = 0
        for turn in range(4 * size * size):
            color = colors[turn % 2]
            move = sente.send(f"genmove {color}")
            gnugo.send(f"play {color} {move}")
            passes = passes + 1 if move.lower() == "pass" else 0
            total_moves += 1
            to_move = colors[(turn + 1) % 2]
            ours = set(sente.send(f"all_legal {to_move}").upper().split())
            theirs = set(gnugo.send(f"all_legal {to_move}").upper().split())
            assert ours == theirs, f"turn {turn}: only ours {ours - theirs}, only GNU Go's {theirs - ours}"
            for c in colors:
                assert stones(sente, c) == stones(gnugo, c), f"turn {turn}: {c} stones differ"
            if passes >= 2:
                break
        else:
            pytest.fail("random game did not end")
    print(f"{games} games, {total_moves} moves compared on {size}x{size}")
    assert total_moves > games * size * size // 2
