"""Aptix settings: everything comes from the environment, each variable read through its
declaration in aptix/env/ (documented in docs/configuration.md and .env.example, both generated).

The embedded default needs nothing set: SQLite under var/, the in-memory channel layer and the
built-in offline model. Secrets never have a default outside DEBUG. A value that cannot be used stops
the start with ImproperlyConfigured naming the variable and the problem.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from aptix import env
from aptix.email_url import email_settings
from aptix.envtypes import LockoutBy, LockoutParameters, Rate, Setting, SettingError, origin_of
from aptix.redis_options import REDIS_OPTIONS, redis_channel_layers

Value = TypeVar("Value")  # not upper-case: Django takes upper-case names as settings


def read(setting: Setting[Value]) -> Value:
    """The variable's value, or ImproperlyConfigured saying what is wrong with it."""
    try:
        return setting.read()
    except SettingError as exc:
        raise ImproperlyConfigured(str(exc)) from None


BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(read(env.APTIX_VAR_DIR) or BASE_DIR / "var")


DEBUG = read(env.DEBUG)

SECRET_KEY = read(env.SECRET_KEY)
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Set it in the environment (`make run` generates one in var/)."
        )
    SECRET_KEY = "insecure-debug-only-key-never-use-in-production"

ALLOWED_HOSTS = read(env.ALLOWED_HOSTS)
CSRF_TRUSTED_ORIGINS = read(env.CSRF_TRUSTED_ORIGINS)

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
    "files",
    "tools",
    "usage",
    "projects",
    "agents",
    "automations",
    "identity",
    "connections",
]

MIDDLEWARE = [
    "aptix.logcontext.RequestIds",  # first: X-Request-ID on every answer; the ids the request's log lines carry
    "aptix.tracing.RouteNaming",  # names the request's span after its route (aptix/tracing.py)
    "django.middleware.security.SecurityMiddleware",
    # The MCP Apps' origin serves the apps' frames and nothing else (aptix/apps_origin.py).
    "aptix.apps_origin.AppsOriginOnly",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # django-csp's is a MiddlewareMixin: below the last sync-only middleware (this one) it runs in the
    # async part of the chain, where each of its two hooks is a hop to the request's thread.
    "csp.middleware.CSPMiddleware",
    "aptix.inputs.RejectUnstorableInput",
    # a view's 404/403/400 page rendered on the request's thread, not on a throwaway one that would
    # keep a pooled connection (aptix/error_pages.py)
    "aptix.error_pages.ClientErrorsOnTheRequestThread",
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
                "automations.context_processors.inbox_bell",  # the header's bell: the inbox's count
            ],
        },
    },
]

# Database: SQLite under var/ unless DATABASE_URL says otherwise.
DATABASES = {
    "default": dj_database_url.parse(
        read(env.DATABASE_URL) or f"sqlite:///{VAR_DIR / 'aptix.sqlite3'}",
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
    if read(env.APTIX_DB_POOL):
        pool_max = read(env.APTIX_DB_POOL_MAX)
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": min(read(env.APTIX_DB_POOL_MIN), pool_max),
            "max_size": pool_max,
            "timeout": read(env.APTIX_DB_POOL_TIMEOUT),
        }
    else:  # e.g. behind PgBouncer in transaction mode: a connection per thread, checked before reuse
        DATABASES["default"]["CONN_MAX_AGE"] = read(env.APTIX_DB_CONN_MAX_AGE)
        DATABASES["default"]["CONN_HEALTH_CHECKS"] = True

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Channel layer: in-memory in one process; Redis when REDIS_URL is set (several processes).
REDIS_URL = read(env.REDIS_URL)
if REDIS_URL:
    CHANNEL_LAYERS = redis_channel_layers(REDIS_URL)  # timeouts set deliberately: aptix/redis_options.py
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "aptix.local_channel_layer.LocalChannelLayer"}}  # one process

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

# E-mail (invitations, aptix/invites.py): SMTP from APTIX_EMAIL_URL, else written to the output.
try:
    _email = email_settings(read(env.APTIX_EMAIL_URL))
