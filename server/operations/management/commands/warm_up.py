"""``manage.py warm_up``: fill numba's cache with the server's kernels before its processes start."""

from __future__ import annotations

import os
import time

from django.core.management.base import BaseCommand

from server.operations import warmup


class Command(BaseCommand):
    help = (
        "Compile (or load) every numba kernel the web server and the background worker run, into numba's "
        "cache (NUMBA_CACHE_DIR, else __pycache__ beside the modules), so that they only load it. Run it in one "
        "process before the servers start (the Dockerfile and the sente-web unit do): several processes "
        "filling the cache at once can corrupt it."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument(
            "--web", action="store_true", help="only the web server's kernels (gunicorn's master runs this)"
        )

    def handle(self, *args, **options):
        start = time.monotonic()
        warmup.web()
        if not options["web"]:
            warmup.background()
        where = os.environ.get("NUMBA_CACHE_DIR") or "__pycache__ beside the modules"
        self.stdout.write(f"numba's kernels ready in {where} ({time.monotonic() - start:.1f} s)")
