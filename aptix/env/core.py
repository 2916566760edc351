"""Core and deployment settings (see aptix/env/__init__.py)."""

from __future__ import annotations

from aptix.envtypes import Flag, Integer, Items, Number, OptionalText, Text

from .sections import CORE, DEPLOYMENT, TRACING

# --- Core -----------------------------------------------------------------------------------------
SECRET_KEY = OptionalText(
    "SECRET_KEY",
    None,
    CORE,
    "Django secret key; required unless `DEBUG=true`. Commands outside `make` use `var/secret_key` too",
    secret=True,
    default_doc="generated into `var/secret_key` by `make run`",
)
DEBUG = Flag("DEBUG", False, CORE, "development mode (never in production)")
ALLOWED_HOSTS = Items("ALLOWED_HOSTS", ["127.0.0.1", "localhost"], CORE, "comma-separated host names served")
CSRF_TRUSTED_ORIGINS = Items(
    "CSRF_TRUSTED_ORIGINS",
    [],
    CORE,
    "comma-separated origins trusted for CSRF behind a proxy",
    example="https://aptix.example.com",
)
APTIX_VAR_DIR = OptionalText(
    "APTIX_VAR_DIR",
    None,
    CORE,
    "where the SQLite file, media, static files and the admin password live",
    default_doc="`var/` in the repository",
)
LOG_LEVEL = Text("LOG_LEVEL", "INFO", CORE, "level of Aptix's own structured (JSON-line) logs")

# --- Deployment -----------------------------------------------------------------------------------
DATABASE_URL = OptionalText(
    "DATABASE_URL",
    None,
    DEPLOYMENT,
    "the database; teams deploy PostgreSQL",
    secret=True,
    default_doc="SQLite `var/aptix.sqlite3`",
    example="postgresql://aptix:secret@127.0.0.1:5432/aptix",
)
APTIX_DB_POOL = Flag(
    "APTIX_DB_POOL",
    True,
    DEPLOYMENT,
    "PostgreSQL through a connection pool per process; `false` (e.g. behind PgBouncer in transaction mode): a "
    "persistent connection per thread, health-checked before reuse",
)
APTIX_DB_POOL_MAX = Integer(
    "APTIX_DB_POOL_MAX",
    10,
    DEPLOYMENT,
    "connections per process at most; size it so that (web processes + workers) × this stays under the server's "
    "`max_connections`",
    minimum=1,
)
APTIX_DB_POOL_MIN = Integer("APTIX_DB_POOL_MIN", 2, DEPLOYMENT, "connections each process keeps open")
APTIX_DB_POOL_TIMEOUT = Number(
    "APTIX_DB_POOL_TIMEOUT",
    30.0,
    DEPLOYMENT,
    "seconds a thread waits for a free connection before the request fails",
    minimum=0.1,
)
APTIX_DB_CONN_MAX_AGE = Integer(
    "APTIX_DB_CONN_MAX_AGE", 60, DEPLOYMENT, "without the pool: seconds a thread keeps its connection"
)
REDIS_URL = OptionalText(
    "REDIS_URL",
    None,
    DEPLOYMENT,
    "Redis for several processes: the channel layer, the run queue to `aptix_worker` processes and the rate "
    "limits' counters",
    secret=True,
    default_doc="unset (one process, the in-memory channel layer)",
    example="redis://127.0.0.1:6379/0",
)
APTIX_EMAIL_URL = OptionalText(
    "APTIX_EMAIL_URL",
    None,
    DEPLOYMENT,
    "where e-mail (invitations) goes: `smtp://user:password@host:587` (STARTTLS), `smtps://…:465` (TLS), "
    "`smtp+plain://host:25` (a local relay)",
    secret=True,
    default_doc="unset (the console: each message is written to the process's output)",
    example="smtp://aptix:secret@mail.example.com:587",
)
APTIX_EMAIL_FROM = Text("APTIX_EMAIL_FROM", "aptix@localhost", DEPLOYMENT, "the sender address of Aptix's e-mail")
APTIX_RUN_HEARTBEAT = Number(
    "APTIX_RUN_HEARTBEAT",
    10.0,
    DEPLOYMENT,
    "seconds between a running turn's heartbeats; a turn silent for 6 of them lost its worker and is ended as "
    "interrupted by the orphan sweep of the serving processes",
    minimum=0.01,
)
APTIX_RUN_SWEEP = Flag(
    "APTIX_RUN_SWEEP",
    True,
    DEPLOYMENT,
    "serving processes end turns whose process died, at start and then every `APTIX_RUN_HEARTBEAT` seconds",
)
APTIX_WORKER_GRACE = Number(
    "APTIX_WORKER_GRACE", 30.0, DEPLOYMENT, "seconds an `aptix_worker`'s running turns get to end on SIGTERM"
)
APTIX_WORKER_HEALTH_HOST = Text(
    "APTIX_WORKER_HEALTH_HOST",
    "127.0.0.1",
    DEPLOYMENT,
    "the address `aptix_worker --health-port` listens on (`0.0.0.0` for a probe from another host)",
)
APTIX_METRICS_TOKEN = OptionalText(
    "APTIX_METRICS_TOKEN",
    None,
    DEPLOYMENT,
    "bearer token a scraper sends for `GET /metrics` from another host (unset: loopback only)",
    secret=True,
)
PROMETHEUS_MULTIPROC_DIR = OptionalText(
    "PROMETHEUS_MULTIPROC_DIR",
    None,
    DEPLOYMENT,
    "a directory the processes of one host share: `/metrics` then adds up all of them (emptied before they start)",
    default_doc="unset (each process's own metrics)",
    example="/run/aptix/metrics",
)
APTIX_HTTPS = Flag(
    "APTIX_HTTPS",
    False,
    DEPLOYMENT,
    "HTTPS only (behind a proxy setting `X-Forwarded-Proto`): secure cookies, HTTP redirected, HSTS; "
    "`manage.py check --deploy` is then clean (a test keeps it so)",
)
APTIX_HSTS_SECONDS = Integer(
    "APTIX_HSTS_SECONDS", 31_536_000, DEPLOYMENT, "HSTS max-age in HTTPS mode (0 turns HSTS off)"
)
APTIX_HSTS_INCLUDE_SUBDOMAINS = Flag(
    "APTIX_HSTS_INCLUDE_SUBDOMAINS", False, DEPLOYMENT, "opt-in, in HTTPS mode: commits every subdomain to HTTPS"
)
APTIX_HSTS_PRELOAD = Flag(
    "APTIX_HSTS_PRELOAD", False, DEPLOYMENT, "opt-in, in HTTPS mode: asks browsers' preload list for the domain"
)

# --- Tracing --------------------------------------------------------------------------------------
OTEL_EXPORTER_OTLP_ENDPOINT = OptionalText(
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    None,
    TRACING,
    "an OTLP/HTTP collector (Jaeger, Tempo, an OpenTelemetry Collector); spans go to its `/v1/traces`. Unset: "
    "no tracing at all",
    default_doc="unset (no traces)",
    example="http://127.0.0.1:4318",
)
OTEL_SERVICE_NAME = Text("OTEL_SERVICE_NAME", "aptix", TRACING, "the service name the spans carry")
APTIX_TRACE_CONTENT = Flag(
    "APTIX_TRACE_CONTENT",
    False,
    TRACING,
    "put what was said on the spans: the messages sent to the model, its answers, tool arguments and results "
    "(they then reach whoever reads the traces)",
)
