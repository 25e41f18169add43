from __future__ import annotations

import uuid
from datetime import timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models
from django.utils import timezone

if TYPE_CHECKING:
    from server.networks.models import Network


class Task(models.Model):
    class Kind(models.TextChoices):
        SELFPLAY = "selfplay", "self-play"
        RATING = "rating", "rating games"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    run = models.ForeignKey("runs.Run", on_delete=models.PROTECT, related_name="tasks")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="tasks")
    network = models.ForeignKey(
        "networks.Network",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="selfplay_tasks",
        help_text="self-play: the network to play",
    )
    network_a = models.ForeignKey(
        "networks.Network",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="rating_tasks_a",
        help_text="rating: one side",
    )
    network_b = models.ForeignKey(
        "networks.Network",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="rating_tasks_b",
        help_text="rating: the other side",
    )
    settings_version = models.ForeignKey("runs.RunSettingsVersion", on_delete=models.PROTECT, related_name="tasks")
    games = models.PositiveIntegerField()
    games_received = models.PositiveIntegerField(default=0)
    client_version = models.CharField(max_length=16)
    client_build = models.CharField(
        max_length=16, blank=True, default="", help_text="the hash of the client's search and data code (client.build)"
    )
    client_instance_id = models.CharField(max_length=64)
    # What the client said of its machine when it asked (the account's machines page and the totals
    # by device model read them; the client's own figures, bounded, not verified).
    machine_name = models.CharField(max_length=64, blank=True, default="")
    device_model = models.CharField(max_length=64, blank=True, default="")
    evals_per_second = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["user", "created_at"], name="task_user_created"),
            models.Index(fields=["run", "created_at"], name="task_run_created"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(games_received__lte=models.F("games")), name="task_games_received_within_games"
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} task {self.id} for {self.user}"

    def accepts_until(self):
        """The last moment a game of this task is taken."""
        return self.expires_at + timedelta(seconds=settings.SENTE_TASK_GRACE_SECONDS)

    def networks(self) -> list[Network]:
        """The network a self-play task plays, or both sides of a rating task's match."""
        wanted = [self.network] if self.kind == self.Kind.SELFPLAY else [self.network_a, self.network_b]
        networks = [n for n in wanted if n is not None]
        if len(networks) != len(wanted):
            raise ValueError(f"{self.kind} task {self.id} lacks a network of its kind")
        return networks
