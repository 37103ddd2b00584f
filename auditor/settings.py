"""Settings, from environment variables only (see .env.example for every variable).

With nothing set the app runs with no services at all: SQLite in WAL mode and a Celery broker on
the local filesystem (a real worker process still runs the tasks). DATABASE_URL=postgres://… and
CELERY_BROKER_URL=redis://… switch to PostgreSQL and Redis.
"""

from __future__ import annotations

from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from auditor.env import env_bool, env_float, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("TA_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DJANGO_DEBUG", False)
SECRET_KEY = env_str("DJANGO_SECRET_KEY")
if not SECRET_KEY:
    if env_bool("TA_PRODUCTION", False):
        raise ImproperlyConfigured("DJANGO_SECRET_KEY (or DJANGO_SECRET_KEY_FILE) must be set")
    # Development only: a fixed key keeps sessions valid across restarts of the demo.
    SECRET_KEY = "dev-insecure-key-change-me-in-production-0123456789abcdef"
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "django_htmx",
    "traces",
    "auditor",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "auditor.middleware.PermissionsPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # After authentication (it needs request.user), before any view middleware reads the body.
    "auditor.middleware.BodyGateMiddleware",
    # After the gate: it may read form fields, which the gate has let in.
    "auditor.middleware.InputHygieneMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "auditor.urls"
# Pages of traces' objects that auditor serves (they show audits too); traces links to them by
# these names and knows nothing of auditor (traces/links.py).
TRACES_PAGES = {
    "project": "auditor:project",
    "trace": "auditor:trace",
    "trace-list": "auditor:trace-list",
    "audit-new": "auditor:run-new",
}
WSGI_APPLICATION = "auditor.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    }
]

# --- Database -------------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    try:
        DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL is not a database URL: {exc}") from exc
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "db.sqlite3",
            "OPTIONS": {
                # WAL lets the web process read while the worker writes; IMMEDIATE avoids the
                # "database is locked" upgrade deadlock between two writers.
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
                "init_command": (
                    "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=20000;"
                ),
            },
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Celery ---------------------------------------------------------------------------------
# The module that builds the Celery app: common.retrying loads it where a task is defined (the
# app loads on first use, not at Django start: auditor/__init__.py).
TA_CELERY_APP = "auditor.celery"
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")
if CELERY_BROKER_URL.startswith("filesystem://"):
    _broker_dir = VAR_DIR / "broker"
    for sub in ("queue", "processed", "control"):
        (_broker_dir / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True  # state lives in our own tables, not a result backend
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("TA_TASK_SOFT_TIME_LIMIT", 1800, minimum=1)
CELERY_TASK_TIME_LIMIT = env_int("TA_TASK_TIME_LIMIT", 1900, minimum=1)
CELERY_TASK_DEFAULT_QUEUE = "ingest"
CELERY_TASK_ROUTES = {
    "traces.tasks.*": {"queue": "ingest"},
    "auditor.tasks.*": {"queue": "audit"},
    "auditor.tasks_export.*": {"queue": "export"},
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A broker outage of any length is waited out: the default (100 retries) ends the worker after a
# long outage, and then queued work waits for someone to restart it.
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# On a lost connection a running task is left to finish, not cancelled: its work is kept, and a
# redelivery of its message (visibility timeout) is a no-op because jobs are claimed once.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    # How long Redis waits before redelivering an unacknowledged task (acks_late): a task whose
    # worker was killed runs again after this. Redelivery of a task still running is harmless
    # (tasks are idempotent), so this can be short.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env_int("TA_VISIBILITY_TIMEOUT", 600, minimum=1)
    }

# --- Cache (authentication failure counts; shared by every web process) ----------------------
TA_CACHE_URL = env_str(
    "TA_CACHE_URL",
    CELERY_BROKER_URL if CELERY_BROKER_URL.startswith(("redis://", "rediss://")) else "",
)
if TA_CACHE_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": TA_CACHE_URL,
        }
    }
else:
    # No Redis (the development set-up): files, shared by the processes of one machine.
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache"),
        }
    }

