"""One env-driven settings file. With no environment set, everything is embedded:
SQLite and Celery's filesystem broker under var/, the in-process channel layer.

Every variable is read through the env_* helpers below, which name the variable when
its value is bad. Importing this file writes nothing: var/ and its secret key are made
when a process starts (supervisor/core/var_dir.py), the broker folders when the broker is
first opened (supervisor/broker.py)."""

import os
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def env(name, default=""):
    """A setting from the environment, or from the file named by NAME_FILE (for secrets)."""
    path = os.environ.get(f"{name}_FILE")
    if path:
        try:
            return Path(path).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE: cannot read {path!r} ({exc})") from exc
    return os.environ.get(name, default)


def env_bool(name, default=False):
    value = env(name, "").strip().lower()
    if value == "":
        return default
    if value not in _TRUE | _FALSE:
        raise ImproperlyConfigured(
            f"{name}={value!r}: expected one of 1/true/yes/on, 0/false/no/off"
        )
    return value in _TRUE


def _number(name, default, kind, what):
    value = env(name, "").strip()
    if not value:
        return default
    try:
        return kind(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r}: expected {what}") from None


def env_int(name, default):
    return _number(name, default, int, "a whole number")


def env_float(name, default):
    return _number(name, default, float, "a number")


def env_list(name, default=""):
    return [part.strip() for part in env(name, default).split(",") if part.strip()]


def env_path(name, default):
    value = env(name, "").strip()
    return Path(value) if value else Path(default)


BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = env_path("SUPERVISOR_VAR_DIR", BASE_DIR / "var")


def database_from_url(url):
    """postgres://user:pass@host:port/name -> a Django DATABASES entry (psycopg 3, pooled)."""
    parts = urlsplit(url)
    options = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    pool = options.pop("pool", "true").lower() not in {"0", "false", "no"}
    db = {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parts.path.lstrip("/")),
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "",
        "PORT": str(parts.port or ""),
        "OPTIONS": options,
    }
    # A server that does not answer is given up on, not waited for (the OS default is minutes).
    db["OPTIONS"].setdefault("connect_timeout", 5)
    if pool:
        db["OPTIONS"]["pool"] = {
            "min_size": 1,
            "max_size": env_int("DATABASE_POOL_SIZE", 10),
            # How long a request waits for a connection before answering 503 (psycopg_pool's
            # default is 30 s): while PostgreSQL is down, every request waits this long.
            "timeout": env_float("DATABASE_POOL_TIMEOUT", 5),
        }
    # With the pool, Django passes psycopg_pool's check_connection as its `check`: a
    # connection broken by a PostgreSQL restart is replaced when taken, not handed out.
    db["CONN_HEALTH_CHECKS"] = True
    return db


def sqlite_database(path):
    # WAL + IMMEDIATE + a busy timeout: web, worker and beat all write.
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(path),
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }


DEBUG = env_bool("DEBUG", False)
# Embedded default: a key made once per checkout under var/ when a process starts
# (supervisor/core/var_dir.py); read here once it exists.
_key_file = VAR_DIR / "secret_key"
SECRET_KEY = env("SECRET_KEY", "") or (_key_file.read_text().strip() if _key_file.exists() else "")

PORT = env_int("PORT", 8000)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")
CSRF_FAILURE_VIEW = "supervisor.api_errors.csrf_failure"  # JSON under /api/

# Served over HTTPS (production): cookies only over TLS, HSTS, plain HTTP redirected.
# Off by default because `make run` serves plain HTTP on loopback.
HTTPS = env_bool("SUPERVISOR_HTTPS", False)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = HTTPS
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", HTTPS)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000 if HTTPS else 0)
# What `check --deploy` asks for; set them to 0 when other hosts of the domain are HTTP.
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", HTTPS)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", HTTPS)
# Behind a proxy that ends TLS: the header it sets, e.g. X-Forwarded-Proto.
_proxy_header = env("SECURE_PROXY_SSL_HEADER", "").strip()
if _proxy_header:
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _proxy_header.upper().replace("-", "_"), "https")
# The reverse proxies in front, for the client's address (the failed-log-in limit):
# how many there are, or their addresses and networks; unset, X-Forwarded-For is ignored
# (supervisor/client_address.py).
SUPERVISOR_TRUSTED_PROXIES = env("SUPERVISOR_TRUSTED_PROXIES", "")
SESSION_COOKIE_SAMESITE = CSRF_COOKIE_SAMESITE = "Lax"

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "supervisor.core",
    "supervisor.web",
    "supervisor.notify",
    "supervisor.live",
    "supervisor.connectors",
    "supervisor.ops",
    "supervisor.demo",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Every /api/ answer is JSON, the error handlers' below it included.
    "supervisor.api_errors.ApiErrorsAsJsonMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    # A page's filter or form value no query can carry: a 400 naming it, not a 500.
    "supervisor.web.unstorable_input.UnstorableInputMiddleware",
    # Last, so that it sees a view's exception first: database down -> 503 + Retry-After.
    "supervisor.unavailable.DatabaseUnavailableMiddleware",
]

