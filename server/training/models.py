"""What the trainer tells the server: one row per network architecture trained on a run's data.

A run trains one architecture at a time, the ``current`` line, whose exports become the run's
candidate networks; while a larger one catches up (the paper's progressive sizes, section 4.6) it is
trained alongside on the same data as the ``next`` line, and takes over once its loss on held-out
rows is lower; the overtaken line is ``retired``. A line's sample budget counts the rows the run
received since the line began (``rows_at_start``: 0 for the line the run started with), so a next
line trains alongside from when it begins rather than on the whole backlog (Table 3 of the paper:
the 10-block net began when the 6-block one had 70M samples and overtook it 30M samples later with
20M of its own). The trainer keeps its row up to date (status,
samples, the window, the last losses), which is what the run's page and API show.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class TrainingLine(models.Model):
    class Role(models.TextChoices):
        CURRENT = "current", "current: its exports are the run's candidates"
        NEXT = "next", "next: trained alongside, takes over once better"
        RETIRED = "retired", "retired: overtaken"

    class Status(models.TextChoices):
        IDLE = "idle", "idle"
        TRAINING = "training", "training"
        EXPORTING = "exporting", "exporting"
        STOPPED = "stopped", "stopped"

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="training_lines")
    architecture = models.CharField(max_length=32, help_text="a named size, e.g. b6c96")
    role = models.CharField(max_length=16, choices=Role.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.IDLE)
    status_note = models.CharField(max_length=200, blank=True, help_text="why it is idle, or what it does")
    samples = models.BigIntegerField(default=0, help_text="training samples the network has seen")
    rows_total = models.BigIntegerField(default=0, help_text="rows of the run counted at the last look")
    rows_at_start = models.BigIntegerField(
        default=0, help_text="rows of the run counted when the line began; its sample budget counts the rows since"
    )
    window_rows = models.BigIntegerField(default=0, help_text="rows of the training window in use")
    losses = models.JSONField(default=dict, blank=True, help_text="the last logged training losses, per head")
    validation = models.JSONField(default=dict, blank=True, help_text="losses on held-out rows at the last export")
    last_export = models.ForeignKey(
        "networks.Network", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    exports = models.PositiveIntegerField(default=0)
    host = models.CharField(max_length=100, blank=True, help_text="the machine training it")
    started_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["run", "architecture"], name="training_line_unique")]

    def __str__(self) -> str:
        return f"{self.run.name}: {self.architecture} ({self.role})"

    @property
    def loss_items(self) -> list[tuple[str, float]]:
        """The numeric logged losses as (head, value), by head."""
        return sorted((k, v) for k, v in (self.losses or {}).items() if isinstance(v, (int, float)))
