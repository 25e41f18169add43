"""Django settings of the Sente server, all from environment variables.

With no environment at all the server runs as the embedded default: SQLite and uploaded files in
a data folder (``SENTE_DATA_DIR``, default ``./sente-data`` beside the project), debug off, and a
secret key generated once and kept in that folder. Production sets at least:

- ``SECRET_KEY``: required when ``SENTE_PRODUCTION`` is on;
- ``SENTE_PUBLIC_URL`` (the site's address) and ``SENTE_METRICS_TOKEN`` (the scrapes' bearer token):
  required when ``SENTE_PRODUCTION`` is on, as are values other than the defaults' and the example's;
- ``DATABASE_URL``: e.g. ``postgres://sente@127.0.0.1:5432/sente`` (psycopg 3);
- ``STORAGE_URL``: ``file:///srv/sente/files`` (local disk) or ``s3://bucket/prefix`` (S3-compatible
  object storage through django-storages; ``AWS_*`` variables as that library reads them);
- ``CACHE_URL``: ``redis://127.0.0.1:6379/0`` so that throttles are shared by every worker;
- ``ALLOWED_HOSTS``: comma separated; ``SENTE_PRODUCTION=1`` turns on HSTS, secure cookies, the
  redirect to https and the proxy's ``X-Forwarded-Proto`` (``SENTE_PLAIN_HTTP=1``: a site served over
  plain HTTP, without the first three).

Every limit and rate the server enforces is a ``SENTE_*`` variable; see the ``env_*`` calls below.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"environment variable {name}={value!r}: must be true or false (1/0, yes/no, on/off)")


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"environment variable {name}={value!r}: must be an integer") from None


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return [v.strip() for v in value.split(",") if v.strip()]


PRODUCTION = env_bool("SENTE_PRODUCTION")
DEBUG = env_bool("DEBUG", False)
DATA_DIR = Path(env_str("SENTE_DATA_DIR", str(BASE_DIR / "sente-data"))).resolve()


# The value deploy/sente.env.example ships with: a server that still has it would sign its sessions
# with a key anyone can read.
EXAMPLE_SECRET_KEY = "change-me-to-a-long-random-string"


def _secret_key() -> str:
    key = env_str("SECRET_KEY")
    if key and PRODUCTION and key.strip() == EXAMPLE_SECRET_KEY:
        raise ImproperlyConfigured(
            f"SECRET_KEY is still the example's {EXAMPLE_SECRET_KEY!r}: set a secret of your "
            "own (python3 -c 'import secrets; print(secrets.token_urlsafe(50))')"
        )
    if key:
        return key
    if PRODUCTION:
        raise ImproperlyConfigured("SECRET_KEY must be set in the environment when SENTE_PRODUCTION is on")
    # The embedded default: a key made once and kept with the data, so sessions survive restarts.
    path = DATA_DIR / "secret_key"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        key = secrets.token_urlsafe(50)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(key)
        return key


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", [] if PRODUCTION else ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_tasks",
    "django_tasks_db",
    "server.accounts",
    "server.runs",
    "server.networks",
    "server.distribution",
    "server.games",
    "server.ratings",
    "server.training",
    "server.platform",
    "server.operations",
    "server.dashboard",
    "server.audit",
    "server.notices",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "server.api.control_chars.ControlCharacterMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "server.api.limits.RequestSizeLimitMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "server.api.limits.SiteMessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "server.urls"
WSGI_APPLICATION = "server.wsgi.application"
AUTH_USER_MODEL = "accounts.User"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "server" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "server.notices.announcements.context",
            ],
        },
    },
]

# --- database ------------------------------------------------------------------------------------
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{DATA_DIR / 'sente.sqlite3'}"),
        conn_max_age=env_int("SENTE_DB_CONN_MAX_AGE", 60),
        # A check query before every request's first use of a kept connection costs a round trip;
        # without it, the first request after a database restart fails and the connection is renewed.
        conn_health_checks=env_bool("SENTE_DB_HEALTH_CHECKS", False),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Parameters travel apart from the SQL, and psycopg prepares the statements a worker repeats
    # (task requests and uploads run the same few queries all day).
    DATABASES["default"].setdefault("OPTIONS", {})["server_side_binding"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    # Writers wait for each other instead of failing at once; WAL lets readers go on meanwhile.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    # A test database other processes (a test's gunicorn) can open too: a file, not memory.
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test-sente.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
MIGRATION_MODULES = {
    app: f"migrations.{app}"
    for app in (
        "accounts",
        "runs",
        "networks",
        "distribution",
        "games",
        "ratings",
        "training",
        "dashboard",
        "operations",
        "audit",
        "notices",
    )
}

# --- files ---------------------------------------------------------------------------------------


def _query_value(text: str) -> bool | int | str:
    """A STORAGE_URL query value as the storage's option wants it: true/false (yes/no, on/off) as
    booleans, whole numbers as integers (querystring_expire=3600), anything else as written."""
    lowered = text.lower()
    if lowered in ("true", "yes", "on"):
        return True
    if lowered in ("false", "no", "off"):
        return False
    return int(text) if text.isdigit() else text


def _storages() -> dict:
    url = urlparse(env_str("STORAGE_URL", (DATA_DIR / "files").as_uri()))
    if url.scheme == "file":
        default = {"BACKEND": "server.files.AtomicFileSystemStorage", "OPTIONS": {"location": url.path}}
        # The storage folder is made here (its parents only when it is the data folder's), so that a
        # new server's health check finds it; a folder whose disk is missing is left to /healthz.
        with contextlib.suppress(OSError):
            Path(url.path).mkdir(parents=not env_str("STORAGE_URL"), exist_ok=True)
    elif url.scheme == "s3":
        try:
            import storages.backends.s3  # noqa: F401
        except ImportError:
            raise ImproperlyConfigured(
                f"STORAGE_URL {url.geturl()!r} needs django-storages with boto3: pip install 'django-storages[s3]'"
            ) from None
        options = {
            "bucket_name": url.netloc,
            "location": url.path.strip("/"),
            "file_overwrite": False,
            "querystring_auth": True,
        }
        for key, values in parse_qs(url.query).items():
            options[key] = _query_value(values[-1])
        default = {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": options}
    else:
        raise ImproperlyConfigured(f"STORAGE_URL {url.geturl()!r}: the scheme must be file:// or s3://")
    return {
        "default": default,
        "staticfiles": {
            "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if PRODUCTION
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        },
    }


STORAGES = _storages()
STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("SENTE_STATIC_ROOT", str(DATA_DIR / "static")))
STATICFILES_DIRS = [BASE_DIR / "server" / "static"]
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise serves from here once collectstatic ran
# Outside production the files are also found where they lie, so a server started without
# collectstatic (the embedded default, tests) serves its stylesheets and scripts too.
WHITENOISE_USE_FINDERS = not PRODUCTION
# Network files can be handed to the front server (nginx X-Accel-Redirect) instead of streamed by
# Django: the prefix of the internal location that maps onto the storage folder.
NETWORK_FILE_ACCEL_PREFIX = env_str("SENTE_NETWORK_FILE_ACCEL_PREFIX")


def _files_public_url() -> str:
    """Where the storage's network files can be read by anyone (a bucket's prefix behind a CDN):
    tasks and the website name each network file there by its content-addressed storage name, the
    server's own download beside it as the fallback. Empty: the server's download only."""
    url = env_str("SENTE_FILES_PUBLIC_URL").strip()
    if not url:
        return ""
    parts = urlparse(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ImproperlyConfigured(
            f"SENTE_FILES_PUBLIC_URL {url!r}: must be an http:// or https:// address with a host and no query, "
            "the folder that holds the storage's networks/ and katago/ (e.g. https://cdn.example.org/sente/)"
        )
    return url.rstrip("/") + "/"


SENTE_FILES_PUBLIC_URL = _files_public_url()

# --- caches (throttle counters) ------------------------------------------------------------------
_cache_url = env_str("CACHE_URL")
if _cache_url.startswith(("redis://", "rediss://")):
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _cache_url}}
elif _cache_url:
    raise ImproperlyConfigured(f"CACHE_URL {_cache_url!r}: only redis:// caches are supported")
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- background tasks (rating refits) -------------------------------------------------------------
# Queued in the database and run by `manage.py db_worker`; SENTE_TASKS=immediate runs them at once,
# in the process that queued them (after its transaction commits), with no worker.
_tasks = env_str("SENTE_TASKS", "database")
if _tasks not in ("database", "immediate"):
    raise ImproperlyConfigured(f"SENTE_TASKS {_tasks!r}: expected database or immediate")
TASKS = {
    "default": {
        "BACKEND": "django_tasks_db.DatabaseBackend"
        if _tasks == "database"
        else "django_tasks.backends.immediate.ImmediateBackend"
    }
}
# New rating games are gathered this long before the refit they queued runs.
SENTE_REFIT_DELAY_SECONDS = float(env_str("SENTE_REFIT_DELAY_SECONDS", "10"))

# The statistical audit of contributors (server.audit): rows sampled per contributor and network,
# from their newest games of the last days; fewer rows than min_rows are not judged. After uploads
# an audit of the run is queued at most once per interval.
SENTE_AUDIT = {
    "rows": env_int("SENTE_AUDIT_ROWS", 128),
    "min_rows": env_int("SENTE_AUDIT_MIN_ROWS", 64),
    "games": env_int("SENTE_AUDIT_GAMES", 32),
    "days": env_int("SENTE_AUDIT_DAYS", 7),
    "interval_seconds": env_int("SENTE_AUDIT_INTERVAL_SECONDS", 6 * 3600),
}

# --- metrics (GET /metrics, Prometheus) ------------------------------------------------------------
SENTE_METRICS_SECONDS = float(env_str("SENTE_METRICS_SECONDS", "15"))  # how long a scrape's figures are reused
# The value deploy/sente.env.example ships with, which the operator replaces.
EXAMPLE_METRICS_TOKEN = "change-me-to-a-random-metrics-token"


def _metrics_token() -> str:
    """When set, scrapes send Authorization: Bearer <token>. Production requires one: behind the proxy
    every request comes from the proxy's address, so only a token tells the scraper from anyone."""
    token = env_str("SENTE_METRICS_TOKEN").strip()
    if not PRODUCTION:
        return token
    make = "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"
    if not token:
        raise ImproperlyConfigured(
            "SENTE_METRICS_TOKEN must be set when SENTE_PRODUCTION is on: /metrics answers only scrapes that send "
            f"Authorization: Bearer <it> (make one with {make})"
        )
    if token == EXAMPLE_METRICS_TOKEN:
        raise ImproperlyConfigured(
            f"SENTE_METRICS_TOKEN is still the example's {token!r}: set one of your own ({make})"
        )
    if len(token) < 16:
        raise ImproperlyConfigured(f"SENTE_METRICS_TOKEN has {len(token)} characters: use at least 16 ({make})")
    return token