# --- Audit runs -----------------------------------------------------------------------------
# Traces per audit task; 0: by the run's size (auditor.runs.queueing.chunk_size).
TA_AUDIT_CHUNK_TRACES = env_int("TA_AUDIT_CHUNK_TRACES", 0, minimum=0)
# Read and write an audit's batches on two threads beside the auditing (auditor.runs.lanes):
# two more database connections per worker process; off, a chunk does all in one thread.
TA_AUDIT_OVERLAP = env_bool("TA_AUDIT_OVERLAP", True)
TA_EXPORT_CHUNK_ROWS = env_int("TA_EXPORT_CHUNK_ROWS", 500, minimum=1)
TA_CALIBRATION_BOOTSTRAP = env_int("TA_CALIBRATION_BOOTSTRAP", 200, minimum=1)
TA_SUMMARY_BOOTSTRAP = env_int("TA_SUMMARY_BOOTSTRAP", 2000, minimum=1)
# Sandboxed programs a worker runs at once when a project executes code candidates
# (docs/sandbox.md), and the wall-clock limit of each, seconds (twice the CPU limit: a loop is
# stopped by the CPU limit, the wall clock stops only a program that did not get to run).
TA_SANDBOX_WORKERS = env_int("TA_SANDBOX_WORKERS", 2, minimum=1)
TA_SANDBOX_TIMEOUT = env_int("TA_SANDBOX_TIMEOUT", 20, minimum=1)
# Keep programs' outcomes per project, so a later run does not execute them again
# (auditor.runs.execution_store).
TA_SANDBOX_REUSE = env_bool("TA_SANDBOX_REUSE", True)
# Let owners of every project switch code execution on; off, only projects a staff user created
# may (traces.models.Project.execution_refusal, docs/sandbox.md).
TA_SANDBOX_ALLOW_ALL_PROJECTS = env_bool("TA_SANDBOX_ALLOW_ALL_PROJECTS", False)
# The Celery queue of the runs that execute code candidates (their start and calibration), served
# by workers with bubblewrap (docs/sandbox.md); empty: the audit queue, like every other run.
TA_SANDBOX_QUEUE = env_str("TA_SANDBOX_QUEUE", "")
# Memory ceiling of each worker process (and of inline audits), MiB; 0 disables it.
TA_WORKER_MEMORY_MB = env_int("TA_WORKER_MEMORY_MB", 4096)
# The cyclic garbage collector's thresholds in processes that audit (auditor.limits.tune_gc);
# empty: Python's own (700,10,10). Three integers, or ImproperlyConfigured at start.
TA_GC_THRESHOLDS = env_list("TA_GC_THRESHOLDS", ["20000", "50", "100"])
# How often auditing processes hand the interpreter lock between threads (auditor.limits);
# 0: Python's own 5 ms.
TA_SWITCH_INTERVAL_MS = env_float("TA_SWITCH_INTERVAL_MS", 1.0)
# A running upload or audit run whose worker has been silent this long is taken over.
TA_STALE_SECONDS = env_int("TA_STALE_SECONDS", 120, minimum=1)
# An audit run whose chunks fail this many times in a row for one reason (or that the sweep
# finds without progress this many times) fails with that reason instead of being re-queued.
TA_AUDIT_MAX_FAILURES = env_int("TA_AUDIT_MAX_FAILURES", 3, minimum=1)
# How often each worker looks for such leftovers (and uploads accepted with the broker down).
TA_SWEEP_SECONDS = env_int("TA_SWEEP_SECONDS", 60, minimum=1)
# Publishing a task to an unreachable broker gives up quickly: the request that queued it must
# not hang; the work stays pending and the sweep queues it later.
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}
# Model endpoints are project resources (auditor.llm.models.ModelEndpoint, docs/models.md): their
# keys are encrypted with TA_SECRETS_KEY (a Fernet key; derived from SECRET_KEY when unset, so
# rotating SECRET_KEY then makes stored keys unreadable: set it explicitly in production).
TA_SECRETS_KEY = env_str("TA_SECRETS_KEY")
# Hosts, addresses and CIDR networks model requests may reach although not public (loopback,
# private, link-local, … are refused otherwise), e.g. "vllm.internal,10.0.5.0/24".
TA_MODEL_ALLOWED_HOSTS = env_str("TA_MODEL_ALLOWED_HOSTS")
# Environment variables an owner may name as an endpoint's key (nothing else is ever read).
TA_MODEL_KEY_ENVS = env_list("TA_MODEL_KEY_ENVS", [])
# Serve cached model answers across projects (off: each project's answers are its own).
TA_MODEL_CACHE_SHARED = env_bool("TA_MODEL_CACHE_SHARED", False)

