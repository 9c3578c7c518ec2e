"""PoZoL settings: wiring only, driven by POZOL_* environment variables.

Parsing is strict: a value that does not parse stops start-up with a message
naming the variable, so a typo never silently becomes a default. Any variable
can instead be read from a file named by NAME_FILE (Docker/Kubernetes secrets).
Every variable is listed in .env.example.
"""

from __future__ import annotations

import ipaddress
import os
import sys
from datetime import timedelta
from pathlib import Path
from urllib.parse import unquote, urlparse

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
_UNSET = object()
# `make run` writes the configuration it chose here (apps/demo), so that
# manage.py in a new shell reaches the same database with the same keys.
DEMO_ENV_FILE = BASE_DIR / ".pozol" / "env"


def load_demo_env(path: Path = DEMO_ENV_FILE) -> bool:
    """Take POZOL_ variables from `make run`'s file when none is set at all.

    A deployment configured through its environment never reads the file: one
    POZOL_ variable is enough to ignore it. Says so on stderr when it is used.
    """
    if any(name.startswith("POZOL_") for name in os.environ) or not path.is_file():
        return False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        name, equals, value = line.partition("=")
        if not equals or not name.startswith("POZOL_"):
            raise ImproperlyConfigured(f"{path}:{number}: expected POZOL_NAME=value")
        os.environ[name] = value
    print(f"PoZoL: no POZOL_ variables are set; using what `make run` chose ({path})",
          file=sys.stderr)
    return True


load_demo_env()


def env_str(name: str, default: object = _UNSET) -> str:
    key = f"POZOL_{name}"
    file_key = f"{key}_FILE"
    if file_key in os.environ:
        try:
            return Path(os.environ[file_key]).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(
                f"{file_key}: cannot read {exc.filename}: {exc.strerror}") from None
    if key in os.environ:
        return os.environ[key]
    if default is _UNSET:
        raise ImproperlyConfigured(f"{key} (or {file_key}) must be set")
    return default  # type: ignore[return-value]


def env_bool(name: str, default: bool) -> bool:
    value = env_str(name, "").strip().lower()
    if value == "":
        return default
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"POZOL_{name}={value!r}: expected true/false, yes/no, 1/0")


def env_int(name: str, default: int, minimum: int = 0, maximum: int | None = None) -> int:
    value = env_str(name, "").strip()
    if value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"POZOL_{name}={value!r}: expected a whole number") from None
    if number < minimum:
        raise ImproperlyConfigured(f"POZOL_{name}={number}: must be at least {minimum}")
    if maximum is not None and number > maximum:
        raise ImproperlyConfigured(f"POZOL_{name}={number}: must be at most {maximum}")
    return number


def env_list(name: str, default: list[str]) -> list[str]:
    value = env_str(name, "")
    if value.strip() == "":
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def env_networks(name: str) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """A comma-separated list of CIDRs (10.0.0.0/8, ::1/128, or a bare address)."""
    networks = []
    for item in env_list(name, []):
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ImproperlyConfigured(
                f"POZOL_{name}: {item!r} is not an address or CIDR (like 10.0.0.0/8)") from None
    return networks


def env_rate(name: str, default: str) -> str:
    """A DRF throttle rate, "N/second|minute|hour|day" (or s/m/h/d, sec, min)."""
    value = env_str(name, "").strip() or default
    number, _, period = value.partition("/")
    if not (number.isdigit() and int(number) > 0
            and period in {"s", "sec", "second", "m", "min", "minute", "h", "hour", "d", "day"}):
        raise ImproperlyConfigured(
            f"POZOL_{name}={value!r}: expected a rate like 60/minute (per second, minute, "
            "hour or day)")
    return value


