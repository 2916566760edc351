"""Aptix settings: everything comes from the environment (see .env.example).

The embedded default needs nothing set: SQLite under var/, the in-memory channel layer and the
built-in offline model. Secrets never have a default outside DEBUG.
"""

from __future__ import annotations

import os
import re
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from aptix.env import env_bool, env_float, env_int, env_list, env_str
from aptix.redis_options import REDIS_OPTIONS, redis_channel_layers

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("APTIX_VAR_DIR", BASE_DIR / "var"))


DEBUG = env_bool("DEBUG", False)

SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Set it in the environment (`make run` generates one in var/)."
        )
    SECRET_KEY = "insecure-debug-only-key-never-use-in-production"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    # aptix before channels: its `runworker` (MCP host started before the first message) wins.
    "aptix",
    "channels",
    "django_htmx",
    "template_partials",
    "modes",
    "tools",
    "agents",
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
    "aptix.inputs.RejectUnstorableInput",
    "csp.middleware.CSPMiddleware",
]

# Content-Security-Policy (django-csp): scripts, styles, images and connections (the websocket
# included: CSP 3 'self' covers ws/wss to this host) only from this site, no inline script, no
# framing. Rendered Markdown links external images instead of loading them (agents/web/markdown.py).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "font-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

ROOT_URLCONF = "aptix.urls"
ASGI_APPLICATION = "aptix.asgi.application"
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
            ],
        },
    },
]

# Database: SQLite under var/ unless DATABASE_URL says otherwise.
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'aptix.sqlite3'}"),
        conn_max_age=0,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    # A busy timeout lets concurrent writers (async tasks, admin) wait instead of failing.
    # IMMEDIATE transactions take the write lock up front, so a read-then-write transaction (the
    # session manager's) waits for another writer instead of failing with "database is locked".
    # WAL lets readers (the live stream, the admin) work while a run writes its events, and
    # synchronous=NORMAL makes each small event commit cheap; both are safe in WAL mode.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}
else:
    DATABASES["default"]["TEST"] = {"NAME": "test_aptix"}
    # PostgreSQL through Django's psycopg pool: every thread (requests, sockets' ORM calls, the
    # event writer) borrows one of at most APTIX_DB_POOL_MAX connections and waits up to
    # APTIX_DB_POOL_TIMEOUT seconds for one, instead of opening its own and meeting the server's
    # max_connections ("too many clients") in a burst. Size: processes × max ≤ max_connections.
    if env_bool("APTIX_DB_POOL", True):
        pool_max = env_int("APTIX_DB_POOL_MAX", 10, minimum=1)
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": min(env_int("APTIX_DB_POOL_MIN", 2), pool_max),
            "max_size": pool_max,
            "timeout": env_float("APTIX_DB_POOL_TIMEOUT", 30.0, minimum=0.1),
        }
    else:  # e.g. behind PgBouncer in transaction mode: a connection per thread, checked before reuse
        DATABASES["default"]["CONN_MAX_AGE"] = env_int("APTIX_DB_CONN_MAX_AGE", 60)
        DATABASES["default"]["CONN_HEALTH_CHECKS"] = True

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Channel layer: in-memory in one process; Redis when REDIS_URL is set (several processes).
REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CHANNEL_LAYERS = redis_channel_layers(REDIS_URL)  # timeouts set deliberately: aptix/redis_options.py
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
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
STATIC_ROOT = VAR_DIR / "static"
MEDIA_URL = "media/"
MEDIA_ROOT = VAR_DIR / "media"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns on every start without it
WHITENOISE_USE_FINDERS = True  # serve straight from static/ too, so a missed collectstatic still works

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
if env_bool("APTIX_HTTPS", False):
    # Served over HTTPS only (usually behind a TLS-terminating proxy that sets X-Forwarded-Proto):
    # secure cookies, plain HTTP redirected, and HSTS (APTIX_HSTS_SECONDS; 0 turns it off).
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    SECURE_HSTS_SECONDS = env_int("APTIX_HSTS_SECONDS", 31_536_000, minimum=0)
    # Subdomains and the browsers' preload list commit the whole domain, which Aptix cannot know is
    # all HTTPS: opt-in, and Django's reminders for them (W005, W021) are silenced while they are off.
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("APTIX_HSTS_INCLUDE_SUBDOMAINS", False)
    SECURE_HSTS_PRELOAD = env_bool("APTIX_HSTS_PRELOAD", False)
    SILENCED_SYSTEM_CHECKS = [
        *([] if SECURE_HSTS_INCLUDE_SUBDOMAINS else ["security.W005"]),
        *([] if SECURE_HSTS_PRELOAD else ["security.W021"]),
    ]

