"""The site's own pages: the front page and the health check."""

from __future__ import annotations

import logging

from django.core.files.storage import default_storage
from django.db import connection
from django.http import JsonResponse
from django.shortcuts import render

from server.runs.models import Run

log = logging.getLogger(__name__)


def home(request):
    run = Run.objects.current()
    network = run.selfplay_network() if run else None
    return render(request, "home.html", {"run": run, "network": network})


def healthz(request):
    """Database and storage reachability: 200 when both answer, 503 otherwise."""
    checks = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = "ok"
    except Exception as e:
        log.warning("health check: database unreachable: %s", e)
        checks["database"] = f"unreachable: {type(e).__name__}"
    try:
        default_storage.exists("healthz")
        checks["storage"] = "ok"
    except Exception as e:
        log.warning("health check: storage unreachable: %s", e)
        checks["storage"] = f"unreachable: {type(e).__name__}"
    ok = all(v == "ok" for v in checks.values())
    return JsonResponse({"status": "ok" if ok else "failing", **checks}, status=200 if ok else 503)