# No inline scripts or styles anywhere: the pages work under a strict policy.
from django.utils.csp import CSP  # noqa: E402

SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
    # No page needs <base>: an injected one cannot move relative links and scripts elsewhere.
    "base-uri": [CSP.NONE],
}

ROOT_URLCONF = "supervisor.urls"
ASGI_APPLICATION = "supervisor.asgi.application"
WSGI_APPLICATION = None

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
                "supervisor.web.freshness.page_freshness",
                "supervisor.web.context_processors.admin_counts",
                "supervisor.web.time_zones.times_choice",
            ],
        },
    },
]

DATABASE_URL = env("DATABASE_URL", "")
if DATABASE_URL:
    DATABASES = {"default": database_from_url(DATABASE_URL)}
else:
    DATABASES = {
        "default": sqlite_database(
            env_path("SUPERVISOR_SQLITE_PATH", VAR_DIR / "supervisor.sqlite3")
        )
    }
    # A file, not memory: tests start real workers and servers that must share it.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
# Django's, but a password is hashed with no pooled connection held (web/password_checks.py).
# PasswordBackend decides every log-in (it never hands one on); Django's ModelBackend
# stays listed so that sessions logged in before it came, which name ModelBackend, stay
# logged in (Django re-reads a session's user only through a listed backend).
AUTHENTICATION_BACKENDS = [
    "supervisor.web.password_checks.PasswordBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# How many password checks (~0.6 s of CPU each) one web process runs at once, at the
# lowest CPU priority; a log-in past them is answered 503 with Retry-After at once,
# before the database is asked.
SUPERVISOR_PASSWORD_CHECKS = env_int("SUPERVISOR_PASSWORD_CHECKS", 1)
# The most of one core those checks take over time, past a burst of about three
# log-ins; a log-in past it is answered 503 with Retry-After (web/password_checks.py).
SUPERVISOR_PASSWORD_CHECK_SHARE = env_float("SUPERVISOR_PASSWORD_CHECK_SHARE", 0.25)
if not 0 < SUPERVISOR_PASSWORD_CHECK_SHARE <= 1:
    raise ImproperlyConfigured(
        f"SUPERVISOR_PASSWORD_CHECK_SHARE={SUPERVISOR_PASSWORD_CHECK_SHARE}: "
        "give a share of one core, more than 0 and at most 1"
    )
if SUPERVISOR_PASSWORD_CHECKS < 1:
    raise ImproperlyConfigured(
        f"SUPERVISOR_PASSWORD_CHECKS={SUPERVISOR_PASSWORD_CHECKS}: expected 1 or more"
    )
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "web:overview"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"  # made with var/ (WhiteNoise warns when it is missing)
# Served by WhiteNoise straight from static/, so `make run` needs no collectstatic.
WHITENOISE_USE_FINDERS = True

# Celery: the filesystem transport needs no server; Redis when a team outgrows it.
CELERY_BROKER_URL = env("CELERY_BROKER_URL", "filesystem://")
_broker_dir = VAR_DIR / "broker"
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
        "polling_interval": 0.05,
    }
    if CELERY_BROKER_URL.startswith("filesystem")
    else {"visibility_timeout": 3600}
)
if CELERY_BROKER_URL.startswith("filesystem"):
    # Kombu's own writes a message file in two steps a worker can fall between.
    CELERY_BROKER_TRANSPORT = "supervisor.broker:Transport"
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# Celery's scheduler, but an entry with nothing to do (no T3 source to follow) is not sent.
CELERY_BEAT_SCHEDULER = "supervisor.beat:Scheduler"
# Time-based flags open within one interval of their time; lost evaluations are redone.
SUPERVISOR_SWEEP_INTERVAL = env_float("SUPERVISOR_SWEEP_INTERVAL", 5.0)
# How often the T3 Code sources' state databases are read for new rows.
SUPERVISOR_T3_FOLLOW_INTERVAL = env_float("SUPERVISOR_T3_FOLLOW_INTERVAL", 1.0)
CELERY_BEAT_SCHEDULE = {
    # A sweep not started within its interval is dropped: the next one does its work,
    # and a busy worker does not pile sweeps up.
    "sweep": {
        "task": "supervisor.sweep",
        "schedule": SUPERVISOR_SWEEP_INTERVAL,
        "options": {"expires": SUPERVISOR_SWEEP_INTERVAL},
    },
    "notify_sweep": {
        "task": "supervisor.notify_sweep",
        "schedule": SUPERVISOR_SWEEP_INTERVAL,
        "options": {"expires": SUPERVISOR_SWEEP_INTERVAL},
    },
    # Sent only while a T3 source exists (supervisor/beat.py).
    "follow_t3": {
        "task": "supervisor.follow_t3",
        "schedule": SUPERVISOR_T3_FOLLOW_INTERVAL,
        "options": {"expires": SUPERVISOR_T3_FOLLOW_INTERVAL},
    },
    # Deletes what is past its retention (SUPERVISOR_RETENTION), in bounded batches.
    "prune": {"task": "supervisor.prune", "schedule": 3600.0, "options": {"expires": 3600}},
}

