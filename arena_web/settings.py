"""Settings, read from the environment.

Nothing set: DEBUG, SQLite under var/, Celery tasks run eagerly in-process. Production sets
DEBUG=0, SECRET_KEY, ALLOWED_HOSTS, DATABASE_URL (PostgreSQL) and CELERY_BROKER_URL (Redis).
"""

import os
import shlex
import sys
import tempfile
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from arena_web.env import env_bool, env_float, env_int, env_list, env_rate, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("ARENA_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DEBUG", True)

SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off")
    SECRET_KEY = "dev-only-insecure-key-never-used-with-debug-off"  # noqa: S105

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"] if DEBUG else [])
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
    "django_filters",
    "submissions",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "arena_web.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "arena_web.query_guard.RejectNulQueryMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "arena_web.urls"
WSGI_APPLICATION = "arena_web.wsgi.application"

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
    },
]

# Databases
_database_url = env_str("DATABASE_URL")
if _database_url:
    DATABASES = {
        "default": dj_database_url.parse(
            _database_url,
            conn_max_age=env_int("DB_CONN_MAX_AGE", 60),
            conn_health_checks=True,
        )
    }
else:
    DATABASES = {
        "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": VAR_DIR / "db.sqlite3"}
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# Static and uploaded files. Uploads are untrusted and never served as media.
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "submissions.pages.staticfiles.PlotlyFinder",  # vendor/plotly.min.js from the plotly package
]
STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns on every request without it
STATICFILES_DIRS = [BASE_DIR / "static"]
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(VAR_DIR / "media")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

# Request limits. File parts above FILE_UPLOAD_MAX_MEMORY_SIZE spill to temporary files; the
# intake service enforces the ARENA_MAX_* sizes per upload.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 4 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = env_int("FILE_UPLOAD_MAX_MEMORY_SIZE", 2 * 1024 * 1024)
FILE_UPLOAD_TEMP_DIR = env_str("FILE_UPLOAD_TEMP_DIR") or None
DATA_UPLOAD_MAX_NUMBER_FILES = env_int("DATA_UPLOAD_MAX_NUMBER_FILES", 500, minimum=1)
DATA_UPLOAD_MAX_NUMBER_FIELDS = env_int("DATA_UPLOAD_MAX_NUMBER_FIELDS", 1000, minimum=1)

ARENA_MAX_SOLUTION_BYTES = env_int("ARENA_MAX_SOLUTION_BYTES", 1024 * 1024, minimum=1)
ARENA_MAX_TRANSCRIPT_BYTES = env_int("ARENA_MAX_TRANSCRIPT_BYTES", 256 * 1024 * 1024, minimum=1)
ARENA_MAX_TRANSCRIPT_FILES = env_int("ARENA_MAX_TRANSCRIPT_FILES", 400, minimum=1)
ARENA_MAX_METADATA_BYTES = env_int("ARENA_MAX_METADATA_BYTES", 1024 * 1024, minimum=1)
ARENA_MAX_ARCHIVE_MEMBERS = env_int("ARENA_MAX_ARCHIVE_MEMBERS", 1000, minimum=1)
ARENA_MAX_ARCHIVE_BYTES = env_int("ARENA_MAX_ARCHIVE_BYTES", 320 * 1024 * 1024, minimum=1)
ARENA_MAX_ARCHIVE_RATIO = env_int("ARENA_MAX_ARCHIVE_RATIO", 100, minimum=1)
ARENA_PUBLISH_ON_GRADE = env_bool("ARENA_PUBLISH_ON_GRADE", True)
# Integrity flags (services.integrity): thresholds that mark a run for review.
ARENA_FLAG_PEAK_FRACTION = env_float("ARENA_FLAG_PEAK_FRACTION", 0.9)
ARENA_FLAG_SPEEDUP = env_float("ARENA_FLAG_SPEEDUP", 20.0)
ARENA_FLAG_SCORE_GAP = env_float("ARENA_FLAG_SCORE_GAP", 0.5)
ARENA_FLAG_TIMING_SPREAD = env_float("ARENA_FLAG_TIMING_SPREAD", 1.5)