def database_from_url(url: str) -> dict:
    """postgres://user:pass@host:port/name or sqlite:///absolute/path."""
    parsed = urlparse(url)
    if parsed.scheme in {"postgres", "postgresql"}:
        if not parsed.path.strip("/"):
            raise ImproperlyConfigured("POZOL_DATABASE_URL: name the database after the /")
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parsed.path.lstrip("/")),
            "USER": unquote(parsed.username or ""),
            "PASSWORD": unquote(parsed.password or ""),
            "HOST": unquote(parsed.hostname or ""),
            "PORT": str(parsed.port or ""),
            "CONN_MAX_AGE": 60,
            "CONN_HEALTH_CHECKS": True,
            # No JIT: the overview's one grouped query over a fleet's hosts has a planner
            # cost past jit_above_cost on tables not yet analysed, and compiling it took
            # PostgreSQL 2-5 s for a query that runs in 1 ms (the first page after sign-in
            # took 6.9 s). Queries of a control plane never gain from JIT.
            "OPTIONS": {"options": "-c jit=off"},
        }
    if parsed.scheme == "sqlite":
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": parsed.path or ":memory:"}
    raise ImproperlyConfigured(
        f"POZOL_DATABASE_URL={url!r}: expected postgres://... or sqlite:///path"
    )


TELEMETRY_STORES = ("postgres", "victoriametrics")


def telemetry_store(value: str) -> str:
    store = value.strip().lower() or "postgres"
    if store not in TELEMETRY_STORES:
        raise ImproperlyConfigured(
            f"POZOL_TELEMETRY_STORE={value!r}: expected one of {', '.join(TELEMETRY_STORES)}")
    return store


def victoriametrics_url(url: str, store: str) -> str:
    """http(s)://host:port of a VictoriaMetrics single node; required by that store."""
    url = url.strip().rstrip("/")
    if not url:
        if telemetry_store(store) == "victoriametrics":
            raise ImproperlyConfigured("POZOL_TELEMETRY_STORE=victoriametrics needs "
                                       "POZOL_VICTORIAMETRICS_URL (like http://127.0.0.1:8428)")
        return ""
    parsed = urlparse(url)
    if parsed.scheme not in {"http", "https"} or not parsed.hostname:
        raise ImproperlyConfigured(
            f"POZOL_VICTORIAMETRICS_URL={url!r}: expected http(s)://host:port")
    return url


DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY", "insecure-debug-only-key" if DEBUG else _UNSET)
if not SECRET_KEY.strip():
    raise ImproperlyConfigured("POZOL_SECRET_KEY is empty")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
# Fernet key that encrypts SSH private keys at rest; losing it loses the keys.
CREDENTIAL_KEY = env_str("CREDENTIAL_KEY", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "django_celery_beat",
    "django_filters",
    "apps.api",
    "apps.accounts",
    "apps.ops",
    "apps.fleet",
    "apps.tuning",
    "apps.benchmarks",
    "apps.snapshots",
    "apps.replication",
    "apps.clones",
    "apps.wal",
    "apps.drills",
    "apps.telemetry",
    "apps.alerts",
    "apps.events",
    "apps.tenants",
    "apps.audit",
    "apps.experiments",
    "apps.provisioning",
    "apps.rollouts",
    "axes",
    "csp",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "apps.accounts.roles.OperatorOnlyMiddleware",
    "apps.ops.ui_errors.DomainErrorMiddleware",
    # After DomainErrorMiddleware: it sees a refusal before that turns it into a redirect.
    "apps.audit.middleware.AuditMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "pozol.urls"
WSGI_APPLICATION = "pozol.wsgi.application"
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
            # Times, durations, sizes and pg_settings contexts in one format on every
            # page, without a {% load %} in each template (apps/common/formatting.py).
            "builtins": ["apps.common.formatting"],
        },
    },
]

DATABASES = {"default": database_from_url(env_str("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/pozol"))}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
     "OPTIONS": {"min_length": 12}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Axes first: it refuses a locked-out username+address before any password is checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "fleet:overview"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / ".staticfiles")))
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = DEBUG