CHANNEL_LAYER_URL = env("CHANNEL_LAYER_URL", "")


def redis_channel_layer(url: str) -> dict:
    """The channel layer on Redis at `url`."""
    from redis.exceptions import ConnectionError as RedisConnectionError

    return {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            "hosts": [
                {
                    "address": url,
                    # After a Redis restart each pooled connection is stale: without a
                    # retry its first command fails (a live socket refused with a 500);
                    # with one, it reconnects and goes on.
                    "retry_on_error": [RedisConnectionError],
                    # A socket waits on its channel with BZPOPMIN, 5 s at a time
                    # (channels_redis's brpop_timeout). redis-py's read timeout was 5 s
                    # too: an idle socket raced the two and was closed every 10 to 30 s.
                    # Reads get the block plus ample slack; a Redis that went silent is
                    # still noticed within seconds.
                    "socket_timeout": 20,
                    "socket_connect_timeout": 5,
                    "socket_keepalive": True,
                }
            ],
            # A page's socket falls behind during an ingest burst: past this many
            # waiting frames channels_redis drops them (the default is 100).
            "capacity": 2000,
        },
    }


if CHANNEL_LAYER_URL:
    CHANNEL_LAYERS = {"default": redis_channel_layer(CHANNEL_LAYER_URL)}
else:
    CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels.layers.InMemoryChannelLayer", "CONFIG": {"capacity": 2000}}
    }

# The cache holds rate-limit counters only. Several web processes must share it: Redis
# (the channel layer's unless CACHE_URL says otherwise); one process keeps it in memory.
CACHE_URL = env("CACHE_URL", CHANNEL_LAYER_URL)
if CACHE_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": CACHE_URL,
            "KEY_PREFIX": "supervisor",
            # A Redis that is down must not hold a request: the limits are then skipped.
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Rate limits, REQUESTS/SECONDS or 0 for none (supervisor/rate_limit.py): ingest requests
# per source token; failed log-ins per address and account, and per address.
SUPERVISOR_RATE_LIMITS = {
    kind: (variable, env(variable, default))
    for kind, variable, default in [
        ("ingest", "SUPERVISOR_INGEST_RATE", "600/60"),
        ("login", "SUPERVISOR_LOGIN_RATE", "5/300"),
        ("login_address", "SUPERVISOR_LOGIN_ADDRESS_RATE", "30/300"),
    ]
}

# Ingest limits of contract §1.
INGEST_MAX_EVENTS = 1000
INGEST_MAX_BYTES = 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = INGEST_MAX_BYTES + 64 * 1024

# Durations of contract §5 (seconds); sources and scenarios may override them.
SUPERVISOR_DETECTION = {
    "delivery_grace": env_int("SUPERVISOR_DELIVERY_GRACE", 60),
    "orphan_grace": env_int("SUPERVISOR_ORPHAN_GRACE", 60),
    "wake_timeout": env_int("SUPERVISOR_WAKE_TIMEOUT", 600),
    "stuck_after": env_int("SUPERVISOR_STUCK_AFTER", 1800),
    "wake_start_timeout": env_int("SUPERVISOR_WAKE_START_TIMEOUT", 120),
    "dispatch_lag": env_int("SUPERVISOR_DISPATCH_LAG", 5),
    "source_silence": env_int("SUPERVISOR_SOURCE_SILENCE", 900),
    "spawn_timeout": env_int("SUPERVISOR_SPAWN_TIMEOUT", 120),
    "cancel_grace": env_int("SUPERVISOR_CANCEL_GRACE", 60),
}