# Security. With DEBUG off everything is strict; SECURE_SSL_REDIRECT=0 suits a TLS-terminating
# proxy that already redirects, TRUST_X_FORWARDED_PROTO=1 one that sets X-Forwarded-Proto.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
if env_bool("TRUST_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG
SESSION_COOKIE_HTTPONLY = True
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", not DEBUG)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Sent on every response that has no policy of its own (the transcript viewer sends its own).
# Scripts only from our static files; styles may be inline: plotly injects its rules and the
# board's bars take CSS variables in style attributes.
ARENA_CSP = env_str(
    "ARENA_CSP",
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
)

# Quotas (submissions.api.throttles, submissions.services.quotas). Throttles count in the
# "quotas" cache, per process unless ARENA_CACHE_URL points every web process at one Redis.
ARENA_UPLOAD_RATE = env_rate("ARENA_UPLOAD_RATE", "60/hour")
ARENA_REEVALUATE_RATE = env_rate("ARENA_REEVALUATE_RATE", "120/hour")
ARENA_LOGIN_RATE = env_rate("ARENA_LOGIN_RATE", "20/hour")  # admin sign-in attempts per address
ARENA_MAX_QUEUED_EVALUATIONS = env_int("ARENA_MAX_QUEUED_EVALUATIONS", 20, minimum=1)
_cache_url = env_str("ARENA_CACHE_URL")
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "quotas": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _cache_url}
        if _cache_url
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "quotas"}
    ),
}

LOGIN_URL = "admin:login"

# REST API
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "submissions.api.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_PARSER_CLASSES": [
        "rest_framework.parsers.MultiPartParser",
        "rest_framework.parsers.FormParser",
        "submissions.api.parsers.BoundedJSONParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Kernel Arena API",
    "DESCRIPTION": "Upload agent runs and read their evaluations.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "RunStatusEnum": "submissions.models.Run.Status",
        "EvaluationStatusEnum": "submissions.models.Evaluation.Status",
        "TranscriptStatusEnum": "submissions.models.Run.TranscriptStatus",
        "EvaluationVerdictEnum": "submissions.models.Evaluation.Verdict",
        "AnnotationVerdictEnum": "submissions.models.Annotation.Verdict",
    },
}

# Celery. Without a broker, tasks run eagerly in the calling process.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL")
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", not CELERY_BROKER_URL)
CELERY_TASK_EAGER_PROPAGATES = CELERY_TASK_ALWAYS_EAGER
if not CELERY_BROKER_URL:
    CELERY_BROKER_URL = "memory://"
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_DEFAULT_QUEUE = "cpu"
CELERY_TIMEZONE = TIME_ZONE
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Queues an eager (in-process) grading can serve; the admin and API refuse re-gradings on others.
ARENA_EAGER_QUEUES = env_list("ARENA_EAGER_QUEUES", ["cpu"])
# One lock file per GPU of the host: a second worker pinned to a held GPU refuses to start.
ARENA_GPU_LOCK_DIR = env_str(
    "ARENA_GPU_LOCK_DIR", str(Path(tempfile.gettempdir()) / "kernel-arena-gpu-locks")
)

# --- Agent workers (services.campaigns; docs/launcher.md "Verified campaigns") ---
# Verified campaigns launch the agent CLIs on workers of this queue (`celery -A arena_web worker
# -Q agents`). The provider keys they pass to the CLIs are read from the worker's environment
# here, by name, and never stored in the database.
AGENT_QUEUE = "agents"
ARENA_AGENT_ENV = {
    name: os.environ[name]
    for name in env_list(
        "ARENA_AGENT_ENV_NAMES",
        [
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "CODEX_API_KEY",
            "GEMINI_API_KEY",
            "GOOGLE_GEMINI_BASE_URL",
        ],
    )
    if name in os.environ
}
# The CLIs' executables: `make agents` installs them here; a CLI not here is looked up on PATH.
ARENA_AGENT_CLI_DIR = env_str("ARENA_AGENT_CLI_DIR", str(BASE_DIR / ".venv/npm/node_modules/.bin"))
ARENA_AGENT_RUNS_DIR = Path(env_str("ARENA_AGENT_RUNS_DIR", str(VAR_DIR / "agent-runs")))
ARENA_AGENT_GPU = env_str("ARENA_AGENT_GPU") or None  # the GPU the agents' checks run on
# The account verified runs are submitted as.
ARENA_PLATFORM_USERNAME = env_str("ARENA_PLATFORM_USERNAME", "kernel-arena")

