"""The health check: is the database and the file storage reachable?"""

from __future__ import annotations

import logging

from django.core.files.storage import default_storage
from django.db import connection
from django.http import HttpRequest, JsonResponse

log = logging.getLogger(__name__)


def healthz(request: HttpRequest) -> JsonResponse:
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