except ValueError as exc:
    raise ImproperlyConfigured(str(exc)) from None
EMAIL_BACKEND, EMAIL_HOST, EMAIL_PORT = _email.backend, _email.host, _email.port
EMAIL_HOST_USER, EMAIL_HOST_PASSWORD = _email.user, _email.password
EMAIL_USE_TLS, EMAIL_USE_SSL = _email.use_tls, _email.use_ssl
EMAIL_TIMEOUT = 10  # seconds: an unreachable server must not hold the inviter's request for long
DEFAULT_FROM_EMAIL = read(env.APTIX_EMAIL_FROM)

# Uploads (files/uploads.py): every uploaded file streams to a temporary file and the upload stops at
# APTIX_UPLOAD_MAX_BYTES, so no upload is ever held whole in memory.
FILE_UPLOAD_HANDLERS = ["files.uploads.LimitedUploadHandler"]
APTIX_UPLOAD_MAX_BYTES = read(env.APTIX_UPLOAD_MAX_BYTES)
APTIX_UPLOAD_USER_QUOTA = read(env.APTIX_UPLOAD_USER_QUOTA)
# Model-written SQL over the uploaded tables (files/sandbox.py): per query.
APTIX_FILES_QUERY_TIMEOUT = read(env.APTIX_FILES_QUERY_TIMEOUT)
APTIX_FILES_QUERY_MEMORY_MB = read(env.APTIX_FILES_QUERY_MEMORY_MB)
APTIX_FILES_QUERY_THREADS = read(env.APTIX_FILES_QUERY_THREADS)
# Shapes refused at ingestion (files/ingest): absurd tables and zip bombs.
# Each upload is read in a process of its own (files/ingest/child.py), within an address space and a time;
# DuckDB spills past APTIX_FILES_INGEST_MEMORY_MB rather than grow that process.
APTIX_FILES_INGEST_MEMORY_MB = read(env.APTIX_FILES_INGEST_MEMORY_MB)
APTIX_FILES_INGEST_CHILD_MEMORY_MB = read(env.APTIX_FILES_INGEST_CHILD_MEMORY_MB) or APTIX_FILES_INGEST_MEMORY_MB + 1024
APTIX_FILES_INGEST_TIMEOUT = read(env.APTIX_FILES_INGEST_TIMEOUT)
APTIX_FILES_MAX_ROWS = read(env.APTIX_FILES_MAX_ROWS)
APTIX_KNOWLEDGE_RANKING = read(env.APTIX_KNOWLEDGE_RANKING)
APTIX_FILES_MAX_COLUMNS = read(env.APTIX_FILES_MAX_COLUMNS)
APTIX_FILES_MAX_UNZIPPED = read(env.APTIX_FILES_MAX_UNZIPPED)
# Local copies of stored DuckDB files when the storage is not a local directory (files/storage.py).
FILES_CACHE_DIR = VAR_DIR / "files-cache"

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
if read(env.APTIX_HTTPS):
    # Served over HTTPS only (usually behind a TLS-terminating proxy that sets X-Forwarded-Proto):
    # secure cookies, plain HTTP redirected, and HSTS (APTIX_HSTS_SECONDS; 0 turns it off).
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    SECURE_HSTS_SECONDS = read(env.APTIX_HSTS_SECONDS)
    # Subdomains and the browsers' preload list commit the whole domain, which Aptix cannot know is
    # all HTTPS: opt-in, and Django's reminders for them (W005, W021) are silenced while they are off.
    SECURE_HSTS_INCLUDE_SUBDOMAINS = read(env.APTIX_HSTS_INCLUDE_SUBDOMAINS)
    SECURE_HSTS_PRELOAD = read(env.APTIX_HSTS_PRELOAD)
    SILENCED_SYSTEM_CHECKS = [
        *([] if SECURE_HSTS_INCLUDE_SUBDOMAINS else ["security.W005"]),
        *([] if SECURE_HSTS_PRELOAD else ["security.W021"]),
    ]

