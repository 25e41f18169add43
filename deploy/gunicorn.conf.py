"""gunicorn configuration of the Sente server: ``gunicorn -c deploy/gunicorn.conf.py``.

Every value can be set from the environment (``SENTE_BIND``, ``SENTE_WORKERS``, ...). Behind nginx
(see ``deploy/nginx``) nginx buffers slow clients' requests and answers, so a worker is only busy
while Django works (but for a trainer's network upload, passed on as it comes, and an export larger
than nginx's buffer, which the server cuts off at ``SENTE_EXPORT_SECONDS``); each worker runs two
threads (gthread) so that one request's waits on the database and the disk overlap another's work,
and connections are kept alive. Exports take at most SENTE_THREADS - 1 threads of a worker by default.
"""

import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

MANAGE = Path(__file__).resolve().parent.parent / "manage.py"
wsgi_app = "server.wsgi:application"
bind = os.environ.get("SENTE_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("SENTE_WORKERS", 2 * multiprocessing.cpu_count() + 1))
worker_class = os.environ.get("SENTE_WORKER_CLASS", "gthread")
threads = int(os.environ.get("SENTE_THREADS", 2))
timeout = int(os.environ.get("SENTE_TIMEOUT", 60))  # a network upload of up to 1 GB on a fast link
graceful_timeout = 30
# Load Django (and numba's compiled kernels) once in the master; workers start as forks of it.
preload_app = os.environ.get("SENTE_PRELOAD", "1") == "1"
keepalive = 5
# Recycle workers now and then, so that a slow leak cannot grow without bound.
max_requests = int(os.environ.get("SENTE_MAX_REQUESTS", 20000))
max_requests_jitter = max_requests // 10
# The proxy in front may say who the client is (X-Forwarded-For) and that it came over https.
forwarded_allow_ips = os.environ.get("SENTE_FORWARDED_ALLOW_IPS", "127.0.0.1")
accesslog = os.environ.get("SENTE_ACCESS_LOG", "-") or None  # empty: no access log (nginx keeps one)
errorlog = os.environ.get("SENTE_ERROR_LOG", "-")
loglevel = os.environ.get("SENTE_LOG_LEVEL", "info").lower()
limit_request_line = 8190
limit_request_fields = 100


def _warm_up(server) -> None:
    """Fill numba's cache with the web's kernels in one process before any worker starts, so that no
    worker compiles one, or writes the cache, while it serves (server/operations/warmup.py). A preloaded master
    did it itself when it loaded the application (server/wsgi.py), and its workers are forks that
    have them; without ``preload_app``, ``manage.py warm_up --web`` does it apart from the master
    (which imports none of the application, so that a reload's new workers load the new code) and
    each worker then loads the kernels from the cache. ``SENTE_WARM_UP=0`` leaves it out."""
    if os.environ.get("SENTE_WARM_UP", "1") != "1" or server.cfg.preload_app:
        return
    subprocess.run([sys.executable, str(MANAGE), "warm_up", "--web"], cwd=MANAGE.parent, check=True)


def on_starting(server) -> None:
    _warm_up(server)


def on_reload(server) -> None:  # SIGHUP: new workers with the code as it is now
    _warm_up(server)
