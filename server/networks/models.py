"""Networks of a run.

A network's file is stored by its sha256 (``networks/<sha256>.safetensors``), which the server
computes itself on upload. Every run starts with a random network (a uniform policy, no file) that
clients play without downloading anything.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone

from common.protocol import NETWORK_NAME_PATTERN

# The names of the stable links to a network (/networks/strongest/file, server.networks.selectors):
# no network may be called so.
ALIASES = ("strongest", "released")


def validate_not_alias(name: str) -> None:
    if name.lower() in ALIASES:
        raise ValidationError(
            f"{name!r} names a stable link ({', '.join(ALIASES)}), not a network: choose another name"
        )


class NetworkQuerySet(models.QuerySet["Network"]):
    def create_random(self, run) -> Network:
        return self.create(
            name=f"{run.name}-random",
            run=run,
            is_random=True,
            state=Network.State.ACCEPTED,
            notes="a uniform policy and an even value: the run's starting point",
        )

    def public(self) -> NetworkQuerySet:
        return self.select_related("run", "parent", "rating", "gating__opponent")


class Network(models.Model):
    class State(models.TextChoices):
        CANDIDATE = "candidate", "candidate: waiting for rating games"
        RATING = "rating", "rating: playing its gating games"
        ACCEPTED = "accepted", "accepted"
        REJECTED = "rejected", "rejected"
        RETIRED = "retired", "retired"

    name = models.CharField(
        max_length=64,
        unique=True,
        validators=[
            RegexValidator(
                f"^{NETWORK_NAME_PATTERN}$", "1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"
            ),
            validate_not_alias,
        ],
    )
    run = models.ForeignKey("runs.Run", on_delete=models.PROTECT, related_name="networks")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="children")
    is_random = models.BooleanField(default=False)
    architecture = models.JSONField(null=True, blank=True, help_text="the model config from the file's header")
    size_name = models.CharField(max_length=32, blank=True, help_text="e.g. b6c96")
    file = models.FileField(max_length=200, blank=True)
    size_bytes = models.BigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True, db_index=True)
    train_step = models.BigIntegerField(default=0, help_text="training samples the network has seen")
    rows_seen = models.BigIntegerField(default=0, help_text="distinct data rows its training window had received")
    state = models.CharField(max_length=16, choices=State.choices, default=State.CANDIDATE)
    released = models.BooleanField(default=False, help_text="offered to Go players on the releases page")
    release_notes = models.TextField(
        blank=True,
        help_text="for Go players, on the releases page: Markdown (no HTML), e.g. what changed and how it plays",
    )
    created_at = models.DateTimeField(default=timezone.now)
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    notes = models.TextField(blank=True)

    objects = NetworkQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["run", "state", "created_at"], name="network_run_state_created")]
        permissions = [
            ("upload_network", "Can upload networks (a training machine)"),
            ("decide_network", "Can accept, reject and roll back networks, and send them back to gating"),
            ("release_network", "Can release and retire networks"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def katago_exportable(self) -> bool:
        """Can the network be offered in KataGo's model format (``server.networks.katago``)?"""
        from common.architecture import ModelConfig, ModelConfigError
        from common.nn.katago_export import export_refusal

        if self.is_random or not self.file or not self.architecture:
            return False
        try:
            return export_refusal(ModelConfig.from_dict(self.architecture)) is None
        except ModelConfigError:
            return False


class NetworkCanary(models.Model):
    """A network's reference outputs on the canary positions (``common.canary``), computed on the
    server's CPU in fp32 in the background after the network was stored; clients hold their own
    evaluation against them before they upload games of the network."""

    network = models.OneToOneField(Network, on_delete=models.CASCADE, related_name="canary")
    version = models.PositiveIntegerField(help_text="the canary's version")
    fingerprint = models.CharField(max_length=64, help_text="sha256 of the canary positions and their inputs")
    file = models.FileField(max_length=200, help_text="the outputs (npz)")
    sha256 = models.CharField(max_length=64)
    size_bytes = models.BigIntegerField()
    seconds = models.FloatField(help_text="how long the evaluation took")
    computed_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"canary of {self.network.name}"


class NetworkKataGoFile(models.Model):
    """The network in KataGo's model format (``common.nn.katago_export``), for Go players who run
    KataGo itself: made by the background worker (``server.networks.katago``), queued when the
    network is accepted or released, or on its first download. A network KataGo's format cannot hold,
    or whose file is gone from the storage, keeps its row with the reason, so that it is said at once
    and never tried again; a build that failed otherwise waits longer after each failure."""

    class State(models.TextChoices):
        QUEUED = "queued", "queued: waiting for the background worker"
        BUILDING = "building", "building: a worker is making it"
        READY = "ready", "ready"
        REFUSED = "refused", "refused: it cannot be made (the reason)"

    network = models.OneToOneField(Network, on_delete=models.CASCADE, related_name="katago_file")
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED)
    refusal = models.TextField(blank=True, help_text="why the network cannot be exported (state refused)")
    version = models.PositiveIntegerField(null=True, blank=True, help_text="KataGo's model version of the file")
    file = models.FileField(max_length=200, blank=True, help_text="the .bin.gz file")
    sha256 = models.CharField(max_length=64, blank=True)
    size_bytes = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    queued_at = models.DateTimeField(default=timezone.now, help_text="when its making was last queued")
    started_at = models.DateTimeField(null=True, blank=True, help_text="when a worker took it")
    finished_at = models.DateTimeField(null=True, blank=True, help_text="when it was made or refused")
    failures = models.PositiveIntegerField(
        default=0, help_text="builds that failed in a row (the storage unreachable, say); each waits longer"
    )
    retry_at = models.DateTimeField(
        null=True, blank=True, help_text="after a failed build: not queued or taken again before this"
    )

    def __str__(self) -> str:
        return f"KataGo file of {self.network.name} ({self.state})"

    @property
    def ready(self) -> bool:
        return self.state == self.State.READY
