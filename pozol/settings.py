"""PoZoL settings: wiring only, driven by POZOL_* environment variables.

Parsing is strict: a value that does not parse stops start-up with a message
naming the variable, so a typo never silently becomes a default. Any variable
can instead be read from a file named by NAME_FILE (Docker/Kubernetes secrets).
Every variable is listed in .env.example.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlparse

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
_UNSET = object()


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


def env_int(name: str, default: int, minimum: int = 0) -> int:
    value = env_str(name, "").strip()
    if value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"POZOL_{name}={value!r}: expected a whole number") from None
    if number < minimum:
        raise ImproperlyConfigured(f"POZOL_{name}={number}: must be at least {minimum}")
    return number


def env_list(name: str, default: list[str]) -> list[str]:
    value = env_str(name, "")
    if value.strip() == "":
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


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
        }
    if parsed.scheme == "sqlite":
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": parsed.path or ":memory:"}
    raise ImproperlyConfigured(
        f"POZOL_DATABASE_URL={url!r}: expected postgres://... or sqlite:///path"
    )


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
    "apps.accounts",
    "apps.ops",
    "apps.fleet",
    "apps.tuning",
    "apps.benchmarks",
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
        },
    },
]

DATABASES = {"default": database_from_url(env_str("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/pozol"))}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
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

SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "apps.accounts.authentication.HashedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "apps.accounts.api_errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "PoZoL API",
    "DESCRIPTION": "Control plane for PostgreSQL servers on ZFS.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

CELERY_BROKER_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = False
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

POZOL = {
    "DISCOVERY_INTERVAL": env_int("DISCOVERY_INTERVAL", 900, minimum=60),
    "SWEEP_INTERVAL": env_int("SWEEP_INTERVAL", 15, minimum=1),
    "OPERATION_LEASE": env_int("OPERATION_LEASE", 120, minimum=2),
    "OPERATION_MAX_ATTEMPTS": env_int("OPERATION_MAX_ATTEMPTS", 5, minimum=1),
    "SSH_CONNECT_TIMEOUT": env_int("SSH_CONNECT_TIMEOUT", 10, minimum=1),
    "DEFAULT_WORK_DIR": env_str("DEFAULT_WORK_DIR", "/var/lib/pozol"),
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}
