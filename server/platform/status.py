"""A run's state in one line: its games and rows, its networks, the gating under way and the trainer."""

from __future__ import annotations

from django.db.models import Count, Sum


def run_status(run) -> str:
    from server.games.models import RatingGame, TrainingGame
    from server.networks.models import Network
    from server.ratings.models import Gating
    from server.training.models import TrainingLine

    games = TrainingGame.objects.filter(run=run).aggregate(n=Count("id"), rows=Sum("rows"))
    rating_games = RatingGame.objects.filter(run=run).count()
    parts = [f"self-play {games['n']:,} games ({games['rows'] or 0:,} rows)", f"rating {rating_games:,} games"]
    network = run.selfplay_network()
    if network is not None:
        elo = getattr(getattr(network, "rating", None), "elo", None)
        parts.append(f"network {network.name}" + (f" ({elo:+.0f} Elo)" if elo is not None else ""))
    accepted = Network.objects.filter(run=run, state=Network.State.ACCEPTED, is_random=False).count()
    waiting = Network.objects.filter(run=run, state=Network.State.CANDIDATE).count()
    parts.append(f"{accepted} accepted, {waiting} waiting")
    gating = (
        Gating.objects.filter(candidate__run=run, decision="continue")
        .select_related("candidate")
        .order_by("started_at")
        .first()
    )
    if gating is not None:
        parts.append(
            f"gating {gating.candidate.name}: {gating.wins}-{gating.losses}"
            + (f" ({gating.draws} drawn)" if gating.draws else "")
        )
    for line in TrainingLine.objects.filter(run=run).exclude(role=TrainingLine.Role.RETIRED):
        parts.append(f"trainer {line.architecture}: {line.status}, {line.samples:,} samples")
    return " · ".join(parts)
