"""The health check: are the database and the file storage there and usable?"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

from django.core.files.storage import FileSystemStorage, Storage, default_storage
from django.db import connection
from django.http import HttpRequest, JsonResponse

log = logging.getLogger(__name__)


def storage_problem(storage: Storage) -> str | None:
    """What keeps ``storage`` from taking files, or None when it is fine. Local storage: its folder
    must exist (the server makes it at start; a folder gone later is a disk unmounted or a path
    changed) and take a file: a probe file is written and deleted, which a read-only disk or wrong
    owner refuses. Object storage must answer a lookup. The answer is short (the endpoint is public);
    the log says which folder and why."""
    if isinstance(storage, FileSystemStorage):
        folder = Path(storage.location)
        if not folder.is_dir():
            log.warning("health check: the storage folder %s does not exist", folder)
            return "folder missing"
        try:
            fd, probe = tempfile.mkstemp(prefix=".healthz.", suffix=".tmp", dir=folder)
            os.close(fd)
            os.unlink(probe)
        except OSError as e:
            log.warning("health check: the storage folder %s takes no files: %s", folder, e)
            return f"folder not writable: {type(e).__name__}"
        return None
    try:
        storage.exists("healthz")
    except Exception as e:
        log.warning("health check: storage unreachable: %s", e)
        return f"unreachable: {type(e).__name__}"
    return None


def healthz(request: HttpRequest) -> JsonResponse:
    """Database and storage: 200 when both are fine, 503 otherwise."""
    checks = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = "ok"
    except Exception as e:
        log.warning("health check: database unreachable: %s", e)
        checks["database"] = f"unreachable: {type(e).__name__}"
    checks["storage"] = storage_problem(default_storage) or "ok"
    ok = all(v == "ok" for v in checks.values())
    return JsonResponse({"status": "ok" if ok else "failing", **checks}, status=200 if ok else 503)