# Agent runtime (used by the reasoner; documented in docs/configuration.md and .env.example).
APTIX_LLM_MODEL = read(env.APTIX_LLM_MODEL)
# The model provider (agents/llm/client.py): any OpenAI-compatible server; with neither the key nor
# the base URL set, the built-in offline model answers. The Images API model for image_gen, the
# seconds before a model call times out, and the SDK's retries on 429/5xx/connection errors.
OPENAI_API_KEY = read(env.OPENAI_API_KEY)
OPENAI_BASE_URL = read(env.OPENAI_BASE_URL)
APTIX_IMAGE_MODEL = read(env.APTIX_IMAGE_MODEL)
APTIX_LLM_TIMEOUT = read(env.APTIX_LLM_TIMEOUT)
APTIX_LLM_MAX_RETRIES = read(env.APTIX_LLM_MAX_RETRIES)
# MCP servers (tools/mcp/config.py): the config file, relative to the repo root unless absolute, and
# whether processes that serve aptix.asgi (Daphne on its first scope, runworker at start) start them;
# the tests turn it off.
APTIX_MCP_CONFIG = BASE_DIR / read(env.APTIX_MCP_CONFIG)
APTIX_MCP_AUTOSTART = read(env.APTIX_MCP_AUTOSTART)
# Fernet keys (newest first) that encrypt users' MCP credentials (connections/sealing.py); from the
# environment only, never a file under var/: a copy of the database must not carry its key.
APTIX_SECRETS_KEY = read(env.APTIX_SECRETS_KEY) or []
APTIX_MCP_INSTRUCTIONS_CHARS = read(env.APTIX_MCP_INSTRUCTIONS_CHARS)
# Where MCP Apps are framed from (agents/web/views/apps.py; aptix/apps_origin.py keeps that origin to
# them alone): a host name or port of this server other than the one people open. aptix_serve sets it
# to its port + 1 when unset (apps_origin.serve_apps_on).
APTIX_MCP_APPS_ORIGIN = (read(env.APTIX_MCP_APPS_ORIGIN) or "").rstrip("/")
if APTIX_MCP_APPS_ORIGIN:
    _apps = urlsplit(APTIX_MCP_APPS_ORIGIN)
    if _apps.scheme not in ("http", "https") or not _apps.hostname or _apps.path or _apps.query:
        raise ImproperlyConfigured(
            "APTIX_MCP_APPS_ORIGIN must be an origin such as https://apps.aptix.example.com, "
            f"not {APTIX_MCP_APPS_ORIGIN!r}."
        )
    CONTENT_SECURITY_POLICY["DIRECTIVES"]["frame-src"] = [APTIX_MCP_APPS_ORIGIN]
    _apps_host = urlsplit(APTIX_MCP_APPS_ORIGIN).hostname or ""
    if "*" not in ALLOWED_HOSTS and _apps_host not in ALLOWED_HOSTS:
        ALLOWED_HOSTS = [*ALLOWED_HOSTS, _apps_host]