# Agent runtime (used by the reasoner; documented in README and .env.example).
APTIX_LLM_MODEL = env_str("APTIX_LLM_MODEL")
# The model provider (agents/llm/client.py): any OpenAI-compatible server; with neither the key nor
# the base URL set, the built-in offline model answers. The Images API model for image_gen, the
# seconds before a model call times out, and the SDK's retries on 429/5xx/connection errors.
OPENAI_API_KEY = env_str("OPENAI_API_KEY")
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL")
APTIX_IMAGE_MODEL = env_str("APTIX_IMAGE_MODEL", "gpt-image-1")
APTIX_LLM_TIMEOUT = env_float("APTIX_LLM_TIMEOUT", 60.0)
APTIX_LLM_MAX_RETRIES = env_int("APTIX_LLM_MAX_RETRIES", 2)
# MCP servers (tools/mcp/config.py): the config file, relative to the repo root unless absolute, and
# whether processes that serve aptix.asgi (Daphne on its first scope, runworker at start) start them;
# the tests turn it off.
APTIX_MCP_CONFIG = BASE_DIR / env_str("APTIX_MCP_CONFIG", "mcp.json")
APTIX_MCP_AUTOSTART = env_bool("APTIX_MCP_AUTOSTART", True)
# Whether serving processes end orphaned turns on a timer (every APTIX_RUN_HEARTBEAT seconds); the
# tests turn it off and sweep when they mean to.
APTIX_RUN_SWEEP = env_bool("APTIX_RUN_SWEEP", True)
APTIX_MAX_STEPS = env_int("APTIX_MAX_STEPS", 10, minimum=1)
# Consecutive replies that only repeat tool calls already made in the turn before the run stops and
# answers from what it has (agents/run/limits.py).
APTIX_MAX_REPEATS = env_int("APTIX_MAX_REPEATS", 2, minimum=1)
APTIX_TOKEN_BUDGET = env_int("APTIX_TOKEN_BUDGET", 200_000, minimum=1)
# Tool schemas per model request (OpenAI refuses more than 128); the rest are left out, and said so.
APTIX_MAX_TOOLS = env_int("APTIX_MAX_TOOLS", 128, minimum=1)
# Characters of one tool result the model gets (more is cut, with a marker saying so), and the
# characters the trace (the tool.result event) keeps for people.
APTIX_TOOL_RESULT_CHARS = env_int("APTIX_TOOL_RESULT_CHARS", 40_000, minimum=100)
APTIX_TOOL_RESULT_STORE_CHARS = env_int("APTIX_TOOL_RESULT_STORE_CHARS", 200_000, minimum=100)
# Tokens of the model's context a request may fill (earlier turns drop oldest first to fit), and the
# room kept for the reply (at most a quarter of the context).
APTIX_CONTEXT_TOKENS = env_int("APTIX_CONTEXT_TOKENS", 32_000, minimum=1_000)
APTIX_REPLY_TOKENS = env_int("APTIX_REPLY_TOKENS", 4_096, minimum=1)
# Several providers and models (agents/llm/catalog.py); without the file, OPENAI_* define one model,
# and without those the built-in offline model serves.
APTIX_MODELS_CONFIG = env_str("APTIX_MODELS_CONFIG", "models.json")
APTIX_ASK_FOLLOWUP = env_bool("APTIX_ASK_FOLLOWUP", False)
# TUL-007 §4.3: "ask" (default) holds a model's mode change until the user consents (a proposal's
# option button, or the approval card); "trust" lets the model change the mode at once.
APTIX_MODE_CHANGE_CONSENT = env_str("APTIX_MODE_CHANGE_CONSENT", "ask").lower()
if APTIX_MODE_CHANGE_CONSENT not in ("ask", "trust"):
    raise ImproperlyConfigured(
        f"APTIX_MODE_CHANGE_CONSENT must be 'ask' or 'trust', not {APTIX_MODE_CHANGE_CONSENT!r}."
    )
# Seconds between a running turn's heartbeats; one silent for 6 of them is ended as interrupted.
APTIX_RUN_HEARTBEAT = env_float("APTIX_RUN_HEARTBEAT", 10.0, minimum=0.01)
# Seconds a worker's running turns get to end when it is asked to stop (SIGTERM).
APTIX_WORKER_GRACE = env_float("APTIX_WORKER_GRACE", 30.0)
# Session streams (agents/web/streams.py): live views per user and per session in one process, the
# events a reconnect may replay (a page further behind is told to reload), the largest frame a
# client may send (the stream is one-way), and seconds between checks that the socket's access holds.
APTIX_WS_MAX_PER_USER = env_int("APTIX_WS_MAX_PER_USER", 20, minimum=1)
APTIX_WS_MAX_PER_SESSION = env_int("APTIX_WS_MAX_PER_SESSION", 8, minimum=1)
APTIX_WS_REPLAY_MAX = env_int("APTIX_WS_REPLAY_MAX", 400, minimum=1)
APTIX_WS_MAX_MESSAGE = env_int("APTIX_WS_MAX_MESSAGE", 4096, minimum=128)
APTIX_WS_RECHECK = env_float("APTIX_WS_RECHECK", 60.0, minimum=0.01)
APTIX_WS_CATCHUP = env_float("APTIX_WS_CATCHUP", 5.0, minimum=0.01)  # a quiet turn's events looked up (consumers.py)
APTIX_WS_COMPRESSION = env_bool("APTIX_WS_COMPRESSION", True)  # permessage-deflate (manage.py aptix_serve)
# Turns the session page draws at first; earlier ones load as the user scrolls up (web/views/history.py).
APTIX_SESSION_PAGE_TURNS = env_int("APTIX_SESSION_PAGE_TURNS", 20, minimum=1)