# Actions (cancel, continue, deliver), in seconds: one connector call's timeout; the
# lease a worker holds while sending (past it, the sweep takes the action back); how
# long a queued action waits for its message before the sweep enqueues it again;
# retries with exponential backoff from `backoff`.
SUPERVISOR_ACTIONS = {
    "timeout": env_int("SUPERVISOR_ACTION_TIMEOUT", 10),
    "lease": env_int("SUPERVISOR_ACTION_LEASE", 60),
    "queue_grace": env_int("SUPERVISOR_ACTION_QUEUE_GRACE", 30),
    "max_attempts": env_int("SUPERVISOR_ACTION_ATTEMPTS", 5),
    "backoff": env_int("SUPERVISOR_ACTION_BACKOFF", 2),
}

# Retention, in days (0: kept forever): accepted events and replayed dead letters;
# resolved flags; finished actions; sent notifications; the change log (the audit page
# reads it, so it is kept longest). What is never pruned: core/retention.py.
SUPERVISOR_RETENTION = {
    "events": env_int("SUPERVISOR_RETAIN_EVENTS_DAYS", 30),
    "flags": env_int("SUPERVISOR_RETAIN_FLAGS_DAYS", 90),
    "actions": env_int("SUPERVISOR_RETAIN_ACTIONS_DAYS", 90),
    "notifications": env_int("SUPERVISOR_RETAIN_NOTIFICATIONS_DAYS", 30),
    "changes": env_int("SUPERVISOR_RETAIN_CHANGES_DAYS", 365),
}

# Notifications, in seconds: one send's timeout; the lease a worker holds while sending;
# how long a pending message waits for its Celery message before the sweep enqueues it;
# backoff doubling from `backoff` up to `max_backoff`, for at most `max_attempts` sends
# (then the message is failed, until an admin sends it again); how long the
# acknowledge/snooze links in messages stay valid.
SUPERVISOR_NOTIFY = {
    "timeout": env_int("SUPERVISOR_NOTIFY_TIMEOUT", 10),
    "lease": env_int("SUPERVISOR_NOTIFY_LEASE", 60),
    "queue_grace": env_int("SUPERVISOR_NOTIFY_QUEUE_GRACE", 30),
    "backoff": env_int("SUPERVISOR_NOTIFY_BACKOFF", 5),
    "max_backoff": env_int("SUPERVISOR_NOTIFY_MAX_BACKOFF", 900),
    # With the backoff above: about four hours of trying before a message is failed.
    "max_attempts": env_int("SUPERVISOR_NOTIFY_MAX_ATTEMPTS", 24),
    "link_max_age": env_int("SUPERVISOR_NOTIFY_LINK_MAX_AGE", 24 * 3600),
}
# Links in messages point here: by default at this server's own address (`make run`
# binds HOST:PORT), on the loopback when it listens on every address.
_host = env("HOST", "127.0.0.1").strip("[]")
_host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(_host, _host)
_host = f"[{_host}]" if ":" in _host else _host
SUPERVISOR_BASE_URL = env("SUPERVISOR_BASE_URL", "") or f"http://{_host}:{PORT}"
# Where alert channels and webhook connectors may send (supervisor/core/outbound.py):
# link-local and cloud metadata addresses never; loopback and private ones only when
# this is on. On by default for `make run` (the demo's receiver is on loopback) and the
# tests; off by default behind HTTPS, as production runs.
SUPERVISOR_OUTBOUND_ALLOW_PRIVATE = env_bool("SUPERVISOR_OUTBOUND_ALLOW_PRIVATE", not HTTPS)
# Email channels: one mailer, configured from the environment.
MAILERS = {
    "default": {
        "BACKEND": env("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend"),
        "OPTIONS": {
            "host": env("EMAIL_HOST", "localhost"),
            "port": env_int("EMAIL_PORT", 25),
            "username": env("EMAIL_HOST_USER", ""),
            "password": env("EMAIL_HOST_PASSWORD", ""),
            "use_tls": env_bool("EMAIL_USE_TLS", False),
            "use_ssl": env_bool("EMAIL_USE_SSL", False),
            "timeout": env_int("SUPERVISOR_NOTIFY_TIMEOUT", 10),
        },
    }
}
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", "supervisor@localhost")

_log_level = env("LOG_LEVEL", "INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "redact": {"()": "supervisor.log_redaction.RedactSecrets"},
        "one_line_for_client_errors": {"()": "supervisor.request_log.OneLineForClientErrors"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["one_line_for_client_errors", "redact"],
        }
    },
    "root": {"handlers": ["console"], "level": _log_level},
    "loggers": {
        "django.db.backends": {"level": "INFO"},
        # The outbox reads a refusal's HTTP status from the warnings Apprise captures
        # per send (notify/senders.py): they are kept whatever LOG_LEVEL says.
        "apprise": {
            "level": "WARNING" if _log_level.upper() in ("ERROR", "CRITICAL") else _log_level
        },
    },
}
