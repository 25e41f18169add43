"""A run and the versions of its settings document.

The document is :class:`common.settings.RunSettings` as JSON. It is never edited in place: a change
makes a new version, and every task and game records the version it used. The current run is the
newest active one.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from django.conf import settings as django_settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models, transaction
from django.utils import timezone

from common import __version__
from common.protocol import parse_version
from common.settings import RunSettings, SettingsError
from server.outbound import signing
from server.outbound.targets import validate_webhook_url

if TYPE_CHECKING:
    from server.networks.models import Network

BUILD_PATTERN = r"[0-9a-f]{16}"  # a client's build: the first 16 hex digits of its hash (client.build)


def validate_version(value: str) -> None:
    try:
        parse_version(value)
    except ValueError as e:
        raise ValidationError(str(e)) from None


def validate_builds(value: object) -> None:
    if not isinstance(value, list) or not all(isinstance(b, str) and re.fullmatch(BUILD_PATTERN, b) for b in value):
        raise ValidationError(
            f"{value!r}: expected a list of client builds, each 16 hex digits "
            "(python -m client --version shows a client's)"
        )


class RunQuerySet(models.QuerySet):
    def active(self) -> RunQuerySet:
        return self.filter(status=Run.Status.ACTIVE)

    def current(self) -> Run | None:
        return self.active().order_by("-created_at", "-id").first()


# What says what a run is and which clients it takes: the admin's form edits these, the API shows them.
RUN_FIELDS = ("name", "description", "status", "min_client_version", "max_client_version", "client_builds")


class Run(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active", "active: hands out work"
        PAUSED = "paused", "paused: no new work"
        FINISHED = "finished", "finished"

    name = models.CharField(
        max_length=32,
        unique=True,
        validators=[
            RegexValidator(
                r"^[a-z0-9][a-z0-9-]*$", "lower-case letters, digits and '-', starting with a letter or digit"
            )
        ],
    )
    description = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    min_client_version = models.CharField(
        max_length=16,
        default=__version__,
        validators=[validate_version],
        help_text="clients older than this are asked to upgrade (HTTP 426)",
    )
    max_client_version = models.CharField(
        max_length=16,
        blank=True,
        validators=[validate_version],
        help_text="clients newer than this are refused (HTTP 426); empty: no newest version",
    )
    client_builds = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_builds],
        help_text="the client builds the run takes (each 16 hex digits, as `python "
        "-m client --version` shows); empty: any build",
    )
    webhook_url = models.URLField(
        max_length=500,
        blank=True,
        validators=[validate_webhook_url],
        help_text="posted (JSON, signed) when a network is accepted, released or rolled back, e.g. a chat "
        "channel's incoming webhook; http or https to a public address; empty: none (docs/website.md)",
    )
    webhook_secret = models.CharField(
        max_length=100,
        blank=True,
        editable=False,
        help_text="the key the webhook's posts are signed with (Standard Webhooks), made when a URL is set",
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs) -> None:
        fields = kwargs.get("update_fields")
        if fields is None or "webhook_url" in fields:
            self.keep_webhook_secret(new=self.webhook_url_changed())
            if fields is not None:
                kwargs["update_fields"] = {*fields, "webhook_secret"}
        super().save(*args, **kwargs)

    def keep_webhook_secret(self, new: bool = False) -> None:
        """A signing secret while the run has a webhook URL (made when one is set, or anew with
        ``new``), none without one."""
        if not self.webhook_url:
            self.webhook_secret = ""
        elif new or not self.webhook_secret:
            self.webhook_secret = signing.new_secret()

    def webhook_url_changed(self) -> bool:
        """Whether the webhook URL about to be saved is another than the stored one: then its posts get
        a new secret, which the receiver at the old URL never saw (else it could sign for the new one)."""
        if self._state.adding or self.pk is None:
            return False
        stored = Run.objects.filter(pk=self.pk).values_list("webhook_url", flat=True).first()
        return stored is not None and stored != self.webhook_url

    def clean(self) -> None:
        super().clean()
        try:
            too_new = bool(self.max_client_version) and (
                parse_version(self.max_client_version) < parse_version(self.min_client_version)
            )
        except ValueError:
            return  # the fields' own validators say what is wrong
        if too_new:
            raise ValidationError(
                {
                    "max_client_version": f"{self.max_client_version} is older than the minimum "
                    f"version {self.min_client_version}"
                }
            )
        if isinstance(self.client_builds, list):
            self.client_builds = sorted(set(self.client_builds))

    @cached_property
    def _clients(self) -> tuple[tuple[int, int, int], tuple[int, int, int] | None, frozenset[str]]:
        return (
            parse_version(self.min_client_version),
            parse_version(self.max_client_version) if self.max_client_version else None,
            frozenset(self.client_builds or ()),
        )

    def clients_taken(self) -> dict:
        """The client versions and builds the run takes, as the API says them."""
        return {
            "min_client_version": self.min_client_version,
            "max_client_version": self.max_client_version or None,
            "client_builds": list(self.client_builds or []),
        }

    def client_refusal(self, version: str, build: str) -> str | None:
        """Why the run does not take a client of this version and build (None: it does), in words
        that tell the volunteer what to install."""
        least, most, builds = self._clients
        parsed = parse_version(version)
        if parsed < least:
            return (
                f"client version {version} is too old for run {self.name}, which needs {self.min_client_version} "
                "or newer: please upgrade the client"
            )
        if most is not None and parsed > most:
            return (
                f"client version {version} is newer than run {self.name} takes (versions "
                f"{self.min_client_version} to {self.max_client_version}): please install one of those"
            )
        if builds and build not in builds:
            what = f"build {build}" if build else "a client that names no build"
            return (
                f"client {version}, {what}, is not one run {self.name} takes (builds "
                f"{', '.join(sorted(builds))}): please upgrade the client to the release the project names"
            )
        return None

    def current_settings(self) -> RunSettingsVersion | None:
        """The newest settings version; None only for a run just made, before its first."""
        return self.settings_versions.order_by("-version").first()

    @transaction.atomic
    def set_settings(self, document: dict, user=None, note: str = "") -> RunSettingsVersion:
        """Make ``document`` the run's settings: validated, stored as a new version unless it equals
        the current one (then the current version is returned). SettingsError names a bad key. Under
        the gating rule ``none`` the networks that wait for gating are accepted in the same
        transaction (the ratings app listens for new versions: ``server.ratings.promotion``)."""
        settings = RunSettings.from_dict(document)
        canonical = settings.to_dict()
        current = RunSettingsVersion.objects.select_for_update().filter(run=self).order_by("-version").first()
        if current is not None and current.document == canonical:
            return current
        version = RunSettingsVersion.objects.create(
            run=self, version=(current.version + 1) if current else 1, document=canonical, created_by=user, note=note
        )
        transaction.on_commit(forget_state)
        return version

    def selfplay_network(self):
        """The network self-play uses: the newest of the run's accepted networks (a candidate plays
        only its gating games until it is accepted)."""
        from server.networks.models import Network

        return self.networks.filter(state=Network.State.ACCEPTED).order_by("-created_at", "-id").first()


class RunSettingsVersion(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="settings_versions")
    version = models.PositiveIntegerField()
    document = models.JSONField(help_text="the run's settings (common.settings.RunSettings) as JSON")
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(django_settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    note = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["run", "-version"]
        constraints = [models.UniqueConstraint(fields=["run", "version"], name="run_settings_version_unique")]

    def __str__(self) -> str:
        return f"{self.run.name} settings v{self.version}"

    @property
    def settings(self) -> RunSettings:
        """The document as settings (parsed once per version and process: versions never change)."""
        parsed = _PARSED.get(self.pk)
        if parsed is None:
            parsed = RunSettings.from_dict(self.document)
            if self.pk is not None:
                _PARSED[self.pk] = parsed
        return parsed


_PARSED: dict[int, RunSettings] = {}


@transaction.atomic
def create_run(
    name: str,
    document: dict | None = None,
    description: str = "",
    user=None,
    min_client_version: str | None = None,
    max_client_version: str = "",
    client_builds: list[str] | None = None,
) -> Run:
    """A new active run with its first settings version and its random network."""
    from server.networks.models import Network

    run = Run(
        name=name,
        description=description,
        max_client_version=max_client_version,
        client_builds=list(client_builds or []),
    )
    if min_client_version:
        run.min_client_version = min_client_version
    run.full_clean()
    run.save()
    try:
        run.set_settings(document or {}, user=user, note="initial settings")
    except SettingsError:
        raise
    Network.objects.create_random(run)
    transaction.on_commit(forget_state)
    return run


@dataclass(frozen=True)
class RunState:
    """What every task request needs: the current run, its settings version and its self-play network."""

    run: Run
    settings_version: RunSettingsVersion
    network: Network | None


_STATE: tuple[float, RunState | None] | None = None
_STATE_LOCK = threading.Lock()


def current_state() -> RunState | None:
    """The current run's state, read from the database at most every SENTE_RUN_STATE_SECONDS per
    process (so a new network or settings version reaches tasks within that time)."""
    global _STATE
    max_age = django_settings.SENTE_RUN_STATE_SECONDS
    now = time.monotonic()
    cached = _STATE
    if cached is not None and now - cached[0] < max_age:
        return cached[1]
    run = Run.objects.current()
    state = None
    if run is not None:
        version = run.current_settings()
        state = RunState(run, version, run.selfplay_network()) if version is not None else None
    with _STATE_LOCK:
        _STATE = (now, state)
    return state


def forget_state() -> None:
    """Make the next current_state() read the database (after this process changed the run)."""
    global _STATE
    with _STATE_LOCK:
        _STATE = None
