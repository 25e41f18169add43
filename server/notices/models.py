"""Announcements set by staff, and the deliveries of the runs' webhooks."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone


class Announcement(models.Model):
    """A message shown on every page of the site and in the clients' status panels between
    ``starts_at`` and ``ends_at`` (none: until it is taken down)."""

    class Level(models.TextChoices):
        INFO = "info", "information"
        WARNING = "warning", "warning"

    message = models.CharField(max_length=500, help_text="plain text, one or two sentences")
    link = models.URLField(blank=True, help_text="where to read more (optional)")
    level = models.CharField(max_length=8, choices=Level.choices, default=Level.INFO)
    starts_at = models.DateTimeField(default=timezone.now)
    ends_at = models.DateTimeField(null=True, blank=True, help_text="empty: shown until taken down")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-starts_at", "-id"]
        indexes = [models.Index(fields=["starts_at", "ends_at"], name="announcement_when")]

    def __str__(self) -> str:
        return self.message[:60]

    def clean(self) -> None:
        super().clean()
        if self.ends_at is not None and self.starts_at is not None and self.ends_at <= self.starts_at:
            raise ValidationError({"ends_at": f"must be after the start ({self.starts_at:%Y-%m-%d %H:%M})"})


class WebhookDelivery(models.Model):
    """One post of a run's webhook about one event, with its attempts (retried with backoff).

    An attempt first claims the row (``claimed_until``: until its deadline has surely passed), so that
    of the worker, its retry and a sweep that find it due at once only one posts; a claim whose
    process ended with it runs out, and the next sweep attempts it again."""

    class Status(models.TextChoices):
        PENDING = "pending", "pending: to be posted or retried"
        DELIVERED = "delivered", "delivered"
        FAILED = "failed", "failed: given up after the last attempt, or refused"

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="webhook_deliveries")
    event = models.ForeignKey("ratings.NetworkEvent", null=True, blank=True, on_delete=models.SET_NULL)
    url = models.URLField(max_length=500)
    payload = models.JSONField()
    message_id = models.UUIDField(
        default=uuid.uuid4, unique=True, editable=False, help_text="the webhook-id of every attempt"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True, help_text="an attempt is under way until then")
    created_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "webhook deliveries"
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="webhook_delivery_due")]

    def __str__(self) -> str:
        return f"{self.payload.get('event', '?')} of {self.payload.get('network', '?')} to {self.url}"

    @property
    def webhook_id(self) -> str:
        """The ``webhook-id`` header (Standard Webhooks): the same for every attempt."""
        return f"msg_{self.message_id.hex}"
