"""numba's compiled kernels, loaded before the server's processes serve.

The rules engine, the features and the rows check are ``@njit(cache=True)`` kernels: the first call
of each compiles it (seconds) and stores it in numba's cache (``__pycache__`` beside the modules, or
``NUMBA_CACHE_DIR``), from which later processes load it. Several processes compiling into the same
cache at once can leave a signature's index entry naming another signature's machine code (numba
writes the index and the data files apart, each atomically but not together), which a later process
then runs. So the cache is filled before the servers start, by one process (``manage.py warm_up``,
run at deployment), and the web server's master loads the web's kernels before it forks its workers
(``deploy/gunicorn.conf.py``, ``server/wsgi.py``): a worker then neither compiles nor writes the
cache while it serves.
"""

from __future__ import annotations

# A territory game with a move in its first encore phase (where the game page asks of every move
# whether it is a pass for ko).
GAME_PAGE_RECORD = b"(;GM[1]FF[4]SZ[9]KM[7]RU[Japanese];B[cc];W[gg];B[];W[];B[dd])"


def web() -> None:
    """The kernels a web process runs: the upload checks and the game page's replay."""
    from server.dashboard.replay import replay_sgf
    from server.games.ingest import warm_up

    warm_up()
    replay_sgf(GAME_PAGE_RECORD)


def background() -> None:
    """The kernels the background worker's jobs add: positions set up with stones, evaluated by a
    network (the canary references)."""
    from common.nn.canary import evaluate_canary
    from common.nn.model import Model, named_config

    evaluate_canary(Model(named_config("tiny")).eval())