LOG_LEVEL = env_str("LOG_LEVEL", "INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "structured": {"()": "aptix.logging.StructuredFormatter"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "structured"},
    },
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        # No own handler: records propagate to the root handler (and to pytest's caplog).
        "aptix": {"level": LOG_LEVEL},
        "django": {"handlers": ["console"], "level": "INFO", "propagate": False},
    },
}

# --- Login lockout and request rate limits (README "Rate limits") ---------------------------------
# Failed logins are counted by django-axes in the database (Admin → Axes shows them) and, at the
# limit, further logins from that address as that user are refused with 429 until the cool-off ends.
# Request rates are counted by django-ratelimit in Django's cache: per process without REDIS_URL, in
# Redis (shared by every process) with it.
INSTALLED_APPS += ["axes"]
MIDDLEWARE += ["axes.middleware.AxesMiddleware"]  # last, as django-axes requires
AUTHENTICATION_BACKENDS = ["aptix.lockout.LockoutBackend", "django.contrib.auth.backends.ModelBackend"]
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": REDIS_OPTIONS,
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Proxies in front of Aptix that append the client's address to X-Forwarded-For (0: none, the
# connection's address is the client's). Limits per address need the real one.
APTIX_TRUSTED_PROXIES = env_int("APTIX_TRUSTED_PROXIES", 0)

AXES_FAILURE_LIMIT = env_int("APTIX_LOGIN_FAILURE_LIMIT", 5)  # 0 turns the lockout off
AXES_ENABLED = AXES_FAILURE_LIMIT > 0
AXES_COOLOFF_TIME = timedelta(minutes=env_float("APTIX_LOGIN_COOLOFF_MINUTES", 15.0, minimum=0.1))


def env_lockout_parameters(name: str, default: str) -> list[str | list[str]]:
    """Comma-separated alternatives, each `username`, `ip` or `username+ip`: what a failure count is
    kept for (django-axes' AXES_LOCKOUT_PARAMETERS)."""
    fields = {"username": "username", "ip": "ip_address"}
    parameters: list[str | list[str]] = []
    for group in env_list(name, [default]):
        names = [part.strip() for part in group.split("+")]
        if not names or any(part not in fields for part in names):
            raise ImproperlyConfigured(f"{name}: {group!r} is not username, ip or username+ip.")
        combined = [fields[part] for part in dict.fromkeys(names)]
        parameters.append(combined[0] if len(combined) == 1 else combined)
    return parameters


# By username and address together (default): guessing one account's password from one address is
# stopped, and nobody can lock a user out from elsewhere. `ip` also stops one address spraying many.
AXES_LOCKOUT_PARAMETERS = env_lockout_parameters("APTIX_LOGIN_LOCKOUT_BY", "username+ip")
# A successful login forgets that user's failures (typos do not add up over the day), unless a count
# is kept for an address alone: logging in to one's own account would then wipe the count of a spray.
AXES_RESET_ON_SUCCESS = all("username" in parameter for parameter in AXES_LOCKOUT_PARAMETERS)
AXES_CLIENT_IP_CALLABLE = "aptix.ratelimits.client_ip"
AXES_LOCKOUT_CALLABLE = "aptix.lockout.lockout_response"
AXES_HTTP_RESPONSE_CODE = 429
AXES_VERBOSE = False  # no start-up banner in every process's log


def env_rate(name: str, default: str) -> str | None:
    """A django-ratelimit rate such as `30/m` or `100/5m` (s, m, h, d); `off` or `0` turns it off."""
    value = env_str(name, default).strip().lower()
    if value in {"0", "off"}:
        return None
    if not re.fullmatch(r"[1-9]\d*/([1-9]\d*)?[smhd]", value):
        raise ImproperlyConfigured(f"{name} must be a rate such as 30/m, 100/5m or 1000/h, or off; not {value!r}.")
    return value


# Turns (new messages, new conversations) per user, API requests per token, and requests with an
# invalid bearer token per client address (past it, that address's bearer requests all get 429).
APTIX_RATE_TURNS = env_rate("APTIX_RATE_TURNS", "30/m")
APTIX_RATE_API = env_rate("APTIX_RATE_API", "120/m")
APTIX_RATE_BAD_TOKENS = env_rate("APTIX_RATE_BAD_TOKENS", "20/m")
# --- end of login lockout and rate limits ---------------------------------------------------------
