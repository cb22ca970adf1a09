"""Concord settings: everything that differs between machines comes from the environment (see README).

The rule (README, "Configuration"): DEBUG is off unless DEBUG=1. SECRET_KEY comes from the environment (at least 50
characters while DEBUG is off); without it, a key made once under var/ (mode 0600) serves the embedded default and
commands run on one machine, while the production web server (`python -m config.web`) refuses to start. HTTPS-only
cookies and HSTS are on when DEBUG is off, except on SQLite, the embedded default served over plain HTTP on loopback.
"""

from datetime import timedelta
from pathlib import Path

from config.env import env, secret_key

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"

DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = secret_key("SECRET_KEY", key_file=VAR_DIR / "secret_key", debug=DEBUG)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served from here rather than a CDN
    "axes",
    "auditlog",  # the audit trail (docs/operations.md, "The audit trail")
    "accounts",
    "generation",
    "annotation",
    "judging",
    "analysis",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "config.security.MalformedInputMiddleware",  # 400 for NUL bytes and out-of-range integers in the address
    "config.csp.CSPMiddleware",  # django-csp's, with the headers built once (config/csp.py)
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # A study participant's session reaches the annotator's pages and API only (annotation/middleware.py).
    "annotation.middleware.ParticipantScopeMiddleware",
    # Who changed a user in the admin site, for the audit trail's signal entries (common/audit.py).
    "auditlog.middleware.AuditlogMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "config.errors.MethodNotAllowedPageMiddleware",  # an empty 405 gets the styled page (config/errors.py)
    "config.errors.ServiceErrorPageMiddleware",  # a service's refusal a page lets through: its 4xx page
    "config.retry.RetryReadMiddleware",  # a read whose database connection dropped is run once more (config/retry.py)
    "axes.middleware.AxesMiddleware",  # last: turns a locked-out login into its 429 answer
]

ROOT_URLCONF = "config.urls"
CSRF_FAILURE_VIEW = "config.errors.csrf_failure"  # an expired form gets the styled 403 page
WSGI_APPLICATION = "config.wsgi.application"

CONTEXT_PROCESSORS = [
    "django.template.context_processors.request",
    "django.contrib.auth.context_processors.auth",
    "django.contrib.messages.context_processors.messages",
    "accounts.context_processors.roles",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": CONTEXT_PROCESSORS},
    },
]

DATABASES = {"default": env.db_url("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'concord.sqlite3'}")}
# A kept connection (60 s) is checked before a request reuses it, so one the database dropped (a restart, an idle
# timeout) is replaced rather than failing that request with a 500.
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"].endswith("postgresql") and env.bool("DATABASE_PREPARED_STATEMENTS", default=True):
    # Bind parameters on the server and let psycopg prepare a statement after its 5th use on a connection: the
    # annotator API's statements then skip PostgreSQL's planner, which costs more than running them (measured in
    # benchmarks/README.md, "Annotation API"). Set DATABASE_PREPARED_STATEMENTS=0 behind a pooler that cannot keep prepared statements
    # (PgBouncer in transaction mode before 1.21).
    DATABASES["default"].setdefault("OPTIONS", {}).update({"server_side_binding": True, "prepare_threshold": 5})
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # Several writers (web, in-process jobs) share the file: wait for the lock rather than fail (the busy timeout), and
    # in WAL mode readers never wait for a writer nor a writer for readers. Writers still take turns, so long writers
    # (imports) commit in short transactions: a save waits for one of them, never a whole import (benchmarks/README.md,
    # "A save during a large import").
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL;",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTHENTICATION_BACKENDS = [
    "accounts.backends.AxesBackend",  # first: refuses a locked-out user or address before any password is checked
    "django.contrib.auth.backends.ModelBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 8}},
    {"NAME": "accounts.passwords.RevokeApiTokensOnChange"},  # Django's password-changed hook, not a rule
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
WHITENOISE_USE_FINDERS = True  # serve static/ directly when collectstatic has not run (embedded default)

# Browser security. The pages' JavaScript reads the CSRF token from the page (the form's hidden input), never from
# the cookie, so the cookie can be HttpOnly.
EMBEDDED = DATABASES["default"]["ENGINE"].endswith("sqlite3")
# The demo app (`load_demo`, demo/*.csv, the live demo pool) is part of the embedded default only; CONCORD_DEMO=1
# installs it on PostgreSQL too (the test suite does). Its logins are kept in DEMO_LOGINS_FILE (mode 0600).
if env.bool("CONCORD_DEMO", default=EMBEDDED):
    INSTALLED_APPS.append("demo")
    # The pool pages say what the pool `demo-live` waits for (demo/services.py, live_pool_waiting).
    CONTEXT_PROCESSORS.append("demo.context_processors.demo_live")
