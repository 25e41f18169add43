"""``manage.py prune``: delete the rows past their retention (the daily job runs it)."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from server.distribution.retention import prune_tasks
from server.games.retention import prune_refusals


class Command(BaseCommand):
    help = (
        "Delete the refused uploads older than SENTE_REFUSAL_RETENTION_DAYS, and the tasks whose games stopped "
        "being taken more than SENTE_TASK_RETENTION_DAYS ago and that no game names; in batches, each its own "
        "transaction. Running it again deletes nothing more."
    )

    def add_arguments(self, parser):
        parser.add_argument("--batch-size", type=int, default=2000, help="rows per transaction (default 2000)")

    def handle(self, *args, **options):
        batch = options["batch_size"]
        if batch < 1:
            raise CommandError(f"--batch-size {batch}: must be at least 1")
        now = timezone.now()
        days = settings.SENTE_RETENTION_DAYS
        refusals = prune_refusals(now - timedelta(days=days["refusals"]), batch)
        self.stdout.write(f"deleted {refusals} refused upload(s) older than {days['refusals']} days")
        tasks = prune_tasks(now - timedelta(days=days["tasks"]), batch)
        self.stdout.write(
            f"deleted {tasks} task(s) with no game whose games stopped being taken more than {days['tasks']} days ago"
        )
