"""Prometheus metrics (``GET /metrics``), read from the database when scraped.

Everything the server does is recorded in rows (tasks, games, refused uploads, networks, the
trainer's lines, the background queue), so every web process answers the same numbers without a
shared in-memory registry. The figures are cached for ``SENTE_METRICS_SECONDS`` (default 15), so a
scrape computes them at most that often per web process. With ``SENTE_METRICS_TOKEN`` set, a scrape
must send ``Authorization: Bearer <token>``.

No query reads a table's whole history, so a scrape costs the same after a hundred million games:

- games and rows per run are the website's totals (``server.dashboard.tallies``): the days counted
  once, plus the games since the last counted day through the index of the games by run and time;
  they are gauges, since a game disabled (or a tally rebuilt) lowers them;
- tasks handed out, games uploaded and uploads refused are those of the last hour (gauges), read
  through the indexes of the tasks and games by run and time and of the refusals by time; a rate per
  minute is the figure / 60;
- the tasks still open (not expired, games still to come) are among those handed out within a
  task's lifetime (``SENTE_TASK_SECONDS``), read through the same index;
- networks and trainer lines are small tables; the background queue's finished results are deleted
  after 14 days (``manage.py prune_db_task_results``, run by the daily export job).
"""

from __future__ import annotations

import hmac
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, F, Sum
from django.http import HttpResponse
from django.utils import timezone
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

CACHE_KEY = "sente:metrics"
RECENT = timedelta(hours=1)


def _families() -> list:
    from django_tasks_db.models import DBTaskResult

    from server.dashboard import tallies
    from server.distribution.models import Task
    from server.games.models import RatingGame, TrainingGame, UploadRefusal
    from server.networks.models import Network
    from server.runs.models import Run
    from server.training.models import TrainingLine

    now = timezone.now()
    runs = dict(Run.objects.values_list("pk", "name"))
    tasks = GaugeMetricFamily("sente_tasks_last_hour", "Tasks handed out in the last hour", labels=["run", "kind"])
    training = GaugeMetricFamily(
        "sente_training_games", "Self-play games stored, as the website counts them", labels=["run"]
    )
    rows = GaugeMetricFamily("sente_training_rows", "Training rows of those games", labels=["run"])
    rating = GaugeMetricFamily("sente_rating_games", "Rating games stored, as the website counts them", labels=["run"])
    uploads = GaugeMetricFamily(
        "sente_uploads_last_hour", "Games uploaded and stored in the last hour", labels=["run", "kind"]
    )
    open_tasks = GaugeMetricFamily(
        "sente_open_tasks", "Tasks not expired with games still to come", labels=["run", "kind"]
    )
    open_games = GaugeMetricFamily(
        "sente_open_task_games", "Games the open tasks still have to bring", labels=["run", "kind"]
    )
    lifetime = timedelta(seconds=settings.SENTE_TASK_SECONDS)
    for run in Run.objects.all():
        per_kind = dict.fromkeys(Task.Kind.values, 0)
        per_kind.update(
            Task.objects.filter(run=run, created_at__gte=now - RECENT)
            .values_list("kind")
            .annotate(n=Count("*"))
            .order_by()
        )
        for kind, n in per_kind.items():
            tasks.add_metric([run.name, kind], n)
        for kind, model in (("training", TrainingGame), ("rating", RatingGame)):
            uploads.add_metric([run.name, kind], model.objects.filter(run=run, created_at__gte=now - RECENT).count())
        still_open = dict.fromkeys(Task.Kind.values, (0, 0))
        still_open.update(
            (kind, (n, games or 0))
            for kind, n, games in (
                Task.objects.filter(
                    run=run, created_at__gte=now - lifetime, expires_at__gt=now, games_received__lt=F("games")
                )
                .values_list("kind")
                .annotate(n=Count("*"), games=Sum(F("games") - F("games_received")))
                .order_by()
            )
        )
        for kind, (n, games) in still_open.items():
            open_tasks.add_metric([run.name, kind], n)
            open_games.add_metric([run.name, kind], games)
        counts = tallies.totals(run)
        training.add_metric([run.name], counts.training_games)
        rows.add_metric([run.name], counts.rows)
        rating.add_metric([run.name], counts.rating_games)
    refused = GaugeMetricFamily(
        "sente_upload_refusals_last_hour", "Uploads refused after reading, in the last hour", labels=["kind", "code"]
    )
    for kind, code, n in (
        UploadRefusal.objects.filter(created_at__gte=now - RECENT)
        .values_list("kind", "code")
        .annotate(n=Count("*"))
        .order_by()
    ):
        refused.add_metric([kind, code], n)
    networks = GaugeMetricFamily("sente_networks", "Networks by state", labels=["run", "state"])
    for run, state, n in Network.objects.values_list("run", "state").annotate(n=Count("id")).order_by():
        networks.add_metric([runs.get(run, "?"), state], n)
    queue = GaugeMetricFamily("sente_background_tasks", "Background tasks by status", labels=["status"])
    for status, n in DBTaskResult.objects.values_list("status").annotate(n=Count("id")).order_by():
        queue.add_metric([status], n)
    # A line's samples go back when it restarts from an earlier checkpoint: a gauge, not a counter.
    samples = GaugeMetricFamily(
        "sente_trainer_samples", "Training samples a line has trained", labels=["run", "architecture", "role"]
    )
    status = GaugeMetricFamily(
        "sente_trainer_status", "1 for a line's current status", labels=["run", "architecture", "status"]
    )
    loss = GaugeMetricFamily(
        "sente_trainer_loss", "A line's last logged training loss per head", labels=["run", "architecture", "head"]
    )
    age = GaugeMetricFamily(
        "sente_trainer_report_age_seconds",
        "Seconds since a line's trainer last reported",
        labels=["run", "architecture"],
    )
    for line in TrainingLine.objects.all():
        labels = [runs.get(line.run_id, "?"), line.architecture]
        samples.add_metric([*labels, line.role], line.samples)
        for choice in TrainingLine.Status.values:
            status.add_metric([*labels, choice], 1.0 if line.status == choice else 0.0)
        for head, value in (line.losses or {}).items():
            if isinstance(value, (int, float)):
                loss.add_metric([*labels, head], float(value))
        age.add_metric(labels, (now - line.updated_at).total_seconds())
    return [
        tasks,
        uploads,
        open_tasks,
        open_games,
        training,
        rows,
        rating,
        refused,
        networks,
        queue,
        samples,
        status,
        loss,
        age,
    ]


class _Collector:
    def __init__(self, families: list) -> None:
        self.families = families

    def collect(self):
        return iter(self.families)


def render() -> bytes:
    text = cache.get(CACHE_KEY)
    if text is None:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Collector(_families()))
        text = generate_latest(registry)
        cache.set(CACHE_KEY, text, settings.SENTE_METRICS_SECONDS)
    return text


def metrics(request):
    token = settings.SENTE_METRICS_TOKEN
    if token:
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(given.encode(), token.encode()):
            response = HttpResponse(
                "metrics need the scrape token (Authorization: Bearer ...)\n", status=401, content_type="text/plain"
            )
            response["WWW-Authenticate"] = "Bearer"
            return response
    return HttpResponse(render(), content_type=CONTENT_TYPE_LATEST)