# A project's instructions in its sessions' system prompt (agents/run/pipeline.py), within this many characters.
APTIX_PROJECT_INSTRUCTIONS_CHARS = read(env.APTIX_PROJECT_INSTRUCTIONS_CHARS)
# Whether serving processes end orphaned turns on a timer (every APTIX_RUN_HEARTBEAT seconds); the
# tests turn it off and sweep when they mean to.
APTIX_RUN_SWEEP = read(env.APTIX_RUN_SWEEP)
# Automations (automations/): the schedule kept by the processes that run turns, retries, e-mail links.
APTIX_AUTOMATIONS = read(env.APTIX_AUTOMATIONS)
APTIX_AUTOMATIONS_TICK = read(env.APTIX_AUTOMATIONS_TICK)
APTIX_AUTOMATION_RETRY_SECONDS = read(env.APTIX_AUTOMATION_RETRY_SECONDS)
APTIX_PUBLIC_URL = read(env.APTIX_PUBLIC_URL).rstrip("/")
APTIX_MAX_STEPS = read(env.APTIX_MAX_STEPS)
# Consecutive replies that only repeat tool calls already made in the turn before the run stops and
# answers from what it has (agents/run/limits.py).
APTIX_MAX_REPEATS = read(env.APTIX_MAX_REPEATS)
APTIX_TOKEN_BUDGET = read(env.APTIX_TOKEN_BUDGET)
APTIX_QUOTA_TURN_RESERVE = read(env.APTIX_QUOTA_TURN_RESERVE)
# Tool schemas per model request (OpenAI refuses more than 128); the rest are left out, and said so.
APTIX_MAX_TOOLS = read(env.APTIX_MAX_TOOLS)
# Beyond this share of the context (or APTIX_MAX_TOOLS) tools are found on demand (tool_search).
APTIX_TOOL_SCHEMA_SHARE = read(env.APTIX_TOOL_SCHEMA_SHARE)
APTIX_TOOL_SEARCH_RESULTS = read(env.APTIX_TOOL_SEARCH_RESULTS)
# Characters of one tool result the model gets (more is cut, with a marker saying so), and the
# characters the trace (the tool.result event) keeps for people.
APTIX_TOOL_RESULT_CHARS = read(env.APTIX_TOOL_RESULT_CHARS)
APTIX_TOOL_RESULT_STORE_CHARS = read(env.APTIX_TOOL_RESULT_STORE_CHARS)
# Characters per version of a session's document (agents/documents): a longer one is refused.
APTIX_DOCUMENT_MAX_CHARS = read(env.APTIX_DOCUMENT_MAX_CHARS)
# Tokens of the model's context a request may fill (earlier turns drop oldest first to fit), and the
# room kept for the reply (at most a quarter of the context).
APTIX_CONTEXT_TOKENS = read(env.APTIX_CONTEXT_TOKENS)
APTIX_REPLY_TOKENS = read(env.APTIX_REPLY_TOKENS)
# Several providers and models (agents/llm/catalog.py); without the file, OPENAI_* define one model,
# and without those the built-in offline model serves.
APTIX_MODELS_CONFIG = read(env.APTIX_MODELS_CONFIG)
APTIX_ASK_FOLLOWUP = read(env.APTIX_ASK_FOLLOWUP)
APTIX_AUTO_TITLES = read(env.APTIX_AUTO_TITLES)
# TUL-007 §4.3: "ask" (default) holds a model's mode change until the user consents (a proposal's
# option button, or the approval card); "trust" lets the model change the mode at once.
APTIX_MODE_CHANGE_CONSENT = read(env.APTIX_MODE_CHANGE_CONSENT)
APTIX_CATALOG_REVIEW = read(env.APTIX_CATALOG_REVIEW)
APTIX_CATALOG_TEST_CONCURRENCY = read(env.APTIX_CATALOG_TEST_CONCURRENCY)
# Seconds between a running turn's heartbeats; one silent for 6 of them is ended as interrupted.
APTIX_RUN_HEARTBEAT = read(env.APTIX_RUN_HEARTBEAT)
# Seconds a worker's running turns get to end when it is asked to stop (SIGTERM).
APTIX_WORKER_GRACE = read(env.APTIX_WORKER_GRACE)
APTIX_WORKER_HEALTH_HOST = read(env.APTIX_WORKER_HEALTH_HOST)
APTIX_METRICS_TOKEN = read(env.APTIX_METRICS_TOKEN)  # GET /metrics from elsewhere than loopback (aptix/scrape.py)
# Session streams (agents/web/streams.py): live views per user and per session in one process, the
# events a reconnect may replay (a page further behind is told to reload), the largest frame a
# client may send (the stream is one-way), and seconds between checks that the socket's access holds.
APTIX_WS_MAX_PER_USER = read(env.APTIX_WS_MAX_PER_USER)
APTIX_WS_MAX_PER_SESSION = read(env.APTIX_WS_MAX_PER_SESSION)
APTIX_WS_REPLAY_MAX = read(env.APTIX_WS_REPLAY_MAX)
APTIX_WS_MAX_MESSAGE = read(env.APTIX_WS_MAX_MESSAGE)
APTIX_WS_RECHECK = read(env.APTIX_WS_RECHECK)
APTIX_WS_CATCHUP = read(env.APTIX_WS_CATCHUP)  # a quiet turn's events looked up (consumers.py)
APTIX_WS_COMPRESSION = read(env.APTIX_WS_COMPRESSION)  # permessage-deflate (manage.py aptix_serve)
# Turns the session page draws at first; earlier ones load as the user scrolls up (web/views/history.py).
APTIX_SESSION_PAGE_TURNS = read(env.APTIX_SESSION_PAGE_TURNS)

