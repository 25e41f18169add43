"""Contributions counted fast: each contributor's games and rows since a moment, or of all time,
the run's, and each network's self-play games.

What the site counts (``counted``) is what training counts (``server.training.window.counted_games``):
games that are not disabled, of contributors whose accounts are active. Every number on the site
means that: the front page's, the leaderboard's, the networks'.

Days that are over are summed once into ``ContributionDay`` rows, each contributor's
``ContributionTotal``, each network's ``NetworkTotal`` and the run's sums on its ``RunTally`` (the
first page that needs them does it, or ``manage.py tally``); a count then adds those to the games
since the last counted day, read live through an index of the games by ``(run, created_at)`` that
holds what the counts need (or by ``(network, created_at)``). A day is counted a quarter of an hour
after it ended, so that uploads still being stored at midnight are in it.

Disabled games are never counted; a game disabled after its day was counted stays in that day until
``manage.py tally --rebuild``. A deactivated contributor's games leave the contributors' and the
run's numbers at once (they are kept per contributor and left out when read); the networks' counts
hold no contributors, so an account turned off or on has its runs counted again in the background
(``server.dashboard.services``).

The training window's share of each contributor (``count_window``) comes from the run's
``RunTally``, counted in the background by ``server.dashboard.tasks`` with the trainer's own
``training_window``: counting a window of a hundred thousand games takes seconds, too long for a page.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from server.accounts.models import User
from server.dashboard.models import ContributionDay, ContributionTotal, NetworkTotal, RunTally
from server.games.models import RatingGame, TrainingGame
from server.training.window import counted_games, training_window

log = logging.getLogger(__name__)

SETTLE = timedelta(minutes=15)


@dataclass
class Counts:
    training_games: int = 0
    rows: int = 0
    rating_games: int = 0

    def add(self, other: Counts) -> None:
        self.training_games += other.training_games
        self.rows += other.rows
        self.rating_games += other.rating_games

    @property
    def games(self) -> int:
        return self.training_games + self.rating_games


def inactive_users() -> list[int]:
    """The ids of deactivated accounts and of accounts in quarantine (``server.audit``): their games
    count nowhere (one query)."""
    return list(
        User.objects.filter(Q(is_active=False) | Q(quarantines__lifted_at__isnull=True, quarantines__isnull=False))
        .values_list("pk", flat=True)
        .distinct()
    )


def counted(model, *args, inactive=(), **filters):
    """The games of ``model`` (TrainingGame or RatingGame) the site counts, filtered further by
    ``args`` and ``filters``: not disabled, not played by the ``inactive`` accounts (the ids
    ``inactive_users()`` gives; left out without a join)."""
    games = model.objects.filter(*args, disabled=False, **filters)
    return games.exclude(user_id__in=list(inactive)) if inactive else games


def midnight(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def _settled_day(now: datetime) -> date:
    """The first day that is not over (by SETTLE) at ``now``."""
    return (now - SETTLE).astimezone(UTC).date()


def tally_state(run) -> RunTally:
    """The run's tally, with every day that is over counted (counting them first if needed)."""
    state, _ = RunTally.objects.get_or_create(run=run)
    target = _settled_day(timezone.now())
    if state.days_through is not None and state.days_through >= target:
        return state
    with transaction.atomic():
        state = RunTally.objects.select_for_update().get(run=run)
        if state.days_through is None or state.days_through < target:
            count_days(run, state, target)
    return state