# HTTPS is declared, never guessed: the demo serves plain HTTP on 127.0.0.1, where
# secure cookies and an HTTPS redirect would lock the operator out.
BEHIND_TLS_PROXY = env_bool("BEHIND_TLS_PROXY", False)
HTTPS = env_bool("HTTPS", BEHIND_TLS_PROXY)
if BEHIND_TLS_PROXY:
    # Only safe when the proxy sets (and overwrites) this header on every request.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", HTTPS)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SESSION_COOKIE_HTTPONLY = True
SECURE_SSL_REDIRECT = HTTPS and not DEBUG
_HSTS_SECONDS = env_int("HSTS_SECONDS", 31536000)
SECURE_HSTS_SECONDS = _HSTS_SECONDS if HTTPS and not DEBUG else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Every page passes this policy: no inline scripts or event handlers anywhere (data-
# attributes read by static/pozol.js instead). Inline style *attributes* stay allowed
# for progress-bar widths; a style attribute cannot run script.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "apps.accounts.authentication.HashedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Operator-only unless a view says otherwise (apps/accounts/roles.py).
    "DEFAULT_PERMISSION_CLASSES": ["apps.accounts.roles.IsOperator"],
    "DEFAULT_PAGINATION_CLASS": "apps.api.pagination.Pagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "apps.api.errors.exception_handler",
    # The API speaks JSON only: one body format to validate, document and fuzz.
    "DEFAULT_PARSER_CLASSES": ["apps.api.parsers.BoundedJSONParser"],
    # OPTIONS on a detail route looks the object up first: 404 where GET says 404.
    "DEFAULT_METADATA_CLASS": "apps.api.metadata.ScopedMetadata",
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_THROTTLE_CLASSES": [
        "apps.accounts.throttling.AnonRateThrottle",
        "apps.accounts.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env_rate("THROTTLE_ANON", "60/minute"),
        "user": env_rate("THROTTLE_USER", "1200/minute"),
        "failed_token": env_rate("THROTTLE_FAILED_TOKEN", "10/minute"),
    },
    # Behind N proxies the client is the Nth address from the right of X-Forwarded-For.
    "NUM_PROXIES": env_int("PROXY_COUNT", 0) or None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "PoZoL API",
    "DESCRIPTION": "Control plane for PostgreSQL servers on ZFS.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Benchmarks have a "mode" too: name the link's so neither gets a hashed name.
    "ENUM_NAME_OVERRIDES": {"LinkModeEnum": "apps.replication.models.ReplicationLink.Mode",
                            "DeliveryStatusEnum": "apps.alerts.models.Delivery.Status",
                            "DeliveryEventEnum": "apps.alerts.models.Delivery.Event",
                            "ChannelKindEnum": "apps.alerts.models.Channel.Kind",
                            "AlertKindEnum": "apps.common.alert_kinds.choices",
                            "RolloutStatusEnum": "apps.rollouts.models.Rollout.Status",
                            "RolloutHostStateEnum": "apps.rollouts.models.RolloutHost.State"},
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums",
                             "apps.api.schema.add_error_responses"],
    # Never send the schema URL to swagger.io's validator.
    "SWAGGER_UI_SETTINGS": {"validatorUrl": None},
    "SERVE_PERMISSIONS": [
        "rest_framework.permissions.AllowAny" if env_bool("PUBLIC_API_DOCS", False)
        else "rest_framework.permissions.IsAuthenticated"],
}

# Throttle counts live in Redis, so every
# gunicorn worker (and every web machine) sees the same counts.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": env_str("CACHE_URL", "") or env_str("REDIS_URL", "redis://127.0.0.1:6379/0"),
        "KEY_PREFIX": env_str("CACHE_KEY_PREFIX", "pozol"),
        # A Redis that hangs must not hang requests: the limits then count locally.
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
    },
}

