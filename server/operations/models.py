"""Daily data exports: a run's games of one day as downloadable archives, for people who want the data."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class DataExport(models.Model):
    class Kind(models.TextChoices):
        SGF = "sgf", "SGF files of the self-play and rating games (zip)"
        NPZ = "npz", "training rows of the self-play games, one npz per game (tar)"

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="exports")
    day = models.DateField(help_text="the UTC day the games were stored")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    file = models.FileField(max_length=200)
    size_bytes = models.BigIntegerField(default=0)
    sha256 = models.CharField(max_length=64)
    games = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-day", "run", "kind"]
        constraints = [models.UniqueConstraint(fields=["run", "day", "kind"], name="data_export_unique")]

    def __str__(self) -> str:
        return f"{self.run.name} {self.day} {self.kind}"

    @property
    def filename(self) -> str:
        return f"{self.run.name}-{self.day:%Y-%m-%d}-{self.kind}.{'zip' if self.kind == self.Kind.SGF else 'tar'}"
