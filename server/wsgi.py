"""WSGI entry point (gunicorn server.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")
application = get_wsgi_application()

if os.environ.get("SENTE_WARM_UP", "1") == "1":
    # Load the compiled kernels the web's requests use now: gunicorn loads this module once and forks
    # its workers from it (preload_app), so none of them compiles one, or writes numba's cache, while
    # it serves (server.operations.warmup).
    from server.operations import warmup

    warmup.web()