def count_days(run, state: RunTally, end: date) -> int:
    """Count the days from ``state.days_through`` (None: the run's first game) up to ``end`` (not
    included): ContributionDay rows, added to the contributors' totals, the networks' and the run's;
    call with ``state`` locked. Returns how many ContributionDay rows it wrote."""
    start = state.days_through
    span = Q(created_at__lt=midnight(end))
    if start is not None:
        span &= Q(created_at__gte=midnight(start))
    per_day: dict[tuple[int, date], Counts] = {}
    day = TruncDate("created_at", tzinfo=UTC)
    # every contributor's (the deactivated are left out when read), each network's without them
    training = (
        counted(TrainingGame, span, run=run)
        .annotate(day=day)
        .values_list("user_id", "day")
        .annotate(n=Count("*"), rows=Sum("rows"))
        .order_by()
    )
    for user_id, d, n, rows in training:
        per_day.setdefault((user_id, d), Counts()).add(Counts(training_games=n, rows=rows or 0))
    per_network = dict(
        counted(TrainingGame, span, run=run, inactive=inactive_users())
        .values_list("network_id")
        .annotate(n=Count("*"))
        .order_by()
    )
    rating = (
        counted(RatingGame, span, run=run)
        .annotate(day=day)
        .values_list("user_id", "day")
        .annotate(n=Count("*"))
        .order_by()
    )
    for user_id, d, n in rating:
        per_day.setdefault((user_id, d), Counts()).add(Counts(rating_games=n))
    ContributionDay.objects.bulk_create(
        [
            ContributionDay(
                run=run,
                user_id=user_id,
                day=d,
                training_games=c.training_games,
                rows=c.rows,
                rating_games=c.rating_games,
            )
            for (user_id, d), c in per_day.items()
        ],
        batch_size=5000,
    )
    per_user: dict[int, Counts] = {}
    for (user_id, _), c in per_day.items():
        per_user.setdefault(user_id, Counts()).add(c)
    users = list(per_user)
    for k in range(0, len(users), 5000):
        for total in ContributionTotal.objects.filter(run=run, user_id__in=users[k : k + 5000]):
            per_user[total.user_id].add(Counts(total.training_games, total.rows, total.rating_games))
    # The new sums replace the old (the run's tally is locked: nobody else counts meanwhile).
    ContributionTotal.objects.bulk_create(
        [
            ContributionTotal(
                run=run, user_id=user_id, training_games=c.training_games, rows=c.rows, rating_games=c.rating_games
            )
            for user_id, c in per_user.items()
        ],
        update_conflicts=True,
        unique_fields=["run", "user"],
        update_fields=["training_games", "rows", "rating_games"],
        batch_size=5000,
    )
    networks = list(per_network)
    for k in range(0, len(networks), 5000):
        for network_total in NetworkTotal.objects.filter(network_id__in=networks[k : k + 5000]):
            per_network[network_total.network_id] += network_total.training_games
    NetworkTotal.objects.bulk_create(
        [NetworkTotal(network_id=network_id, run=run, training_games=n) for network_id, n in per_network.items()],
        update_conflicts=True,
        unique_fields=["network"],
        update_fields=["training_games"],
        batch_size=5000,
    )
    for c in per_day.values():
        state.training_games += c.training_games
        state.rows += c.rows
        state.rating_games += c.rating_games
    state.days_through = end
    state.save(update_fields=["days_through", "training_games", "rows", "rating_games"])
    log.info(
        "run %s: counted the contributions of %s to %s (%d contributor-days)",
        run.name,
        start or "the start",
        end,
        len(per_day),
    )
    return len(per_day)


def rebuild(run) -> int:
    """Count every finished day of the run again (after games were disabled, say)."""
    with transaction.atomic():
        RunTally.objects.get_or_create(run=run)
        state = RunTally.objects.select_for_update().get(run=run)
        ContributionDay.objects.filter(run=run).delete()
        ContributionTotal.objects.filter(run=run).delete()
        NetworkTotal.objects.filter(run=run).delete()
        state.days_through = None
        state.training_games = state.rows = state.rating_games = 0
        return count_days(run, state, _settled_day(timezone.now()))


def _spans(state: RunTally, since: datetime | None) -> tuple[Q | None, list[Q]]:
    """Which counted days to sum, and the spans of time whose games are counted live (each a range
    of the games' time index: one query each), for the time since ``since``."""
    if state.days_through is None:
        return None, [Q() if since is None else Q(created_at__gte=since)]
    counted_end = midnight(state.days_through)
    if since is None:
        return Q(day__lt=state.days_through), [Q(created_at__gte=counted_end)]
    if since >= counted_end:
        return None, [Q(created_at__gte=since)]
    first_whole = since.astimezone(UTC).date()
    if midnight(first_whole) < since:
        first_whole += timedelta(days=1)
    if first_whole >= state.days_through:
        return None, [Q(created_at__gte=since)]
    days = Q(day__gte=first_whole, day__lt=state.days_through)
    live = [Q(created_at__gte=counted_end)]
    if midnight(first_whole) > since:
        live.append(Q(created_at__gte=since, created_at__lt=midnight(first_whole)))
    return days, live


def per_user(
    run, since: datetime | None = None, user=None, state: RunTally | None = None, inactive=None
) -> dict[int, Counts]:
    """Each active contributor's counts (user id to Counts) since ``since`` (None: all time); only
    ``user``'s when given. ``inactive``: the deactivated accounts' ids (looked up when None). Six
    queries at most."""
    state = state or tally_state(run)
    if inactive is None:
        inactive = inactive_users()
    days, live = _spans(state, since)
    mine = {} if user is None else {"user": user}
    out: dict[int, Counts] = {}
    if days is not None:
        sums: Iterable[tuple[int, int | None, int | None, int | None]]
        if since is None:  # every counted day: the contributors' totals
            sums = ContributionTotal.objects.filter(run=run, **mine).values_list(
                "user_id", "training_games", "rows", "rating_games"
            )
        else:
            sums = (
                ContributionDay.objects.filter(days, run=run, **mine)
                .values_list("user_id")
                .annotate(t=Sum("training_games"), r=Sum("rows"), g=Sum("rating_games"))
                .order_by()
            )
        for user_id, t, r, g in sums:
            out.setdefault(user_id, Counts()).add(Counts(t or 0, r or 0, g or 0))
    for span in live:
        training = (
            counted(TrainingGame, span, run=run, **mine)
            .values_list("user_id")
            .annotate(n=Count("*"), r=Sum("rows"))
            .order_by()
        )
        for user_id, n, r in training:
            out.setdefault(user_id, Counts()).add(Counts(training_games=n, rows=r or 0))
        rating = counted(RatingGame, span, run=run, **mine).values_list("user_id").annotate(n=Count("*")).order_by()
        for user_id, n in rating:
            out.setdefault(user_id, Counts()).add(Counts(rating_games=n))
    for user_id in inactive:
        out.pop(user_id, None)
    return out