SENTE_METRICS_TOKEN = _metrics_token()

# --- e-mail (password resets, e-mail changes) -------------------------------------------------------
# Written to the server's output (its log) unless EMAIL_HOST names an SMTP server.
EMAIL_HOST = env_str("EMAIL_HOST")
if EMAIL_HOST:
    EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    EMAIL_PORT = env_int("EMAIL_PORT", 587)
    EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
    EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
    EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", not env_bool("EMAIL_USE_SSL"))
    EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL")
    EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 20)
else:
    EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "Sente <sente@localhost>")
PASSWORD_RESET_TIMEOUT = env_int("SENTE_PASSWORD_RESET_SECONDS", 3 * 24 * 3600)

# --- the website ------------------------------------------------------------------------------------
# How often contributors' rows in the training window are counted again (in the background worker)
# while someone looks at the contributor pages.
SENTE_WINDOW_TALLY_SECONDS = float(env_str("SENTE_WINDOW_TALLY_SECONDS", "300"))
# where volunteers get the client: the getting-started page shows `git clone` of it when set
SENTE_SOURCE_URL = env_str("SENTE_SOURCE_URL")


def _newest_client_version() -> str:
    """The newest client release, announced with the run so that older clients say how to upgrade:
    SENTE_NEWEST_CLIENT_VERSION, or this server's own version (a release ships both)."""
    from common.protocol import CLIENT_VERSION, parse_version

    value = env_str("SENTE_NEWEST_CLIENT_VERSION") or CLIENT_VERSION
    try:
        parse_version(value)
    except ValueError:
        raise ImproperlyConfigured(
            f"environment variable SENTE_NEWEST_CLIENT_VERSION={value!r}: must be a version such as 1.4.0"
        ) from None
    return value