# --- Storage (raw uploads, exports) ---------------------------------------------------------
MEDIA_ROOT = Path(env_str("TA_MEDIA_ROOT", str(VAR_DIR / "media")))
MEDIA_URL = "/media/"
STATIC_URL = "/static/"
STATIC_ROOT = Path(env_str("TA_STATIC_ROOT", str(VAR_DIR / "staticfiles")))
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns on every request otherwise
PRODUCTION = env_bool("TA_PRODUCTION", False)
# Static files under hashed names with gzip copies, made by `collectstatic` (the Docker image and
# scripts/run run it): WhiteNoise serves a hashed file with "max-age=315360000, public,
# immutable" and its .gz to a client that accepts gzip; pages name only the hashed files.
# Without it (the default outside production: tests, a bare runserver) files are served straight
# from static/ under their own names, cached for WhiteNoise's default 60 s.
STATIC_COLLECTED = env_bool("TA_STATIC_COLLECTED", PRODUCTION)
STORAGES = {
    "default": {
        "BACKEND": env_str("TA_STORAGE_BACKEND", "django.core.files.storage.FileSystemStorage")
    },
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if STATIC_COLLECTED
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = not STATIC_COLLECTED

# --- Ingest limits (each has its own error message) ------------------------------------------
TA_MAX_UPLOAD_BYTES = env_int("TA_MAX_UPLOAD_BYTES", 512 * 1024 * 1024, minimum=1)
TA_MAX_DECOMPRESSED_BYTES = env_int("TA_MAX_DECOMPRESSED_BYTES", 2 * 1024 * 1024 * 1024, minimum=1)
TA_MAX_GZIP_RATIO = env_float("TA_MAX_GZIP_RATIO", 100.0, minimum=1.0)
TA_MAX_LINE_BYTES = env_int("TA_MAX_LINE_BYTES", 32 * 1024 * 1024, minimum=1)
TA_MAX_DEPTH = env_int("TA_MAX_DEPTH", 64, minimum=1)
TA_MAX_EVENTS_PER_TRACE = env_int("TA_MAX_EVENTS_PER_TRACE", 100_000, minimum=1)
TA_MAX_REPORTED_ERRORS = env_int("TA_MAX_REPORTED_ERRORS", 1000, minimum=1)
TA_INGEST_BATCH_EVENTS = env_int("TA_INGEST_BATCH_EVENTS", 20_000, minimum=1)
# The OTLP/HTTP receiver's limits and timing (docs/otlp.md says what each bounds).
TA_OTLP_MAX_BODY_BYTES = env_int("TA_OTLP_MAX_BODY_BYTES", 8 * 1024 * 1024, minimum=1)
TA_OTLP_GRACE_SECONDS = env_float("TA_OTLP_GRACE_SECONDS", 5.0, minimum=0.0)
TA_OTLP_QUIET_SECONDS = env_int("TA_OTLP_QUIET_SECONDS", 300, minimum=1)
TA_OTLP_MAX_PENDING_SPANS = env_int("TA_OTLP_MAX_PENDING_SPANS", 200_000, minimum=1)
TA_OTLP_MAX_PENDING_BYTES = env_int("TA_OTLP_MAX_PENDING_BYTES", 1024**3, minimum=1)
TA_OTLP_UPLOAD_MAX_SPANS = env_int("TA_OTLP_UPLOAD_MAX_SPANS", 20_000, minimum=1)
# Django reads request bodies into memory up to this size; uploads stream to disk beyond it.
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
# The first handler stops a multipart upload at TA_MAX_UPLOAD_BYTES, before the rest is read
# (a chunked body declares no length to check up front).
FILE_UPLOAD_HANDLERS = [
    "traces.upload_handlers.SizeLimitUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]

# --- Auth, API ------------------------------------------------------------------------------
# Failed authentications (common/throttle.py): this many failures within the window lock the
# client address or the account for the lockout time (429 with Retry-After).
TA_AUTH_THROTTLE = {
    "login-ip": env_int("TA_LOGIN_FAILURES_PER_IP", 20, minimum=1),
    "login-account": env_int("TA_LOGIN_FAILURES_PER_ACCOUNT", 5, minimum=1),
    "token-ip": env_int("TA_TOKEN_FAILURES_PER_IP", 20, minimum=1),
}
TA_AUTH_FAILURE_WINDOW_SECONDS = env_int("TA_AUTH_FAILURE_WINDOW_SECONDS", 900, minimum=1)
TA_AUTH_LOCKOUT_SECONDS = env_int("TA_AUTH_LOCKOUT_SECONDS", 900, minimum=1)
# Behind a proxy REMOTE_ADDR is the proxy: name the header it sets (e.g. HTTP_X_REAL_IP). Leave
# empty when clients connect directly, or any client could pick its own address.
TA_CLIENT_IP_HEADER = env_str("TA_CLIENT_IP_HEADER", "")
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "traces.api_auth.ProjectTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "traces.api_auth.TokenScopePermission",
    ],
    # Strict parsers: NUL, lone surrogates, deep or non-standard JSON are 400s.
    "DEFAULT_PARSER_CLASSES": [
        "common.request_input.JSONParser",
        "common.request_input.FormParser",
        "common.request_input.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "traces.api_errors.exception_handler",
    # `?format=` names the trace format of an upload, not DRF's renderer.
    "URL_FORMAT_OVERRIDE": None,
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Trace Auditor API",
    "DESCRIPTION": "Upload agent traces, follow ingestion, read traces and events.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
}

# --- Security -------------------------------------------------------------------------------
# Trace content is hostile: a strict CSP with no inline script. Styles allow 'unsafe-inline'
# only because plotly.js injects <style> elements; styles cannot run code.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF, CSP.UNSAFE_INLINE],
    "img-src": [CSP.SELF, "data:", "blob:"],
    "font-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
}
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
SECURE_REFERRER_POLICY = "same-origin"
# Features no page of the app uses: denied to every origin (auditor/middleware.py).
TA_PERMISSIONS_POLICY: dict[str, list[str]] = {
    feature: []
    for feature in (
        "accelerometer",
        "autoplay",
        "camera",
        "display-capture",
        "geolocation",
        "gyroscope",
        "magnetometer",
        "microphone",
        "midi",
        "payment",
        "publickey-credentials-get",
        "screen-wake-lock",
        "serial",
        "usb",
        "xr-spatial-tracking",
    )
}
if PRODUCTION:
    SECURE_SSL_REDIRECT = env_bool("TA_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("TA_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("TA_LOG_LEVEL", "INFO")},
}
