"""The audit's records: each contributor's scores over time (one ``AuditScore`` per contributor, run,
network and audit, and one per contributor and audit for its rating games), and quarantines of
accounts (their games leave the training window and the ratings while one is in force; lifting it
brings them back)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class AuditScore(models.Model):
    class Verdict(models.TextChoices):
        OK = "ok", "consistent with the network"
        FLAGGED = "flagged", "flagged"
        TOO_FEW = "too_few", "too few rows to judge"
        ERROR = "error", "could not be evaluated"

    class Kind(models.TextChoices):
        ROWS = "rows", "self-play rows against the network"
        RATING = "rating", "rating games against the other accounts'"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="audit_scores")
    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="audit_scores")
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.ROWS)
    network = models.ForeignKey(
        "networks.Network",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="audit_scores",
        help_text="the network whose rows were evaluated (none for rating games)",
    )
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    games = models.PositiveIntegerField(default=0, help_text="games the rows were sampled from, or rating games")
    rows = models.PositiveIntegerField(default=0, help_text="rows evaluated")
    statistics = models.JSONField(default=dict, help_text="the contributor's figures (means over the sample)")
    population = models.JSONField(default=dict, help_text="median, MAD and size of the contributors compared")
    verdict = models.CharField(max_length=16, choices=Verdict.choices)
    evidence = models.JSONField(
        default=list, blank=True, help_text="each statistic beyond its threshold: value, threshold, kind, sample"
    )
    examples = models.JSONField(
        default=list, blank=True, help_text="the sampled rows that agree least, or the rating games' pairs"
    )
    message = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["verdict", "created_at"], name="audit_verdict_created"),
            models.Index(fields=["user", "created_at"], name="audit_user_created"),
        ]

    def __str__(self) -> str:
        return f"{self.user} on {self.subject}: {self.verdict}"

    @property
    def subject(self) -> str:
        """What was audited: the network's rows, or the account's rating games."""
        return self.network.name if self.network is not None else "rating games"


class Quarantine(models.Model):
    """An account's games kept out of training (``server.training.window.counted_games``) from
    ``created_at`` until ``lifted_at``; the games stay stored."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="quarantines")
    reason = models.TextField()
    score = models.ForeignKey(
        AuditScore,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="quarantines",
        help_text="the flag it was decided on, if any",
    )
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    lifted_at = models.DateTimeField(null=True, blank=True)
    lifted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["user"], condition=models.Q(lifted_at__isnull=True), name="one_quarantine_in_force"
            )
        ]

    def __str__(self) -> str:
        return f"{self.user} quarantined {self.created_at:%Y-%m-%d}" + (" (lifted)" if self.lifted_at else "")


class AuditState(models.Model):
    """Per run: whether an audit is queued, and when the last one started (the rate bound)."""

    run = models.OneToOneField("runs.Run", on_delete=models.CASCADE, related_name="audit_state")
    pending = models.BooleanField(default=False)
    last_started_at = models.DateTimeField(null=True, blank=True)
