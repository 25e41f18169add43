"""The dashboard's reads that are more than a lookup: the live numbers, a network's lineage, the Elo
chart's columns and the contributors' ranking."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.core.cache import cache
from django.db import connection
from django.utils import timezone

from common.elo import Z95
from server.dashboard import tallies
from server.dashboard.models import RunTally
from server.networks.models import Network
from server.ratings.models import AnchorRating, Rating
from server.runs.models import Run

LIVE_SECONDS = 10  # how long the live numbers are kept in the cache (pages poll them)


def live_numbers(run: Run) -> dict[str, Any]:
    """Games, rows and contributors of the last hour, day and all time, and the current network
    (kept LIVE_SECONDS in the cache: every open front page asks for them)."""
    key = f"dashboard:live:{run.pk}"
    numbers = cache.get(key)
    if numbers is not None:
        return numbers
    now = timezone.now()
    state = tallies.tally_state(run)
    inactive = tallies.inactive_users()
    hour = tallies.totals(run, now - timedelta(hours=1), state, inactive)
    day_users = tallies.per_user(run, now - timedelta(days=1), state=state, inactive=inactive)
    day = tallies.Counts()
    for counts in day_users.values():
        day.add(counts)
    total = tallies.totals(run, None, state, inactive)
    network = run.selfplay_network()
    rating = Rating.objects.filter(network=network).first() if network else None
    numbers = {
        "run": run.name,
        "at": now.isoformat(),
        "network": network.name if network else None,
        "network_elo": rating.elo if rating else None,
        "network_elo_se": rating.elo_se if rating else None,
        "z95": Z95,
        "games_hour": hour.training_games,
        "rows_hour": hour.rows,
        "rating_games_hour": hour.rating_games,
        "games_day": day.training_games,
        "rows_day": day.rows,
        "rating_games_day": day.rating_games,
        "games_total": total.training_games,
        "rows_total": total.rows,
        "rating_games_total": total.rating_games,
        "contributors_day": len(day_users),
    }
    cache.set(key, numbers, LIVE_SECONDS)
    return numbers


def ancestors(network: Network, depth: int) -> list[Network]:
    """The network's parent, its parent's parent, ... (``depth`` at most), nearest first, in two
    queries."""
    if network.parent_id is None:
        return []
    table = connection.ops.quote_name(Network._meta.db_table)
    sql = (
        f"WITH RECURSIVE chain(id, parent_id, depth) AS ("
        f"SELECT id, parent_id, 1 FROM {table} WHERE id = %s "
        f"UNION ALL SELECT n.id, n.parent_id, c.depth + 1 FROM {table} n JOIN chain c ON n.id = c.parent_id "
        f"WHERE c.depth < %s) SELECT id, depth FROM chain"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [network.parent_id, depth])
        depths = dict(cursor.fetchall())
    found = Network.objects.select_related("rating").in_bulk(list(depths))
    return [found[i] for i in sorted(depths, key=depths.__getitem__) if i in found]


def elo_columns(run: Run) -> dict[str, list[Any]]:
    """Every network of the run, oldest first, as columns: the Elo chart's data."""
    rows = (
        Network.objects.filter(run=run)
        .order_by("created_at", "id")
        .values_list(
            "name",
            "rating__elo",
            "rating__elo_se",
            "rating__games",
            "rows_seen",
            "created_at",
            "state",
            "released",
            "parent__name",
            "size_name",
        )
    )
    columns: dict[str, list] = {
        k: [] for k in ("name", "elo", "se", "games", "rows", "time", "state", "released", "parent", "size")
    }
    for name, elo_, se, games, rows_seen, created, state, released, parent, size in rows:
        for key, value in (
            ("name", name),
            ("elo", None if elo_ is None else round(elo_, 1)),
            ("se", None if se is None else round(se, 1)),
            ("games", games or 0),
            ("rows", rows_seen),
            ("time", int(created.timestamp())),
            ("state", state),
            ("released", released),
            ("parent", parent),
            ("size", size),
        ):
            columns[key].append(value)
    return columns


def anchor_lines(run: Run) -> list[dict[str, Any]]:
    """The run's rated anchors (GNU Go at a level), weakest first: the Elo chart's lines."""
    return [
        {
            "name": name,
            "elo": None if elo_ is None else round(elo_, 1),
            "se": None if se is None else round(se, 1),
            "games": games,
        }
        for name, elo_, se, games in AnchorRating.objects.filter(run=run)
        .order_by("elo", "anchor__level")
        .values_list("anchor__name", "elo", "elo_se", "games")
    ]


def ranking(run: Run, since: datetime | None, state: RunTally) -> list[tuple[int, tallies.Counts]]:
    """The run's active contributors since ``since`` (None: ever) with their counts, most rows first
    (then most games, then the oldest account)."""
    counts = tallies.per_user(run, since, state=state)
    return sorted(counts.items(), key=lambda item: (-item[1].rows, -item[1].games, item[0]))
