"""Ratings of networks, as the last fit of their run's rating games left them (``server.ratings.fit``
does the fitting, ``server.ratings.service`` the storing)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class Rating(models.Model):
    """A network's Elo (its run's first network at 0), the standard error, and its rating games."""

    network = models.OneToOneField("networks.Network", primary_key=True, on_delete=models.CASCADE,
                                   related_name="rating")
    elo = models.FloatField(null=True, blank=True, help_text="null: not connected to the run's first network")
    elo_se = models.FloatField(null=True, blank=True, help_text="standard error of elo")
    games = models.PositiveIntegerField(default=0, help_text="rating games played")
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.network_id}: {self.elo}"


class RatingFit(models.Model):
    """The last fit of a run: when, over how many games, and how long it took."""

    run = models.OneToOneField("runs.Run", primary_key=True, on_delete=models.CASCADE, related_name="rating_fit")
    fitted_at = models.DateTimeField(default=timezone.now)
    games = models.PositiveIntegerField(default=0)
    networks = models.PositiveIntegerField(default=0)
    iterations = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(default=0.0)

    def __str__(self) -> str:
        return f"{self.run_id} fitted at {self.fitted_at:%Y-%m-%d %H:%M}"