DEMO_LOGINS_FILE = Path(env.str("CONCORD_DEMO_LOGINS", default="") or VAR_DIR / "demo-logins.json")
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = True
CSRF_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_SECURE = env.bool("SECURE_COOKIES", default=not DEBUG and not EMBEDDED)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# HSTS is sent on HTTPS responses only; a year, as Django's deployment check asks, whenever cookies are HTTPS-only.
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", 31_536_000 if SESSION_COOKIE_SECURE else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=True)
# Redirect plain HTTP to HTTPS (off by default: a TLS proxy in front usually does it).
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=False)
# Behind a TLS proxy that sets X-Forwarded-Proto (and strips it from clients), trust it to mark HTTPS requests.
if env.bool("SECURE_PROXY_SSL_HEADER", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"
# No inline scripts or styles anywhere: JavaScript lives in static/ files, JSON data in <script type="application/json">.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# A request body (an upload of generation files, say) over MAX_UPLOAD_MB megabytes is refused with 413 before it is
# read (config/security.py); the files of an import are stored in pieces and read as streams (annotation/services/
# imports/jobs.py). Files over 2.5 MB wait in a temporary file, not in memory, while the request is read.
CONCORD_MAX_UPLOAD_MB = env.int("MAX_UPLOAD_MB", 100, minimum=1)
# A study bundle read by verify_study / import_study (docs/operations.md, "Study bundles"): each member and all of them
# together, decompressed, are read up to these sizes and refused beyond.
CONCORD_STUDY_MAX_FILE_MB = env.int("STUDY_MAX_FILE_MB", 256, minimum=1)
CONCORD_STUDY_MAX_TOTAL_MB = env.int("STUDY_MAX_TOTAL_MB", 1024, minimum=1)

# API tokens (`POST /api/auth/token/`) expire this many days after they were issued.
API_TOKEN_TTL = timedelta(days=env.int("API_TOKEN_TTL_DAYS", 30, minimum=1))

# Login, token and admin-login attempts (django-axes, accounts/lockout.py): after LOGIN_FAILURE_LIMIT failures for one
# (username, address) pair, or LOGIN_ADDRESS_FAILURE_LIMIT from one address whatever the usernames, further attempts
# are refused with 429 for LOGIN_COOLOFF_MINUTES, counted from the failure that locked (attempts during a lock do not
# extend it); a successful login by any route resets the pair's count.
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
CONCORD_LOGIN_ADDRESS_FAILURE_LIMIT = env.int("LOGIN_ADDRESS_FAILURE_LIMIT", 50, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("LOGIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_HANDLER = "accounts.lockout.LockoutHandler"
AXES_RESET_ON_SUCCESS = True
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_HTTP_RESPONSE_CODE = 429
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False
# Behind N reverse proxies, the client's address is the N-th from the right of X-Forwarded-For (accounts/backends.py).
CONCORD_TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", 0, minimum=0)
AXES_CLIENT_IP_CALLABLE = "accounts.backends.client_address"
# A study link (docs/guide-researcher.md, "Recruiting on Prolific") answers at most this many visits per client address
# and minute (the same address as the lockout counts); more get 429 until the minute is over.
CONCORD_STUDY_JOIN_PER_MINUTE = env.int("STUDY_JOIN_PER_MINUTE", 30, minimum=1)
# Where participants reach this server: the start of the study link `manage.py pool_recruit` prints (the pool page
# uses the address it was opened at).
CONCORD_PUBLIC_URL = env.str("PUBLIC_URL", default="http://localhost:8000")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # First, so that a call without credentials gets 401 with "WWW-Authenticate: Token" rather than 403.
        "accounts.authentication.TokenAuthentication",  # DRF's, with expiry
        "rest_framework.authentication.SessionAuthentication",  # enforces CSRF for browser calls
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": [
        "config.security.StrictJSONParser",  # 400 for integers beyond 64 bits and deep nesting
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_METADATA_CLASS": "config.security.MethodsOnlyMetadata",  # OPTIONS: name and methods, no fields
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # A service's refusal (common.errors.ServiceError) as its status and JSON body; anything else stays a 500.
    "EXCEPTION_HANDLER": "common.errors.api_exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Concord API",
    "DESCRIPTION": "Generation jobs, blinded annotation and reports (README). Roles: annotator, researcher, admin.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Researchers and admins only: the schema describes their fields (judge labels, is_gold, the heuristic).
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated", "accounts.roles.IsResearcher"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # Every signed-in operation also answers 401 and 403 (common/openapi.py).
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "common.openapi.refusals_declared"],
}

# Celery: with no broker, tasks run in-process (the embedded default).
CELERY_BROKER_URL = env.broker_url("CELERY_BROKER_URL")
CELERY_TASK_ALWAYS_EAGER = CELERY_BROKER_URL is None
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "default"
# A chunk of a job that names the vllm engine goes to CONCORD_VLLM_QUEUE (generation/engines/routing.py).
CELERY_TASK_ROUTES = ["generation.engines.routing.task_route", {"generation.tasks.*": {"queue": "generation"}}]
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=60)}
# Crash recovery (generation/jobs/leases.py): a running chunk holds a lease its heartbeat renews every third of
# it; a chunk whose runner is gone is queued again within a lease and a sweep. Transient database and broker errors
# are retried this many times, after 1, 2, 4, ... seconds (the first pause, doubled each time up to 60 s).
CONCORD_CHUNK_LEASE_SECONDS = env.int("CONCORD_CHUNK_LEASE_SECONDS", 30, minimum=3)
CONCORD_TRANSIENT_RETRIES = env.int("CONCORD_TRANSIENT_RETRIES", 5, minimum=0)
CONCORD_TRANSIENT_BACKOFF_SECONDS = 1.0
# Models behind an endpoint (generation/engines/endpoint/client.py): a 429, 5xx or timeout is retried after this
# pause, doubled each time up to 60 s, unless the endpoint says when (Retry-After); the model says how often.
CONCORD_ENDPOINT_BACKOFF_SECONDS = 1.0
# A chunk sent to the broker but claimed by no worker within this many seconds is sent again (a broker that lost its
# queue); generation/jobs/runner.py's sweeper does it.
CONCORD_CHUNK_UNCLAIMED_SECONDS = env.int("CONCORD_CHUNK_UNCLAIMED_SECONDS", 120, minimum=5)
# Upper bounds of a job's parameters (generation/parameters.py); a bigger value is refused, naming the field.
CONCORD_MAX_NUM_BEAMS = env.int("CONCORD_MAX_NUM_BEAMS", 8, minimum=1)
CONCORD_MAX_SAMPLES = env.int("CONCORD_MAX_SAMPLES", 20, minimum=1)
CONCORD_MAX_NEW_TOKENS = env.int("CONCORD_MAX_NEW_TOKENS", 512, minimum=1)
CONCORD_MAX_BATCH_SIZE = env.int("CONCORD_MAX_BATCH_SIZE", 256, minimum=1)

