"""The networks a Go player asks for by what they are rather than by name: the strongest one of a run
(as KataGo's server picks its "strongest confidently-rated network") and the newest released one.

The strongest network is the accepted network, with a file, whose Elo has the highest lower bound of
its 95% interval (``elo - 1.96 se``) among those with at least the run's
``gating.strongest_min_games`` rating games: a network rated on a few lucky games does not displace
one known to be strong. Ties go to the higher Elo, then to the newer network. A rolled-back network is
no longer accepted, so the pick moves on when one is rolled back.
"""

from __future__ import annotations

from django.db.models import ExpressionWrapper, F, FloatField, QuerySet

from common.elo import Z95
from server.networks.models import ALIASES, Network
from server.refusals import NotFound
from server.runs.models import Run


def lower_bound(elo: float | None, se: float | None) -> float | None:
    """The lower end of a rating's 95% interval (None without a rating)."""
    if elo is None or se is None:
        return None
    return elo - Z95 * se


def strongest_min_games(run: Run) -> int:
    version = run.current_settings()
    if version is None:
        from common.settings import GatingSettings

        return GatingSettings().strongest_min_games
    return version.settings.gating.strongest_min_games


def strongest(run: Run, min_games: int | None = None) -> Network | None:
    """The run's strongest network (see the module's docstring), or None while no network qualifies."""
    if min_games is None:
        min_games = strongest_min_games(run)
    bound = ExpressionWrapper(F("rating__elo") - Z95 * F("rating__elo_se"), output_field=FloatField())
    return (
        _with_files(Network.objects.filter(run=run, state=Network.State.ACCEPTED))
        .filter(rating__games__gte=min_games, rating__elo__isnull=False, rating__elo_se__isnull=False)
        .alias(bound=bound)
        .order_by("-bound", "-rating__elo", "-created_at", "-id")
        .select_related("run", "rating", "katago_file")
        .first()
    )


def newest_released(run: Run | None = None) -> Network | None:
    """The newest released network (of ``run``, or of any run)."""
    qs = _with_files(Network.objects.filter(released=True))
    if run is not None:
        qs = qs.filter(run=run)
    return qs.select_related("run", "rating", "katago_file").order_by("-created_at", "-id").first()


def by_alias(alias: str, run: Run | None) -> Network | None:
    """``strongest`` (of ``run``) or ``released`` (the newest released, of ``run`` if given)."""
    if alias == "strongest":
        return strongest(run) if run is not None else None
    if alias == "released":
        return newest_released(run)
    raise ValueError(f"{alias!r}: expected one of {', '.join(ALIASES)}")


def _with_files(qs: QuerySet[Network]) -> QuerySet[Network]:
    return qs.filter(is_random=False).exclude(file="")


def picked(alias: str, run_name: str | None) -> tuple[Network, Run | None]:
    """The network a stable link names (``strongest`` or ``released``) of the run called ``run_name``
    or, without one, of the current run (for ``strongest``) or of any run (for ``released``), with
    that run; NotFound with the reason when there is none."""
    if run_name:
        run = Run.objects.filter(name=run_name).first()
        if run is None:
            raise NotFound(f"there is no run named {run_name!r}", code="not_found", field="run")
    else:
        run = Run.objects.current() if alias == "strongest" else None
    network = by_alias(alias, run)
    if network is not None:
        return network, run
    if alias == "released":
        where = f"of run {run.name} " if run is not None else ""
        raise NotFound(f"no network {where}is released yet", code="no_network")
    if run is None:
        raise NotFound("there is no active run to pick the strongest network of", code="no_network")
    raise NotFound(
        f"no accepted network of run {run.name} has {strongest_min_games(run)} rating games yet, the "
        "games the strongest network needs (its gating.strongest_min_games)",
        code="no_network",
    )
