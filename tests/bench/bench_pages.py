"""Page-speed benchmark of the website with a big run: 1,000 networks, 1,000,000 self-play games,
100,000 rating games and 1,000 contributors in PostgreSQL.

The data goes in with SQL (``generate_series``), not the ORM: a lineage of networks with ratings,
gatings and released ones; games spread over the last 30 days, each played by a contributor drawn
with a skew (a few contribute most); the newest 35% of them (350,000 of a million) by the current
network (the newest accepted, as a run's current network plays most of the games while it is
current), the others by the network that was newest at their time; two training lines. The games'
SGF names point at a few real SGF files (a 19x19 and a 9x9 game) put in storage, so game pages parse
and replay real records.

Every page is then requested in-process with Django's test Client, ``--requests`` times (default
7) after one unmeasured request that loads the code (imports, the rules engine's compiled kernels).
Django's cache is cleared before every measured request, so the figures include what a page
computes when nothing is cached (the training window of the contributor pages, the totals).
Printed: median and worst milliseconds per page; the target is under 200 ms for every page.

The database is a throwaway one (``sente_bench_pages``, dropped first and at the end; ``--keep``
keeps it and reuses it on the next run with ``--reuse``) on the local PostgreSQL, or the one named
by ``BENCH_DATABASE_URL``.

Run from the project root: .venv/bin/python tests/bench/bench_pages.py [--requests 7] [--games 1000000]
The last line is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/sente_bench_pages"
RUN = "bench"
DAYS = 30
CURRENT_SHARE = 0.35  # of the self-play games, the newest ones: the current network's


def admin_url(url: str) -> str:
    return url.rsplit("/", 1)[0].replace("postgres://", "postgresql://") + "/postgres"


def fresh_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(admin_url(url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def drop_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(admin_url(url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def setup_django(database: str, data_dir: Path) -> None:
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "server.settings",
            "DATABASE_URL": database,
            "SENTE_DATA_DIR": str(data_dir),
            "STORAGE_URL": (data_dir / "files").as_uri(),
        }
    )
    os.environ.pop("CACHE_URL", None)
    import django

    django.setup()


def random_game_sgf(size: int, moves: int, seed: int) -> bytes:
    """A real game record: random legal moves (captures and all) on a size x size board."""
    from common.go.game import Game
    from common.go.geometry import PASS
    from common.go.rules import Rules
    from common.go.sgf import write_sgf

    rng = random.Random(seed)
    game = Game(size, size, Rules(), 7.5)
    for _ in range(moves):
        legal = game.legal_moves()
        game.play(rng.choice(legal) if legal else PASS)
    return write_sgf(game, black_player=f"{RUN}-net-0500", white_player=f"{RUN}-net-0500", result="W+R").encode()


def records() -> tuple[str, str]:
    """The two real game records every game points at, put in storage (by content: the same names
    on every run)."""
    from django.core.files.storage import default_storage

    from server.files import StoredFiles

    files = StoredFiles(default_storage)
    return (
        files.put("games", random_game_sgf(19, 220, 1), ".sgf"),
        files.put("games", random_game_sgf(9, 70, 2), ".sgf"),
    )


def load(games: int, rating_games: int, networks: int, users: int) -> dict:
    """The run and its data, inserted with SQL; returns names the pages need."""
    from django.db import connection

    from common.settings import RunSettings
    from server.runs.models import create_run

    run = create_run(RUN, RunSettings().to_dict())
    version = run.current_settings()
    random_net = run.networks.get(is_random=True)
    sgf19, sgf9 = records()
    rules = json.dumps(
        {
            "ko": "POSITIONAL",
            "scoring": "AREA",
            "tax": "NONE",
            "suicide": True,
            "hasButton": False,
            "whiteHandicapBonus": "0",
        }
    )
    params = {
        "run": run.pk,
        "version": version.pk,
        "random": random_net.pk,
        "networks": networks,
        "users": users,
        "games": games,
        "rating_games": rating_games,
        "days": DAYS,
        "sgf19": sgf19,
        "sgf9": sgf9,
        "rules": rules,
        "earlier": max(1, round(games * (1 - CURRENT_SHARE))),
    }
    statements = [
        # contributors (unusable passwords: nobody logs in as them)
        """INSERT INTO accounts_user (password, is_superuser, username, first_name, last_name, email, is_staff,
                                      is_active, date_joined)
           SELECT '!', false, 'user' || lpad(i::text, 4, '0'), '', '', 'user' || i || '@example.org', false, true,
                  now() - interval '40 days'
           FROM generate_series(1, %(users)s) i""",
        # a lineage of networks, one every 30 days / networks; every tenth released, the rest accepted,
        # with some rejected candidates and the newest two still gating
        """INSERT INTO networks_network (name, is_random, architecture, size_name, file, size_bytes, sha256,
                                         train_step, rows_seen, state, released, created_at, notes, parent_id,
                                         run_id, uploaded_by_id)
           SELECT 'bench-net-' || lpad(i::text, 4, '0'), false, NULL, 'b6c96',
                  'networks/' || md5(i::text) || '.safetensors', 4000000 + i, md5(i::text) || md5((i + 1)::text),
                  i * 1000000, i * 60000,
                  CASE WHEN i > %(networks)s - 2 THEN 'rating' WHEN i %% 7 = 3 THEN 'rejected' ELSE 'accepted' END,
                  i %% 10 = 0, now() - (%(days)s * interval '1 day') * (1 - i::float / %(networks)s),
                  '', NULL, %(run)s, NULL
           FROM generate_series(1, %(networks)s - 1) i""",
        # the random network is the run's first (made now by create_run)
        """UPDATE networks_network SET created_at = now() - (%(days)s + 1) * interval '1 day' WHERE id = %(random)s""",
        # parents: the previous network (the first one's parent is the random network)
        """UPDATE networks_network n SET parent_id = COALESCE(
               (SELECT p.id FROM networks_network p WHERE p.name = 'bench-net-' ||
                   lpad((substr(n.name, 11)::int - 1)::text, 4, '0')), %(random)s)
           WHERE n.name LIKE 'bench-net-%%'""",
        """INSERT INTO ratings_rating (network_id, elo, elo_se, games, updated_at)
           SELECT id, CASE WHEN is_random THEN 0 ELSE 4 * substr(name, 11)::int + 30 * sin(id) END,
                  CASE WHEN is_random THEN 0 ELSE 15 + 10 * abs(cos(id)) END, 200, now()
           FROM networks_network WHERE run_id = %(run)s""",
        """INSERT INTO ratings_gating (candidate_id, rule, wins, draws, losses, decision, verdict, started_at,
                                       decided_at, rollback_looks, opponent_id)
           SELECT n.id, 'fixed', 110, 2, 88, CASE n.state WHEN 'rating' THEN 'continue' WHEN 'rejected'
                  THEN 'reject' ELSE 'accept' END, NULL, n.created_at, n.created_at + interval '1 hour', 0,
                  n.parent_id
           FROM networks_network n WHERE n.run_id = %(run)s AND NOT n.is_random""",
        # tasks: one per contributor and day
        """INSERT INTO distribution_task (id, kind, games, games_received, client_version, client_build,
                                          client_instance_id, created_at, expires_at, network_id, network_a_id,
                                          network_b_id, run_id, settings_version_id, user_id)
           SELECT md5('task' || u.id || '-' || d)::uuid, 'selfplay', 1000, 0, '0.1.0', '', 'bench',
                  now() - d * interval '1 day', now() - d * interval '1 day' + interval '6 hours',
                  %(random)s, NULL, NULL, %(run)s, %(version)s, u.id
           FROM accounts_user u, generate_series(0, %(days)s) d WHERE u.username LIKE 'user%%'""",
        # self-play games, oldest first; contributor k is drawn with probability falling with k; the
        # first `earlier` games are spread over the networks before the current one, the rest are
        # the current network's (the newest accepted)
        """CREATE TEMP TABLE bench_users AS
           SELECT row_number() OVER (ORDER BY id) - 1 AS k, id FROM accounts_user WHERE username LIKE 'user%%'""",
        """CREATE TEMP TABLE bench_nets AS
           SELECT row_number() OVER (ORDER BY created_at, id) - 1 AS k, id FROM networks_network
           WHERE run_id = %(run)s AND state <> 'rejected' AND state <> 'rating'""",
        """INSERT INTO games_traininggame (client_game_id, board_x_size, board_y_size, komi, rules, handicap,
                                           result, winner, score, resigned, moves, sgf, sgf_sha256, created_at,
                                           disabled, rows, npz, npz_sha256, network_id, run_id,
                                           settings_version_id, task_id, user_id)
           SELECT 'g' || g.i, g.size, g.size, 7.5, %(rules)s::jsonb, 0, 'W+R', 'W', NULL, true,
                  CASE WHEN g.size = 19 THEN 220 ELSE 70 END,
                  CASE WHEN g.size = 19 THEN %(sgf19)s ELSE %(sgf9)s END, md5(g.i::text) || md5(g.i::text),
                  g.t, g.i %% 997 = 0, 20 + (g.i::bigint * 7919) %% 160,
                  'rows/' || md5(g.i::text) || '.npz', md5(g.i::text) || md5(g.i::text),
                  n.id, %(run)s, %(version)s,
                  md5('task' || u.id || '-' || floor(extract(epoch FROM now() - g.t) / 86400)::int)::uuid, u.id
           FROM (SELECT i, CASE WHEN i %% 4 = 0 THEN 9 ELSE 19 END AS size,
                        now() - (%(days)s * interval '1 day') * (1 - i::float / %(games)s) AS t,
                        floor(%(users)s * power(((i::bigint * 2654435761) %% 1000003) / 1000003.0, 3))::int AS uk
                 FROM generate_series(1, %(games)s) i) g
           JOIN bench_users u ON u.k = g.uk
           JOIN bench_nets n ON n.k = CASE
               WHEN g.i > %(earlier)s THEN (SELECT count(*) FROM bench_nets) - 1
               ELSE LEAST(floor((g.i - 1)::float * ((SELECT count(*) FROM bench_nets) - 1) / %(earlier)s)::int,
                          (SELECT count(*) FROM bench_nets) - 2) END""",
        # rating games between each network and its parent
        """INSERT INTO games_ratinggame (client_game_id, board_x_size, board_y_size, komi, rules, handicap, result,
                                         winner, score, resigned, moves, sgf, sgf_sha256, created_at, disabled,
                                         black_network_id, white_network_id, run_id, settings_version_id, task_id,
                                         user_id)
           SELECT 'r' || g.i, 19, 19, 7.5, %(rules)s::jsonb, 0, 'W+R', 'W', NULL, true, 220, %(sgf19)s,
                  md5(g.i::text) || md5(g.i::text), GREATEST(n.created_at, g.t), false,
                  CASE WHEN g.i %% 2 = 0 THEN n.id ELSE n.parent_id END,
                  CASE WHEN g.i %% 2 = 0 THEN n.parent_id ELSE n.id END, %(run)s, %(version)s,
                  md5('task' || u.id || '-' || floor(extract(epoch FROM now() - g.t) / 86400)::int)::uuid, u.id
           FROM (SELECT i, now() - (%(days)s * interval '1 day') * (1 - i::float / %(rating_games)s) AS t,
                        (i * 31) %% %(users)s AS uk,
                        floor(i::float * (%(networks)s - 1) / %(rating_games)s)::int AS nk
                 FROM generate_series(1, %(rating_games)s) i) g
           JOIN bench_users u ON u.k = g.uk
           JOIN (SELECT row_number() OVER (ORDER BY created_at, id) - 1 AS k, id, parent_id, created_at
                 FROM networks_network WHERE run_id = %(run)s AND NOT is_random) n ON n.k = g.nk""",
    ]
    with connection.cursor() as cursor:
        for sql in statements:
            t0 = time.perf_counter()
            cursor.execute(sql, params)
            print(f"  {time.perf_counter() - t0:6.1f} s  {' '.join(sql.split()[:4])[:60]}", flush=True)
    training_lines(run)
    vacuum()
    return names(users)


def training_lines(run) -> None:
    """The run's two training lines (with the ORM: a few rows, and the model's defaults for the rest)."""
    from datetime import timedelta

    from django.utils import timezone

    from server.networks.models import Network
    from server.training.models import TrainingLine

    now = timezone.now()
    TrainingLine.objects.create(
        run=run,
        architecture="b6c96",
        role="current",
        status="training",
        status_note="training on the newest window",
        samples=999_000_000,
        rows_total=100_000_000,
        window_rows=9_000_000,
        exports=999,
        host="gpu-1",
        losses={"policy": 2.1, "value": 0.62, "score": 0.31, "ownership": 0.44, "total": 3.5},
        started_at=now - timedelta(days=30),
        created_at=now - timedelta(days=30),
        last_export=Network.objects.filter(name=f"{RUN}-net-0998").first(),
    )
    TrainingLine.objects.create(
        run=run,
        architecture="b10c128",
        role="next",
        status="training",
        status_note="catching up",
        samples=400_000_000,
        rows_total=100_000_000,
        window_rows=9_000_000,
        exports=12,
        host="gpu-2",
        losses={"policy": 2.3, "value": 0.66, "total": 3.9},
        started_at=now - timedelta(days=10),
        created_at=now - timedelta(days=10),
    )


def names(users: int) -> dict:
    """What the pages name: a network in the middle, the current network (the newest accepted, with
    the most games), the busiest contributor and the idlest."""
    from server.games.models import TrainingGame
    from server.runs.models import Run

    current = Run.objects.get(name=RUN).selfplay_network()
    games = TrainingGame.objects.filter(network=current).count()
    print(f"the current network {current.name} played {games:,} self-play games", flush=True)
    return {
        "run": RUN,
        "network": f"{RUN}-net-0500",
        "current": current.name,
        "user": "user0001",
        "user_small": f"user{users:04d}",
    }


def vacuum() -> None:
    """VACUUM ANALYZE (autovacuum's work on a live server): statistics and the visibility map."""
    from django.db import connection

    connection.ensure_connection()
    old = connection.connection.autocommit
    connection.connection.autocommit = True
    try:
        with connection.cursor() as cursor:
            t0 = time.perf_counter()
            cursor.execute("VACUUM ANALYZE")
            print(f"  {time.perf_counter() - t0:6.1f} s  VACUUM ANALYZE", flush=True)
    finally:
        connection.connection.autocommit = old


def count() -> dict[str, float]:
    """What is counted away from the pages, timed: the finished days of contributions (the whole
    history once, when the dashboard first meets a run; then one day a day, by the first page after
    midnight) and the training window's share of each contributor (the background task, every few
    minutes while pages ask for it)."""
    from datetime import timedelta

    from django.db import transaction
    from django.utils import timezone

    from server.dashboard import tallies
    from server.dashboard.models import RunTally
    from server.runs.models import Run

    run = Run.objects.get(name=RUN)
    last = (timezone.now() - tallies.SETTLE).date()
    t0 = time.perf_counter()
    tallies.rebuild(run)
    history = time.perf_counter() - t0
    # the same again in two steps: every day but the last, then the last (a day's step)
    with transaction.atomic():
        tallies.rebuild(run)  # to have a clean slate, then back one day
        state = RunTally.objects.select_for_update().get(run=run)
        from server.dashboard.models import ContributionDay, ContributionTotal

        ContributionDay.objects.filter(run=run).delete()
        ContributionTotal.objects.filter(run=run).delete()
        state.days_through = None
        state.training_games = state.rows = state.rating_games = 0
        tallies.count_days(run, state, last - timedelta(days=1))
        t0 = time.perf_counter()
        tallies.count_days(run, state, last)
        one_day = time.perf_counter() - t0
    t0 = time.perf_counter()
    state = tallies.count_window(run)
    window = time.perf_counter() - t0
    print(
        f"counted the finished days: the whole history in {history:.2f} s (once), one more day in "
        f"{one_day * 1000:.0f} ms (the first page after midnight); the training window ({state.window_games} "
        f"games, {state.window_rows} rows) in {window:.2f} s (in the background)",
        flush=True,
    )
    return {"history_s": round(history, 2), "one_day_ms": round(one_day * 1000), "window_s": round(window, 2)}


def exports(days: int = 365) -> None:
    """A year of daily archives (both kinds) listed on the Data page (their files are not needed)."""
    from datetime import date, timedelta

    from server.operations.models import DataExport
    from server.runs.models import Run

    run = Run.objects.get(name=RUN)
    if DataExport.objects.filter(run=run).exists():
        return
    today = date.today()
    DataExport.objects.bulk_create(
        [
            DataExport(
                run=run,
                day=today - timedelta(days=k),
                kind=kind,
                file=f"exports/{RUN}/{k}.{kind}",
                size_bytes=1_000_000 * k + 1,
                sha256=f"{k:060x}{kind:>4}"[:64],
                games=30_000,
            )
            for k in range(1, days + 1)
            for kind in ("sgf", "npz")
        ]
    )


def pages(names: dict) -> dict[str, tuple[str, str]]:
    """Every page of the site, by a short name: its path and a text its answer must hold."""
    from server.games.models import RatingGame, TrainingGame

    game = TrainingGame.objects.filter(board_x_size=19).order_by("-id").values_list("id", flat=True).first()
    rating = RatingGame.objects.order_by("-id").values_list("id", flat=True).first()
    network, current, user, small = names["network"], names["current"], names["user"], names["user_small"]
    return {
        "home": ("/", "All time"),
        "live": ("/live.json", '"games_total"'),
        "networks": ("/networks/", "bench-net-0999"),
        "networks_page_10": ("/networks/?page=10", "bench-net-0"),
        "networks_released": ("/networks/?show=released", "bench-net-0990"),
        "networks_candidates": ("/networks/?show=candidates", "show=candidates"),
        "network": (f"/networks/{network}/", "Lineage"),
        "network_current": (f"/networks/{current}/", "Lineage"),
        "elo": ("/elo/", 'id="elo-chart"'),
        "elo_data": ("/elo/data.json", network),
        "games": ("/games/", "/games/"),
        "games_page_100": ("/games/?page=100", "page 100 of 200"),
        "games_of_network": (f"/games/?network={network}", network),
        "games_of_current": (f"/games/?network={current}", "(the newest 10,000 are listed)"),
        "games_of_contributor": (f"/games/?user={user}", user),
        # the current network's 350,000 games, of which the idlest contributor played few
        "games_of_current_by_idlest": (f"/games/?network={current}&user={small}", small),
        "rating_games": ("/games/rating/", "/games/rating/"),
        "rating_games_of_network": (f"/games/rating/?network={network}", network),
        "rating_games_of_contributor": (f"/games/rating/?user={user}", user),
        "game": (f"/games/{game}/", 'id="board-data"'),
        "game_sgf": (f"/games/{game}.sgf", "(;FF[4]"),
        "rating_game": (f"/games/rating/{rating}/", 'id="board-data"'),
        "rating_game_sgf": (f"/games/rating/{rating}.sgf", "(;FF[4]"),
        "contributors_day": ("/contributors/", user),
        "contributors_week": ("/contributors/?period=week", user),
        "contributors_all": ("/contributors/?period=all", user),
        "contributor_top": (f"/contributors/{user}/", "of its"),
        "contributor_small": (f"/contributors/{small}/", "of its"),
        "releases": ("/releases/", "bench-net-0990"),
        "getting_started": ("/start/", "client contribute --server"),
        "data": ("/data/", "page 1 of 19"),
        "data_page_10": ("/data/?page=10", "page 10 of 19"),
        "tokens": ("/accounts/tokens/", "Make a token"),
        "password": ("/accounts/password/", "Change your password"),
    }


def measure(paths: dict[str, tuple[str, str]], requests: int) -> dict[str, dict]:
    from django.core.cache import cache
    from django.test import Client

    from server.accounts.models import User

    client = Client()
    user = User.objects.create_user("bench-viewer", "viewer@example.org", "a long enough password")
    client.force_login(user)
    figures = {}
    for name, (path, marker) in paths.items():
        response = client.get(path)  # loads the code this page runs; not measured
        body = b"".join(response.streaming_content) if response.streaming else response.content
        if response.status_code != 200 or marker.encode() not in body:
            raise RuntimeError(f"{path} answered {response.status_code} without {marker!r}: {body[:800]!r}")
        times = []
        for _ in range(requests):
            cache.clear()
            t0 = time.perf_counter()
            response = client.get(path)
            if response.streaming:
                b"".join(response.streaming_content)
            times.append((time.perf_counter() - t0) * 1000)
            assert response.status_code == 200, (path, response.status_code)
        figures[name] = {"median_ms": round(statistics.median(times), 1), "worst_ms": round(max(times), 1)}
        print(
            f"{name:22s} {path:42s} median {figures[name]['median_ms']:7.1f} ms, "
            f"worst {figures[name]['worst_ms']:7.1f} ms",
            flush=True,
        )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=7, help="measured requests per page")
    parser.add_argument("--games", type=int, default=1_000_000, help="self-play games")
    parser.add_argument("--rating-games", type=int, default=100_000)
    parser.add_argument("--networks", type=int, default=1000)
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--reuse", action="store_true", help="use the database a --keep run left")
    args = parser.parse_args()
    database = os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB)
    data_dir = Path(os.environ.get("BENCH_DATA_DIR") or tempfile.mkdtemp(prefix="sente-bench-pages-"))
    if not args.reuse:
        fresh_database(database)
    setup_django(database, data_dir)
    try:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        if args.reuse:
            from server.accounts.models import User

            shown = names(args.users)
            User.objects.filter(username="bench-viewer").delete()
            records()
        else:
            t0 = time.perf_counter()
            print(
                f"loading {args.networks} networks, {args.games} self-play games, {args.rating_games} rating "
                f"games, {args.users} contributors ...",
                flush=True,
            )
            shown = load(args.games, args.rating_games, args.networks, args.users)
            print(f"loaded in {time.perf_counter() - t0:.0f} s", flush=True)
        background = count()
        exports()
        figures = measure(pages(shown), args.requests)
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep:
            drop_database(database)
    worst = max(f["worst_ms"] for f in figures.values())
    print(f"slowest page: {max(figures, key=lambda k: figures[k]['worst_ms'])} at {worst} ms (target: under 200 ms)")
    print(
        json.dumps(
            {
                "games": args.games,
                "rating_games": args.rating_games,
                "networks": args.networks,
                "users": args.users,
                "counting": background,
                "pages": figures,
                "max_ms": worst,
            }
        )
    )


if __name__ == "__main__":
    main()