SENTE_NEWEST_CLIENT_VERSION = _newest_client_version()
# The command an older client shows for upgrading to it.
SENTE_CLIENT_UPGRADE = env_str("SENTE_CLIENT_UPGRADE", "pipx upgrade sente")
# The site's address as people reach it, for the links of messages sent without a request
# (webhooks; e-mails take the request's own).
DEFAULT_PUBLIC_URL = "http://127.0.0.1:8000"


def _public_url() -> str:
    """Required in production (unless DEBUG): the default would send webhook readers to their own machine."""
    url = env_str("SENTE_PUBLIC_URL").strip() or DEFAULT_PUBLIC_URL
    if PRODUCTION and not DEBUG and url.rstrip("/") == DEFAULT_PUBLIC_URL:
        problem = "is missing" if not env_str("SENTE_PUBLIC_URL").strip() else f"is the default {url!r}"
        raise ImproperlyConfigured(
            f"SENTE_PUBLIC_URL {problem}: when SENTE_PRODUCTION is on, set it to the site's address as people "
            "reach it (e.g. https://go.example.org), which the links of webhook posts start with"
        )
    parts = urlparse(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ImproperlyConfigured(f"SENTE_PUBLIC_URL {url!r}: must be an http:// or https:// address with a host")
    return url


SENTE_PUBLIC_URL = _public_url()
# The runs' webhooks (server.notices.webhooks): each attempt's deadline (resolving, connecting,
# sending and reading in all), the first retry's delay (doubled at each retry), the attempts before
# giving up, and whether they may post to this machine and private networks (loopback, RFC 1918,
# fc00::/7, 100.64.0.0/10; link-local, metadata and reserved addresses never).
SENTE_WEBHOOK = {
    "timeout_seconds": float(env_str("SENTE_WEBHOOK_TIMEOUT_SECONDS", "10")),
    "backoff_seconds": float(env_str("SENTE_WEBHOOK_BACKOFF_SECONDS", "30")),
    "attempts": env_int("SENTE_WEBHOOK_ATTEMPTS", 9),
    "allow_private": env_bool("SENTE_WEBHOOK_ALLOW_PRIVATE"),
}

# --- shards (server.games.shards) ------------------------------------------------------------------
# The packer closes a shard of a run's self-play games once they hold ``rows`` rows or ``bytes`` bytes,
# or once its oldest game has waited ``seconds``; a shard never spans two UTC days.
SENTE_SHARDS = {
    "rows": env_int("SENTE_SHARD_ROWS", 100_000),
    "bytes": env_int("SENTE_SHARD_BYTES", 512 * 1024 * 1024),
    "seconds": env_int("SENTE_SHARD_SECONDS", 3600),
}
for _key, _value in SENTE_SHARDS.items():
    if _value < 1:
        raise ImproperlyConfigured(f"SENTE_SHARD_{_key.upper()}={_value}: must be at least 1")
# Delete a game's own npz file once its shard is recorded (its rows are then read from the shard);
# off, the per-game files stay as the record of each upload (server.games.shards).
SENTE_SHARD_DROP_GAME_FILES = env_bool("SENTE_SHARD_DROP_GAME_FILES")

# --- limits --------------------------------------------------------------------------------------
SENTE_LIMITS = {
    "sgf_bytes": env_int("SENTE_MAX_SGF_BYTES", 200 * 1024),
    "npz_bytes": env_int("SENTE_MAX_NPZ_BYTES", 2 * 1024 * 1024),
    "npz_unpacked_bytes": env_int("SENTE_MAX_NPZ_UNPACKED_BYTES", 20 * 1024 * 1024),
    "metadata_bytes": env_int("SENTE_MAX_METADATA_BYTES", 16 * 1024),
    "network_bytes": env_int("SENTE_MAX_NETWORK_BYTES", 1024 * 1024 * 1024),
    # The largest request body outside network uploads (SGF + npz + metadata + multipart overhead).
    "request_bytes": env_int("SENTE_MAX_REQUEST_BYTES", 3 * 1024 * 1024),
    "games_per_task": env_int("SENTE_MAX_GAMES_PER_TASK", 256),
}
# The filtered export of games (server.operations.admission): how many stream at once from the whole
# site and from one address (counted in the cache: shared by every process with CACHE_URL), and in one
# process (by default one fewer than gunicorn's SENTE_THREADS, so that exports never take a process's
# last thread); the seconds one may take to send, after which it is cut off; and the most games of an
# anonymous one (larger ones are for signed-in users, or in the daily archives).
SENTE_EXPORTS = {
    "at_once": env_int("SENTE_EXPORTS_AT_ONCE", 4),
    "per_address": env_int("SENTE_EXPORTS_PER_ADDRESS", 1),
    "per_process": env_int("SENTE_EXPORTS_PER_PROCESS", max(1, env_int("SENTE_THREADS", 2) - 1)),
    "seconds": env_int("SENTE_EXPORT_SECONDS", 600),
    "anonymous_games": env_int("SENTE_EXPORT_ANONYMOUS_GAMES", 2000),
}
# Tasks: how long one is valid, and how long after that its games are still taken.
SENTE_TASK_SECONDS = env_int("SENTE_TASK_SECONDS", 6 * 3600)
SENTE_TASK_GRACE_SECONDS = env_int("SENTE_TASK_GRACE_SECONDS", 24 * 3600)


def _retention_days(name: str, default: int) -> int:
    days = env_int(name, default)
    if days < 1:
        raise ImproperlyConfigured(f"environment variable {name}={days}: must be at least 1 (days)")
    return days


# How long the daily job (manage.py prune) keeps rows that only record what happened: refused uploads
# (the metrics count the last hour's), and tasks no game names, counted from the last moment their
# games were taken (the expiry plus the grace above; the metrics count the tasks of a task's lifetime).
SENTE_RETENTION_DAYS = {
    "refusals": _retention_days("SENTE_REFUSAL_RETENTION_DAYS", 30),
    "tasks": _retention_days("SENTE_TASK_RETENTION_DAYS", 30),
}
# How long a worker may hand out tasks from what it last read of the current run (its network and
# settings version) before reading it again.
SENTE_RUN_STATE_SECONDS = float(env_str("SENTE_RUN_STATE_SECONDS", "2"))
DATA_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024  # non-file request data
FILE_UPLOAD_MAX_MEMORY_SIZE = 4 * 1024 * 1024  # larger uploads (networks) spool to a temporary file

# --- REST framework ------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "server.accounts.authentication.ClientTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_PARSER_CLASSES": [
        "server.api.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_THROTTLE_CLASSES": ["server.api.throttling.RateLimits"],
    "DEFAULT_THROTTLE_RATES": {
        # Every request: per signed-in user, and per client address (signed in or not).
        "user": env_str("SENTE_THROTTLE_USER", "1200/min"),
        "ip": env_str("SENTE_THROTTLE_IP", "2400/min"),
        # Scoped: task requests and game uploads per user; password checks per address and per username.
        "tasks": env_str("SENTE_THROTTLE_TASKS", "60/min"),
        "uploads": env_str("SENTE_THROTTLE_UPLOADS", "600/min"),
        "login": env_str("SENTE_THROTTLE_LOGIN", "10/min"),
        # Filtered exports of games (each may stream many megabytes), per address.
        "exports": env_str("SENTE_THROTTLE_EXPORTS", "30/hour"),
        # Password checks per (address, username), in several windows (server.accounts.throttling);
        # never per username alone, which strangers could fill to lock its owner out.
        "login_pair": env_str("SENTE_THROTTLE_LOGIN_PAIR", "5/min,20/hour,100/day"),
        # Sign-ups per address (each sends a mail).
        "signup": env_str("SENTE_THROTTLE_SIGNUP", "20/hour"),
    },
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "server.api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "NUM_PROXIES": env_int("SENTE_NUM_PROXIES", 1 if PRODUCTION else 0),
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Sente API",
    "DESCRIPTION": "Self-play tasks, networks, games and accounts of a Sente server. Clients authenticate "
    "with `Authorization: Token <key>` (from `POST /api/v1/auth/token/`). Errors are JSON: "
    '`{"error": {"code": ..., "message": ..., "field": ...}}`.',
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # The docs page's scripts come from this server (drf-spectacular-sidecar), not from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {"TaskKindEnum": "common.protocol.TASK_KINDS"},
}

# --- security ------------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
# SENTE_PLAIN_HTTP=1: a production server that visitors reach over plain HTTP (docker compose's
# plain-HTTP mode, a try on a private network): no redirect to https, no HSTS, cookies without
# Secure (a browser would not send them back over http).
PLAIN_HTTP = env_bool("SENTE_PLAIN_HTTP")
if PRODUCTION:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("SENTE_SSL_REDIRECT", not PLAIN_HTTP)
    SECURE_HSTS_SECONDS = 0 if PLAIN_HTTP else env_int("SENTE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    # Joining the browsers' preload list is the operator's decision (SENTE_HSTS_PRELOAD=1).
    SECURE_HSTS_PRELOAD = env_bool("SENTE_HSTS_PRELOAD", False)
    SILENCED_SYSTEM_CHECKS = [] if SECURE_HSTS_PRELOAD else ["security.W021"]
    SESSION_COOKIE_SECURE = not PLAIN_HTTP
    CSRF_COOKIE_SECURE = not PLAIN_HTTP

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("SENTE_LOG_LEVEL", "INFO")},
    "loggers": {"django.request": {"level": "ERROR"}},
}