# Sign-in lockout (django-axes, in the database so all web processes share it):
# after LOGIN_FAILURE_LIMIT wrong passwords for one user name from one address,
# that pair is refused until LOGIN_COOLOFF_MINUTES pass without another try.
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_CLIENT_IP_CALLABLE = "apps.accounts.throttling.client_ip"
AXES_VERBOSE = False

CELERY_BROKER_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
# Redis, with a Celery 5.7.0 crash on a lost broker turned into a reconnect (see there).
CELERY_BROKER_TRANSPORT = "apps.ops.broker:Transport"
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = False
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A worker waits out a Redis outage of any length (Celery gives up after 100 tries
# by default and the worker exits); the database keeps the operations meanwhile and
# the sweeper delivers them again once Redis is back.
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# Telemetry's collector runs on a queue of its own, served by one worker process
# (docker-compose `telemetry`, `make run`): that process alone holds the pooled
# SSH connections sampling needs, one per host, however many workers there are.
# With POZOL_TELEMETRY_SHARDS=N each shard's round goes to its own queue
# (`telemetry`, `telemetry-1`, ...), each served by one process, on any machine:
# the router reads the shard from the task's arguments (apps.telemetry.shards).
CELERY_TASK_ROUTES = ("apps.telemetry.shards.route",)

POZOL = {
    "DISCOVERY_INTERVAL": env_int("DISCOVERY_INTERVAL", 900, minimum=60),
    "SWEEP_INTERVAL": env_int("SWEEP_INTERVAL", 15, minimum=1),
    "OPERATION_LEASE": env_int("OPERATION_LEASE", 120, minimum=2),
    "OPERATION_MAX_ATTEMPTS": env_int("OPERATION_MAX_ATTEMPTS", 5, minimum=1),
    "SSH_CONNECT_TIMEOUT": env_int("SSH_CONNECT_TIMEOUT", 10, minimum=1),
    "DEFAULT_WORK_DIR": env_str("DEFAULT_WORK_DIR", "/var/lib/pozol"),
    # Finished operations and their logs older than this are deleted (discovery
    # alone makes 96 a day per host), unless a plan or a benchmark refers to them.
    "OPERATION_RETENTION_DAYS": env_int("OPERATION_RETENTION_DAYS", 30, minimum=1),
    "OPERATION_PURGE_INTERVAL": env_int("OPERATION_PURGE_INTERVAL", 3600, minimum=60),
    # How often snapshot policies are checked (a policy's own periods decide what is due).
    "SNAPSHOT_POLICY_INTERVAL": env_int("SNAPSHOT_POLICY_INTERVAL", 60, minimum=10),
    # How often links are checked (each link's own interval decides when it runs).
    "REPLICATION_TICK_INTERVAL": env_int("REPLICATION_TICK_INTERVAL", 60, minimum=10),
    "CLONE_EXPIRE_INTERVAL": env_int("CLONE_EXPIRE_INTERVAL", 60, minimum=10),
    # WAL archives (apps/wal): how often each is checked (archiver, listing, retention).
    "WAL_CHECK_INTERVAL": env_int("WAL_CHECK_INTERVAL", 60, minimum=10),
    # A pool fuller than this percentage raises its host's pool_capacity alert: the
    # default threshold of apps/alerts' pool_capacity rule, which operators edit.
    "POOL_CAPACITY_ALERT": env_int("POOL_CAPACITY_ALERT", 80, minimum=1),
    # Telemetry: a sample of every reachable pinned host this often, sampled by
    # this many threads of each collector process (a slow host holds one thread).
    "TELEMETRY_INTERVAL": env_int("TELEMETRY_INTERVAL", 60, minimum=5),
    "TELEMETRY_THREADS": env_int("TELEMETRY_THREADS", 16, minimum=1),
    # Collector shards: hosts with id mod N == k are sampled by the worker serving
    # shard k's queue (apps.telemetry.shards); 1 is the single collector.
    "TELEMETRY_SHARDS": env_int("TELEMETRY_SHARDS", 1, minimum=1, maximum=1024),
    # How long each resolution is kept (raw, 5-minute, hourly), and how often
    # rollups are made and old data pruned.
    "TELEMETRY_RAW_HOURS": env_int("TELEMETRY_RAW_HOURS", 48, minimum=1),
    "TELEMETRY_FIVE_MINUTE_DAYS": env_int("TELEMETRY_FIVE_MINUTE_DAYS", 30, minimum=1),
    "TELEMETRY_HOURLY_DAYS": env_int("TELEMETRY_HOURLY_DAYS", 400, minimum=1),
    "TELEMETRY_ROLLUP_INTERVAL": env_int("TELEMETRY_ROLLUP_INTERVAL", 300, minimum=60),
    # Where samples' history is kept: "postgres" (the raw rows and rollups above), or
    # "victoriametrics" at POZOL_VICTORIAMETRICS_URL (its own -retentionPeriod keeps
    # the history; the database keeps only current values and a few minutes of raw
    # rows). README, "Telemetry in VictoriaMetrics".
    "TELEMETRY_STORE": telemetry_store(env_str("TELEMETRY_STORE", "postgres")),
    "VICTORIAMETRICS_URL": victoriametrics_url(env_str("VICTORIAMETRICS_URL", ""),
                                               env_str("TELEMETRY_STORE", "postgres")),
    "VICTORIAMETRICS_TIMEOUT": env_int("VICTORIAMETRICS_TIMEOUT", 10, minimum=1),
    # /metrics (Prometheus): a scraper's bearer token, and/or the addresses (CIDRs)
    # that may scrape without one. Neither set: /metrics answers 403.
    "METRICS_TOKEN": env_str("METRICS_TOKEN", ""),
    "METRICS_ALLOWED_CIDRS": env_networks("METRICS_ALLOWED_CIDRS"),
    # This control plane's name on its hosts: clone datasets carry it (pozol:owner), and
    # the orphan reconciler only ever touches datasets that carry it. Two control planes
    # sharing a host need different names.
    "INSTANCE": env_str("INSTANCE", "pozol"),
    # How often restore drills are checked for being due (each schedule has its own
    # period), and how often clone orphans are looked for.
    "DRILL_TICK_INTERVAL": env_int("DRILL_TICK_INTERVAL", 300, minimum=10),
    "RECONCILE_INTERVAL": env_int("RECONCILE_INTERVAL", 900, minimum=60),
    # An orphan clone dataset or postmaster younger than this is left alone: it may be
    # one whose operation has not recorded it yet.
    "ORPHAN_GRACE_MINUTES": env_int("ORPHAN_GRACE_MINUTES", 30, minimum=0),
    # Alerts: how often rules are evaluated and due deliveries sent; where webhooks
    # may go (networks or host names; empty: nowhere); attempts of one delivery and
    # the first retry's delay (doubled each time); the link put into messages.
    "ALERT_INTERVAL": env_int("ALERT_INTERVAL", 30, minimum=1),
    "ALERT_WEBHOOK_ALLOW": env_list("ALERT_WEBHOOK_ALLOW", []),
    "ALERT_DELIVERY_ATTEMPTS": env_int("ALERT_DELIVERY_ATTEMPTS", 5, minimum=1),
    "ALERT_RETRY_SECONDS": env_int("ALERT_RETRY_SECONDS", 30, minimum=1),
    "ALERT_WEBHOOK_TIMEOUT": env_int("ALERT_WEBHOOK_TIMEOUT", 10, minimum=1),
    "BASE_URL": env_str("BASE_URL", "http://127.0.0.1:8000"),
    "SCRUB_TICK_INTERVAL": env_int("SCRUB_TICK_INTERVAL", 300, minimum=10),
}

# Alert mail goes through Django's mail settings.
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10, minimum=1)
DEFAULT_FROM_EMAIL = env_str("EMAIL_FROM", "pozol@localhost")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}