LOG_LEVEL = read(env.LOG_LEVEL)

# Traces (aptix/tracing.py): set up by the serving processes only when the endpoint is set.
OTEL_EXPORTER_OTLP_ENDPOINT = read(env.OTEL_EXPORTER_OTLP_ENDPOINT)
OTEL_SERVICE_NAME = read(env.OTEL_SERVICE_NAME)
APTIX_TRACE_CONTENT = read(env.APTIX_TRACE_CONTENT)
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "structured": {"()": "aptix.logging.StructuredFormatter"},
    },
    "filters": {
        "ids": {"()": "aptix.logcontext.IdsFilter"},  # request, turn, session and user ids
        "trace_id": {"()": "aptix.tracing.TraceIdFilter"},  # the current trace id, when tracing is on
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "structured", "filters": ["ids", "trace_id"]},
    },
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        # No own handler: records propagate to the root handler (and to pytest's caplog).
        "aptix": {"level": LOG_LEVEL},
        "django": {"handlers": ["console"], "level": "INFO", "propagate": False},
    },
}

# --- Login lockout and request rate limits (docs/operations.md "Rate limits") ----------------------
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
APTIX_TRUSTED_PROXIES = read(env.APTIX_TRUSTED_PROXIES)

AXES_FAILURE_LIMIT = read(env.APTIX_LOGIN_FAILURE_LIMIT)  # 0 turns the lockout off
AXES_ENABLED = AXES_FAILURE_LIMIT > 0
AXES_COOLOFF_TIME = timedelta(minutes=read(env.APTIX_LOGIN_COOLOFF_MINUTES))
APTIX_LOGIN_ADDRESS_LIMIT = read(env.APTIX_LOGIN_ADDRESS_LIMIT)  # aptix/lockout.py


def env_lockout_parameters(name: str, default: str) -> LockoutParameters:
    """`name` (else `default`) read as APTIX_LOGIN_LOCKOUT_BY is: what a failure count is kept for."""
    return _convert(LockoutBy(name, [], env.LIMITS, ""), os.environ.get(name) or default)


def _convert(setting: Setting[Value], raw: str) -> Value:
    try:
        return setting.convert(raw)
    except SettingError as exc:
        raise ImproperlyConfigured(str(exc)) from None


# By username and address together (default): guessing one account's password from one address is
# stopped, and nobody can lock a user out from elsewhere. `ip` also stops one address spraying many.
AXES_LOCKOUT_PARAMETERS = read(env.APTIX_LOGIN_LOCKOUT_BY)
# A successful login forgets that user's failures (typos do not add up over the day), unless a count
# is kept for an address alone: logging in to one's own account would then wipe the count of a spray.
AXES_RESET_ON_SUCCESS = all("username" in parameter for parameter in AXES_LOCKOUT_PARAMETERS)
AXES_CLIENT_IP_CALLABLE = "aptix.ratelimits.client_ip"
AXES_LOCKOUT_CALLABLE = "aptix.lockout.lockout_response"
AXES_WHITELIST_CALLABLE = "aptix.lockout.provider_callback"  # the identity provider's sign-ins guess no password
AXES_HTTP_RESPONSE_CODE = 429
AXES_VERBOSE = False  # no start-up banner in every process's log