def totals(run, since: datetime | None = None, state: RunTally | None = None, inactive=None) -> Counts:
    """The run's counts since ``since`` (None: all time), every active contributor together.
    ``inactive``: the deactivated accounts' ids (looked up when None)."""
    state = state or tally_state(run)
    if inactive is None:
        inactive = inactive_users()
    days, live = _spans(state, since)
    out = Counts()
    if days is not None:
        if since is None:  # the run's sums, less those of the deactivated
            out.add(Counts(state.training_games, state.rows, state.rating_games))
            if inactive:
                s = ContributionTotal.objects.filter(run=run, user_id__in=list(inactive)).aggregate(
                    t=Sum("training_games"), r=Sum("rows"), g=Sum("rating_games")
                )
                out.add(Counts(-(s["t"] or 0), -(s["r"] or 0), -(s["g"] or 0)))
        else:
            s = (
                ContributionDay.objects.filter(days, run=run)
                .exclude(user_id__in=list(inactive))
                .aggregate(t=Sum("training_games"), r=Sum("rows"), g=Sum("rating_games"))
            )
            out.add(Counts(s["t"] or 0, s["r"] or 0, s["g"] or 0))
    for span in live:
        s = counted(TrainingGame, span, run=run, inactive=inactive).aggregate(n=Count("*"), r=Sum("rows"))
        out.add(Counts(training_games=s["n"], rows=s["r"] or 0))
        out.add(Counts(rating_games=counted(RatingGame, span, run=run, inactive=inactive).count()))
    return out


def network_games(run, networks: list[int], state: RunTally | None = None, inactive=None) -> dict[int, int]:
    """The counted self-play games of each of ``networks`` (ids of the run's networks): the counted
    days' sums and the games since, live (through the games' index by network and time). Two
    queries (three when ``inactive`` is None)."""
    state = state or tally_state(run)
    if inactive is None:
        inactive = inactive_users()
    out = dict.fromkeys(networks, 0)
    if not networks:
        return out
    live = counted(TrainingGame, network_id__in=networks, inactive=inactive)
    if state.days_through is not None:
        for network_id, n in NetworkTotal.objects.filter(network_id__in=networks).values_list(
            "network_id", "training_games"
        ):
            out[network_id] += n
        live = live.filter(created_at__gte=midnight(state.days_through))
    for network_id, n in live.values_list("network_id").annotate(n=Count("*")).order_by():
        out[network_id] += n
    return out


# --- the training window ---------------------------------------------------------------------------
def window_seconds() -> float:
    """How old the window's count may get before a page asks for a new one."""
    return settings.SENTE_WINDOW_TALLY_SECONDS


def count_window(run) -> RunTally:
    """Count each contributor's rows in the run's training window now and keep the count."""
    version = run.current_settings()
    state, _ = RunTally.objects.get_or_create(run=run)
    if version is None:
        return state
    window = training_window(run, version.settings.training)
    wanted = Counter(f.name for f in window.files)
    owners: dict[str, list[int]] = {}
    found = 0
    # One pass over the newest counted games (the window's, with the held-out ones among them), in
    # the window's order, stopping once every file of the window has its contributor. (Files are
    # named by their content: two games with the same rows share a name, and take it in turn.)
    games = counted_games(run).order_by("-created_at", "-id").values_list("npz", "user_id")
    for seen, (name, user_id) in enumerate(games.iterator(chunk_size=5000)):
        if found >= len(window.files) or seen > 2 * len(window.files) + 1000:
            break
        mine = owners.setdefault(name, [])
        if len(mine) < wanted.get(name, 0):
            mine.append(user_id)
            found += 1
    shares: Counter[int] = Counter()
    taken: Counter[str] = Counter()
    for f in window.files:
        mine = owners.get(f.name, [])
        if taken[f.name] < len(mine):
            shares[mine[taken[f.name]]] += f.rows
            taken[f.name] += 1
    RunTally.objects.filter(run=run).update(
        window_users={str(k): v for k, v in shares.items()},
        window_rows=window.rows,
        window_games=len(window.files),
        window_total_rows=window.total_rows,
        window_at=timezone.now(),
        window_queued_at=None,
    )
    state.refresh_from_db()
    log.info(
        "run %s: training window counted: %d games, %d rows, %d contributors",
        run.name,
        len(window.files),
        window.rows,
        len(shares),
    )
    return state
