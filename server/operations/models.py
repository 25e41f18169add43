"""Daily data exports: a run's games of one day as downloadable archives, for people who want the data.

An SGF archive is a zip of its own (``file``). An npz archive is the day's shards
(``server.games.shards``), the files the trainer reads: it has no file of its own, and lists them."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class DataExport(models.Model):
    class Kind(models.TextChoices):
        SGF = "sgf", "SGF files of the self-play and rating games (zip)"
        NPZ = "npz", "training rows of the self-play games, one npz per game (the day's shards: tars)"

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="exports")
    day = models.DateField(help_text="the UTC day the games were stored")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    file = models.FileField(max_length=200, blank=True, help_text="sgf: the zip (npz: none, its shards are its files)")
    shards = models.ManyToManyField(
        "games.Shard", blank=True, related_name="exports", help_text="npz: the day's shards, every game of the day"
    )
    size_bytes = models.BigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True, help_text="sgf: the zip's (npz: each shard has its own)")
    games = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-day", "run", "kind"]
        constraints = [models.UniqueConstraint(fields=["run", "day", "kind"], name="data_export_unique")]

    def __str__(self) -> str:
        return f"{self.run.name} {self.day} {self.kind}"

    @property
    def filename(self) -> str:
        """The SGF archive's download name (an npz archive's files: :meth:`shard_filename`)."""
        return f"{self.run.name}-{self.day:%Y-%m-%d}-{self.kind}.{'zip' if self.kind == self.Kind.SGF else 'tar'}"

    def shard_filename(self, shard) -> str:
        """The download name of one of an npz archive's shards: the day's, told apart by their content."""
        return f"{self.run.name}-{self.day:%Y-%m-%d}-npz-{shard.sha256[:12]}.tar"