def env_rate(name: str, default: str) -> str | None:
    """`name` (else `default`) read as a rate: `30/m` or `100/5m` (s, m, h, d); `off` or `0` turns it off."""
    return _convert(Rate(name, None, env.LIMITS, ""), os.environ.get(name) or default)


# Turns (new messages, new conversations) per user, API requests per token, and requests with an
# invalid bearer token per client address (past it, that address's bearer requests all get 429).
APTIX_RATE_TURNS = read(env.APTIX_RATE_TURNS)
APTIX_RATE_API = read(env.APTIX_RATE_API)
APTIX_RATE_BAD_TOKENS = read(env.APTIX_RATE_BAD_TOKENS)
APTIX_RATE_INVITES = read(env.APTIX_RATE_INVITES)  # opening or accepting an invitation link, per address
APTIX_RATE_SHARE_LINKS = read(env.APTIX_RATE_SHARE_LINKS)  # opening a share link, per address
# Public read-only links to a session (agents/sharing/links.py): off unless an administrator turns them on.
APTIX_PUBLIC_LINKS = read(env.APTIX_PUBLIC_LINKS)
# --- end of login lockout and rate limits ---------------------------------------------------------

# --- Sign-in with the company's identity provider (identity/, docs/sign-in.md) -----------------------
# mozilla-django-oidc does the authorization code flow (state, nonce, PKCE S256); identity/ adds the
# discovery, the ID token's checks (issuer, audience, expiry, JWKS with rotation) and the accounts.
APTIX_OIDC_ISSUER = read(env.APTIX_OIDC_ISSUER)
APTIX_OIDC_NAME = read(env.APTIX_OIDC_NAME)
APTIX_OIDC_GROUPS_CLAIM = read(env.APTIX_OIDC_GROUPS_CLAIM)
APTIX_OIDC_LINK_BY_EMAIL = read(env.APTIX_OIDC_LINK_BY_EMAIL)
APTIX_OIDC_API_AUDIENCE = read(env.APTIX_OIDC_API_AUDIENCE)
APTIX_LOCAL_LOGIN = read(env.APTIX_LOCAL_LOGIN)
OIDC_RP_CLIENT_ID = read(env.APTIX_OIDC_CLIENT_ID)
OIDC_RP_CLIENT_SECRET = read(env.APTIX_OIDC_CLIENT_SECRET)  # the environment only: no default, no file
OIDC_RP_SCOPES = read(env.APTIX_OIDC_SCOPES)
OIDC_RP_SIGN_ALGO = "RS256"
OIDC_USE_NONCE = True
OIDC_USE_PKCE = True
OIDC_PKCE_CODE_CHALLENGE_METHOD = "S256"
OIDC_STATE_SIZE = OIDC_NONCE_SIZE = 32  # 32 of 62 letters and digits: 190 bits each
OIDC_STORE_ID_TOKEN = True  # the id_token_hint of the provider's sign-out
OIDC_TIMEOUT = 10
OIDC_AUTHENTICATION_CALLBACK_URL = "identity-callback"
LOGIN_REDIRECT_URL_FAILURE = "/login/"
if APTIX_OIDC_ISSUER:
    if not (OIDC_RP_CLIENT_ID and OIDC_RP_CLIENT_SECRET):
        raise ImproperlyConfigured(
            "APTIX_OIDC_ISSUER is set: set APTIX_OIDC_CLIENT_ID and APTIX_OIDC_CLIENT_SECRET (in the environment) too."
        )
    AUTHENTICATION_BACKENDS += ["identity.backend.ProviderBackend"]
    # /api/v1/ also takes the provider's JWT access tokens for APTIX_OIDC_API_AUDIENCE (aptix/bearer.py).
    API_BEARER_FALLBACK = "identity.access_tokens.access_token_user" if APTIX_OIDC_API_AUDIENCE else None
    # The sign-in and sign-out forms post here and are redirected to the provider: a redirect after a
    # form's submission is held to form-action too.
    CONTENT_SECURITY_POLICY["DIRECTIVES"]["form-action"].append(origin_of(APTIX_OIDC_ISSUER))