# Django's cache: built reports (keyed by their pool's data version) and rendered figures (analysis/services.py,
# analysis/plots). In-process by default; CACHE_URL=redis://host:6379/2 shares it between web processes.
CACHE_URL = env.str("CACHE_URL", default="") or ""
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}
        if CACHE_URL.startswith(("redis://", "rediss://", "unix://"))
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "concord"}
    )
}

# Generation: where models are cached by workers, and the default registered model.
CONCORD_MODEL_CACHE_SIZE = env.int("CONCORD_MODEL_CACHE_SIZE", 1, minimum=1)
# A GGUF model is dequantized on every load, most of a worker's start; its first load keeps the result here as
# safetensors, which later loads read instead (benchmarks/README.md, "Test suite"). Empty: no copy.
CONCORD_CONVERTED_MODELS_DIR = env.str("CONCORD_CONVERTED_MODELS_DIR", default=str(VAR_DIR / "models")) or ""
# Prob-TANGO's rewriting needs an English spaCy pipeline with a dependency parser (generation/rewriting.py).
CONCORD_SPACY_MODEL = (env.str("CONCORD_SPACY_MODEL", default="") or "").strip() or "en_core_web_sm"
# The generation engine of this worker for jobs that name none: a name in ENGINES (generation/engines/), checked when
# the app starts (generation/apps.py). Job creation checks the engine, the model and the device on this host; "off"
# leaves that to the workers (a web host that queues work for GPU workers elsewhere). vLLM's LLM(...) takes the extra
# arguments in CONCORD_VLLM_OPTIONS (JSON).
CONCORD_ENGINE = (env.str("CONCORD_ENGINE", default="") or "hf").strip().lower()
CONCORD_ENGINE_CHECK = "off" if not env.bool("CONCORD_ENGINE_CHECK", default=True) else "local"
CONCORD_VLLM_OPTIONS = env.str("CONCORD_VLLM_OPTIONS", default="") or ""
CONCORD_VLLM_QUEUE = env.str("CONCORD_VLLM_QUEUE", default="") or "generation-gpu"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"client_errors_without_traceback": {"()": "config.log_filters.ClientErrorsWithoutTraceback"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "filters": ["client_errors_without_traceback"]},
    },
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    # django-axes logs every successful login at INFO; lockouts and failures still come through at WARNING.
    "loggers": {"axes": {"level": "WARNING"}},
}
