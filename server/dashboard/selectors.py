"""Every read of the website's pages: the run, its networks and their lineage, games as the lists
show them, the live numbers, the Elo chart's columns, the contributors' ranking and the releases.
The views parse the request, call these and render; they query nothing themselves."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.core.cache import cache
from django.db import connection
from django.db.models import Q, QuerySet
from django.utils import timezone

from common.elo import Z95
from server.accounts.models import User
from server.dashboard import tallies
from server.dashboard.models import RunTally
from server.games.models import RatingGame, TrainingGame
from server.networks.models import Network
from server.ratings.models import AnchorRating, NetworkEvent, Rating, RatingFit
from server.runs.models import Run
from server.training.models import TrainingLine

LIVE_SECONDS = 10  # how long the live numbers are kept in the cache (pages poll them)
SAMPLE_GAMES = 10  # of each kind on a network's page
NETWORK_FILTERS = {
    "all": Q(),
    "released": Q(released=True),
    "accepted": Q(state=Network.State.ACCEPTED),
    "candidates": Q(state__in=[Network.State.CANDIDATE, Network.State.RATING]),
    "rejected": Q(state=Network.State.REJECTED),
    "retired": Q(state=Network.State.RETIRED),
}
GAME_LIST_FIELDS = ("id", "created_at", "board_x_size", "board_y_size", "komi", "result", "moves", "user__username")


@dataclass(frozen=True)
class GameKind:
    """What the pages of one kind of game (self-play or rating) read."""

    model: type[TrainingGame] | type[RatingGame]
    what: str  # in messages: "there is no {what} 12"
    networks: tuple[str, ...]  # the network fields: both sides' for a rating game
    list_fields: tuple[str, ...]  # read for the lists besides GAME_LIST_FIELDS
    sgf: str  # the URL name of a game's SGF

    def of_network(self, network: Network) -> Q:
        q = Q()
        for field in self.networks:
            q |= Q(**{field: network})
        return q

    def listed(self, items):
        """The games as the lists show them, newest first (one query, whatever the page holds)."""
        return (
            items.select_related("user", *self.networks)
            .only(*GAME_LIST_FIELDS, *self.list_fields)
            .order_by("-created_at", "-id")
        )

    def games(self, run: Run, network: Network | None = None, user: User | None = None):
        """The run's games of this kind, or the network's (a rating game is a network's as black or as
        white), or the user's among them, as the lists show them."""
        items = self.model.objects.filter(self.of_network(network) if network else Q(run=run))
        if user is not None:
            items = items.filter(user=user)
        return self.listed(items)

    def game(self, pk: int):
        """The game with what its page shows (None: there is none)."""
        return (
            self.model.objects.select_related(*self.networks, "user", "settings_version", "run").filter(pk=pk).first()
        )

    def record(self, pk: int):
        """The game with only what its SGF's download needs (None: there is none)."""
        return self.model.objects.only("id", "sgf", "client_game_id").filter(pk=pk).first()


KINDS = {  # by the name the addresses and the templates use
    "training": GameKind(TrainingGame, "game", ("network",), ("rows", "network__name"), "game-sgf"),
    "rating": GameKind(
        RatingGame,
        "rating game",
        ("black_network", "white_network"),
        ("winner", "black_network__name", "white_network__name"),
        "rating-game-sgf",
    ),
}


def run_named(name: str) -> Run | None:
    return Run.objects.filter(name=name).first()


def current_run() -> Run | None:
    return Run.objects.current()


def front_page(run: Run, network_name: str | None) -> dict[str, Any]:
    """What the front page shows of the run besides its live numbers: the self-play network (by
    name, as the numbers give it), the training lines, the newest networks and the rating fit."""
    network = None
    if network_name:
        network = Network.objects.select_related("rating").filter(name=network_name).first()
    return {
        "network": network,
        "lines": list(TrainingLine.objects.filter(run=run).select_related("last_export").order_by("created_at", "id")),
        "newest": Network.objects.filter(run=run).select_related("rating").order_by("-created_at", "-id")[:5],
        "fit": rating_fit(run),
    }


def rating_fit(run: Run | None) -> RatingFit | None:
    return RatingFit.objects.filter(run=run).first() if run is not None else None


def networks_shown(run: Run, show: str) -> QuerySet[Network]:
    """The run's networks a filter of the networks' page keeps (``NETWORK_FILTERS``), newest first."""
    return (
        Network.objects.filter(NETWORK_FILTERS[show], run=run)
        .select_related("parent", "rating", "gating")
        .order_by("-created_at", "-id")
    )


def public_network(name: str) -> Network | None:
    return Network.objects.public().filter(name=name).first()


def network_named(name: str) -> Network | None:
    return Network.objects.select_related("run").filter(name=name).first()


def network_page(network: Network) -> dict[str, Any]:
    """What a network's page shows besides the network: its children, a sample of its games of each
    kind, its events and the run's anchors' ratings."""
    training, rating = KINDS["training"], KINDS["rating"]
    return {
        "children": list(network.children.select_related("rating").order_by("created_at", "id")),
        "games": list(training.games(network.run, network)[:SAMPLE_GAMES]),
        "rating_games": list(rating.games(network.run, network)[:SAMPLE_GAMES]),
        "events": list(NetworkEvent.objects.filter(network=network).order_by("created_at", "id")),
        "anchors": list(AnchorRating.objects.filter(run=network.run_id).select_related("anchor")),
    }


def contributor_named(name: str) -> User | None:
    """An active account by its name (a turned-off account is no contributor the site shows)."""
    return User.objects.filter(username=name, is_active=True).first()


def users_by_id(ids: list[int]) -> dict[int, User]:
    return User.objects.in_bulk(ids)


def released_networks() -> QuerySet[Network]:
    """Every released network, newest first, with what the releases page shows of it."""
    return (
        Network.objects.filter(released=True)
        .select_related("run", "rating", "katago_file")
        .order_by("-created_at", "-id")
    )


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
