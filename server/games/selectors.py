"""Reads of the games: what an account has contributed."""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict

from django.db.models import Count, Max, Sum

from server.accounts.models import User
from server.distribution.models import Task
from server.games.models import RatingGame, TrainingGame


class Contributed(TypedDict):
    training_games: int
    rating_games: int
    training_rows: int
    tasks: int
    last_game_at: datetime | None


def contributed(user: User) -> Contributed:
    """The account's games (disabled ones too), training rows and tasks, and when its last game came."""
    training = TrainingGame.objects.filter(user=user).aggregate(n=Count("id"), rows=Sum("rows"), last=Max("created_at"))
    rating = RatingGame.objects.filter(user=user).aggregate(n=Count("id"), last=Max("created_at"))
    lasts = [t for t in (training["last"], rating["last"]) if t is not None]
    return {
        "training_games": training["n"],
        "rating_games": rating["n"],
        "training_rows": training["rows"] or 0,
        "tasks": Task.objects.filter(user=user).count(),
        "last_game_at": max(lasts) if lasts else None,
    }
