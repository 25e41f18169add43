"""What the dashboard keeps so that its pages stay fast with millions of games.

- ``ContributionDay``: each contributor's games and rows of one day (UTC) of a run. A day is counted
  once it is over (``server.dashboard.tallies``); the pages add the games since then, counted live.
  Counting a million games on every view of the leaderboard would take most of a second; summing
  these rows takes milliseconds.
- ``ContributionTotal``: each contributor's sums of all the counted days of a run (the all-time
  leaderboard reads one row per contributor, however long the run).
- ``RunTally``: per run, the first day not counted yet, the run's sums of the counted days, and the
  last count of each contributor's rows in the training window (made in the background:
  ``server.dashboard.tasks``).
- ``NetworkTotal``: each network's self-play games of the counted days (the network pages add the
  games since then): the current network plays hundreds of thousands of games, too many to count on
  every view of the networks list.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ContributionDay(models.Model):
    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    day = models.DateField(help_text="UTC")
    training_games = models.PositiveIntegerField(default=0)
    rows = models.BigIntegerField(default=0, help_text="training rows of the day's self-play games")
    rating_games = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "day", "user"], name="contribution_day_unique")]
        indexes = [models.Index(fields=["run", "user", "day"], name="contribution_run_user_day")]

    def __str__(self) -> str:
        return f"{self.user_id} on {self.day}: {self.training_games} games, {self.rows} rows"


class ContributionTotal(models.Model):
    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    training_games = models.PositiveIntegerField(default=0)
    rows = models.BigIntegerField(default=0)
    rating_games = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "user"], name="contribution_total_unique")]

    def __str__(self) -> str:
        return f"{self.user_id}: {self.training_games} games, {self.rows} rows"


class RunTally(models.Model):
    run = models.OneToOneField("runs.Run", primary_key=True, on_delete=models.CASCADE, related_name="+")
    days_through = models.DateField(
        null=True, blank=True, help_text="days before this one are in ContributionDay (null: none yet)"
    )
    training_games = models.BigIntegerField(default=0, help_text="self-play games of the counted days")
    rows = models.BigIntegerField(default=0, help_text="training rows of the counted days")
    rating_games = models.BigIntegerField(default=0, help_text="rating games of the counted days")
    window_users = models.JSONField(
        default=dict, blank=True, help_text="rows of each contributor (by user id) in the training window"
    )
    window_rows = models.BigIntegerField(default=0)
    window_games = models.PositiveIntegerField(default=0)
    window_total_rows = models.BigIntegerField(default=0, help_text="rows the run counted when the window was made")
    window_at = models.DateTimeField(null=True, blank=True, help_text="when the window was last counted")
    window_queued_at = models.DateTimeField(null=True, blank=True, help_text="when a count was last asked for")

    def __str__(self) -> str:
        return f"{self.run_id}: days through {self.days_through}, window at {self.window_at}"


class NetworkTotal(models.Model):
    network = models.OneToOneField("networks.Network", primary_key=True, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="+")
    training_games = models.PositiveIntegerField(default=0, help_text="counted self-play games of the counted days")

    def __str__(self) -> str:
        return f"{self.network_id}: {self.training_games} games"
