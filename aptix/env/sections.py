"""The sections of docs/configuration.md and .env.example, in their order: each declaration names one."""

from __future__ import annotations

from aptix.envtypes import Section

CORE = Section("Core", "The Django basics. `make run` needs none of them: it generates `SECRET_KEY` into `var/`.")
DEPLOYMENT = Section(
    "Deployment",
    "PostgreSQL, Redis, several processes and HTTPS: see [Operations](operations.md), which explains the "
    "connection pool, the run queue and the proxy in front.",
)
MODELS = Section(
    "Models",
    "Which model answers: see [Models](models.md). With none of these set, the built-in offline model does.",
)
AGENT = Section(
    "Agent runs",
    "What one turn may do and send: see [Models](models.md#budgets) for the budgets and "
    "[Runs that end with an answer](models.md#runs-that-end-with-an-answer).",
)
MCP = Section(
    "MCP",
    "The MCP servers Aptix starts: see [MCP servers](mcp.md). The `APTIX_SQL_*` limits belong to the SQL "
    'MCP server\'s own process: set them in its `"env"` in `mcp.json`, since a server gets only a minimal '
    "environment.",
)
STREAM = Section(
    "Live stream",
    "What one user's sockets may cost: see [Architecture](architecture.md#the-live-stream).",
)
LIMITS = Section(
    "Rate limits and login lockout",
    "Refusing floods with 429: see [Rate limits](operations.md#rate-limits). Rates are `N/s`, `N/m`, `N/h`, "
    "`N/d` or `N/5m` (any multiple); `off` turns one off.",
)
SIGN_IN = Section(
    "Sign-in",
    "Signing in with the company's identity provider (OpenID Connect), teams and roles from its groups: see "
    "[Sign-in](sign-in.md). With `APTIX_OIDC_ISSUER` unset, users sign in with local accounts only.",
)
TRACING = Section(
    "Tracing",
    "OpenTelemetry traces of requests, turns, model and tool calls: see [Tracing](operations.md#tracing). The "
    "SDK reads the other standard `OTEL_*` variables itself (`OTEL_EXPORTER_OTLP_HEADERS`, "
    "`OTEL_TRACES_SAMPLER`, `OTEL_RESOURCE_ATTRIBUTES`, …).",
)
FILES = Section(
    "Files",
    "Uploads and queries over them: see [Files](workspace.md#files), [Operations](operations.md#uploaded-files).",
)
AUTOMATIONS = Section(
    "Automations",
    "Scheduled and triggered runs, and the inbox that routes their approvals to a person: see "
    "[Automations](automations.md).",
)
SECTIONS = (CORE, DEPLOYMENT, MODELS, AGENT, MCP, STREAM, FILES, LIMITS, TRACING, SIGN_IN, AUTOMATIONS)
