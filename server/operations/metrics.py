"""Prometheus metrics (``GET /metrics``), read from the database when scraped.

Everything the server does is recorded in rows (tasks, games, refused uploads, networks, the
trainer's lines, the background queue), so every web process answers the same numbers without a
shared in-memory registry. The figures are cached for ``SENTE_METRICS_SECONDS`` (default 15), so a
scrape costs a handful of indexed queries at most that often. With ``SENTE_METRICS_TOKEN`` set, a
scrape must send ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import hmac

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Sum
from django.http import HttpResponse
from django.utils import timezone
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

CACHE_KEY = "sente:metrics"


def _families() -> list:
    from django_tasks_db.models import DBTaskResult

    from server.distribution.models import Task
    from server.games.models import RatingGame, TrainingGame, UploadRefusal
    from server.networks.models import Network
    from server.runs.models import Run
    from server.training.models import TrainingLine

    runs = dict(Run.objects.values_list("pk", "name"))
    tasks = CounterMetricFamily("sente_tasks", "Tasks handed out", labels=["run", "kind"])
    for run, kind, n in Task.objects.values_list("run", "kind").annotate(n=Count("id")).order_by():
        tasks.add_metric([runs.get(run, "?"), kind], n)
    training = CounterMetricFamily("sente_training_games", "Self-play games stored", labels=["run"])
    rows = CounterMetricFamily("sente_training_rows", "Training rows stored", labels=["run"])
    for run, n, total in TrainingGame.objects.values_list("run").annotate(n=Count("id"), rows=Sum("rows")).order_by():
        training.add_metric([runs.get(run, "?")], n)
        rows.add_metric([runs.get(run, "?")], total or 0)
    rating = CounterMetricFamily("sente_rating_games", "Rating games stored", labels=["run"])
    for run, n in RatingGame.objects.values_list("run").annotate(n=Count("id")).order_by():
        rating.add_metric([runs.get(run, "?")], n)
    refused = CounterMetricFamily("sente_upload_refusals", "Uploads refused after reading", labels=["kind", "code"])
    for kind, code, n in UploadRefusal.objects.values_list("kind", "code").annotate(n=Count("id")).order_by():
        refused.add_metric([kind, code], n)
    networks = GaugeMetricFamily("sente_networks", "Networks by state", labels=["run", "state"])
    for run, state, n in Network.objects.values_list("run", "state").annotate(n=Count("id")).order_by():
        networks.add_metric([runs.get(run, "?"), state], n)
    queue = GaugeMetricFamily("sente_background_tasks", "Background tasks by status", labels=["status"])
    for status, n in DBTaskResult.objects.values_list("status").annotate(n=Count("id")).order_by():
        queue.add_metric([status], n)
    samples = CounterMetricFamily("sente_trainer_samples", "Training samples a line has trained",
                                  labels=["run", "architecture", "role"])
    status = GaugeMetricFamily("sente_trainer_status", "1 for a line's current status",
                               labels=["run", "architecture", "status"])
    loss = GaugeMetricFamily("sente_trainer_loss", "A line's last logged training loss per head",
                             labels=["run", "architecture", "head"])
    age = GaugeMetricFamily("sente_trainer_report_age_seconds", "Seconds since a line's trainer last reported",
                            labels=["run", "architecture"])
    now = timezone.now()
    for line in TrainingLine.objects.all():
        labels = [runs.get(line.run_id, "?"), line.architecture]
        samples.add_metric([*labels, line.role], line.samples)
        for choice in TrainingLine.Status.values:
            status.add_metric([*labels, choice], 1.0 if line.status == choice else 0.0)
        for head, value in (line.losses or {}).items():
            if isinstance(value, (int, float)):
                loss.add_metric([*labels, head], float(value))
        age.add_metric(labels, (now - line.updated_at).total_seconds())
    return [tasks, training, rows, rating, refused, networks, queue, samples, status, loss, age]


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
            response = HttpResponse("metrics need the scrape token (Authorization: Bearer ...)\n", status=401,
                                    content_type="text/plain")
            response["WWW-Authenticate"] = "Bearer"
            return response
    return HttpResponse(render(), content_type=CONTENT_TYPE_LATEST)
