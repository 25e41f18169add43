"""The health check: are the database and the file storage there and usable, and does the database's
schema match the code (every migration applied)?"""

from __future__ import annotations

import logging

from django.core.files.storage import default_storage
from django.db import connection
from django.http import HttpRequest, JsonResponse

from server.files import storage_problem

log = logging.getLogger(__name__)


_schema_current = False  # once every migration is applied, it stays so for this process's code


def schema_problem() -> str | None:
    """What the database lacks of the code's migrations (``manage.py migrate`` was not run after an
    update), or None. Once the schema is found current it is not looked at again: the code, and so
    its migrations, only change with a restart."""
    global _schema_current
    if _schema_current:
        return None
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if plan:
        names = ", ".join(f"{m.app_label}.{m.name}" for m, _ in plan[:3]) + (", ..." if len(plan) > 3 else "")
        log.warning("health check: %d migrations are not applied (%s): run manage.py migrate", len(plan), names)
        return f"{len(plan)} migration{'s' if len(plan) > 1 else ''} not applied"
    _schema_current = True
    return None


def healthz(request: HttpRequest) -> JsonResponse:
    """Database (reachable, its schema current) and storage: 200 when all are fine, 503 otherwise."""
    checks = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = "ok"
    except Exception as e:
        log.warning("health check: database unreachable: %s", e)
        checks["database"] = f"unreachable: {type(e).__name__}"
    if checks["database"] == "ok":
        try:
            checks["schema"] = schema_problem() or "ok"
        except Exception as e:
            log.warning("health check: the applied migrations could not be read: %s", e)
            checks["schema"] = f"unknown: {type(e).__name__}"
    checks["storage"] = storage_problem(default_storage) or "ok"
    ok = all(v == "ok" for v in checks.values())
    return JsonResponse({"status": "ok" if ok else "failing", **checks}, status=200 if ok else 503)