# --- Evaluation workers (services.evaluations; docs/architecture.md "Celery queues") ---
# The engine's command line; tests point it at a fake engine for fault injection.
ARENA_ENGINE_COMMAND = shlex.split(env_str("ARENA_ENGINE_COMMAND")) or [
    sys.executable,
    "-m",
    "runners",
]
# Where each grade's staff log goes (the engine's `--progress` account of every gate, shape and
# held-out failure, as it runs): one file per evaluation attempt. Empty: not kept.
ARENA_ENGINE_LOG_DIR = env_str("ARENA_ENGINE_LOG_DIR")
ARENA_EVAL_TIMEOUT_S = env_int("ARENA_EVAL_TIMEOUT_S", 1800, minimum=1)
ARENA_EVAL_LEASE_S = env_int("ARENA_EVAL_LEASE_S", 120, minimum=1)
ARENA_EVAL_HEARTBEAT_S = env_int(
    "ARENA_EVAL_HEARTBEAT_S", max(1, ARENA_EVAL_LEASE_S // 4), minimum=1
)
ARENA_EVAL_MAX_ATTEMPTS = env_int("ARENA_EVAL_MAX_ATTEMPTS", 3, minimum=1)
ARENA_EVAL_REQUEUE_AFTER_S = env_int("ARENA_EVAL_REQUEUE_AFTER_S", 600, minimum=1)
ARENA_SWEEP_EVERY_S = env_int("ARENA_SWEEP_EVERY_S", 60, minimum=1)
# Lineage gradings (services.lineage.grade_lineage): the most versions of one run graded at once.
ARENA_LINEAGE_GRADE_LIMIT = env_int("ARENA_LINEAGE_GRADE_LIMIT", 8, minimum=2)
# At-least-once delivery (research/reliability.md §3.2): the database claim makes duplicates
# harmless, so redeliver rather than lose. The engine enforces the real wall limit; Celery's
# limits are backstops, and Redis must not redeliver a message while its task can still run.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
CELERY_TASK_SOFT_TIME_LIMIT = ARENA_EVAL_TIMEOUT_S + 60
CELERY_TASK_TIME_LIMIT = ARENA_EVAL_TIMEOUT_S + 120
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 2 * CELERY_TASK_TIME_LIMIT}
if CELERY_BROKER_URL.startswith("filesystem://"):
    # One host without Redis (bench/workers_gpu.py on the GPU machine): messages are files.
    _BROKER_DIR = VAR_DIR / "broker"
    _BROKER_DIR.mkdir(exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS |= {
        "data_folder_in": str(_BROKER_DIR),
        "data_folder_out": str(_BROKER_DIR),
        "control_folder": str(_BROKER_DIR / "control"),
    }
# The sweeper has a queue of its own, consumed beside beat (docker-compose.yml's beat): on the
# cpu queue it waited behind transcript parsings, and killed grades were taken back after
# 95-115 s instead of a lease and a sweep.
SWEEP_QUEUE = "sweep"
CELERY_TASK_ROUTES = {
    "submissions.sweep_evaluations": {"queue": SWEEP_QUEUE},
    "submissions.refresh_boards": {"queue": "cpu"},
    "submissions.launch_agent": {"queue": AGENT_QUEUE},
}
CELERY_BEAT_SCHEDULE = {
    "sweep-evaluations": {
        "task": "submissions.sweep_evaluations",
        "schedule": float(ARENA_SWEEP_EVERY_S),
    },
}
# --- end evaluation workers ---

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}
