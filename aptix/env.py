"""Every environment variable Aptix reads, declared once: its name, kind (aptix/envtypes.py: how it
is parsed and checked), default, whether it is a secret, what it does and its section.

aptix/settings.py reads the app's variables through these declarations; code without Django (the SQL
MCP server's process, the demo-data builder) reads its own the same way, `APTIX_DEMO_DB.read()`.
docs/configuration.md and .env.example are generated from them (`manage.py aptix_config_docs`), and
tests/aptix/test_env_declarations.py fails when code reads a variable that is not declared here, or
one declared here is not read or not documented. A new variable: one declaration here, one read, and
the two files generated again. No Django here (see aptix/envtypes.py).
"""

from __future__ import annotations

from aptix.envtypes import (
    Choice,
    Flag,
    Integer,
    Items,
    LockoutBy,
    Number,
    OptionalText,
    PositiveInteger,
    Rate,
    Section,
    Setting,
    Text,
)

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
FILES = Section(
    "Files",
    "Uploads and queries over them: see [Files](workspace.md#files), [Operations](operations.md#uploaded-files).",
)
SECTIONS = (CORE, DEPLOYMENT, MODELS, AGENT, MCP, STREAM, FILES, LIMITS)

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

# --- Models ---------------------------------------------------------------------------------------
OPENAI_API_KEY = OptionalText(
    "OPENAI_API_KEY",
    None,
    MODELS,
    "key of an OpenAI-compatible server (OpenAI, Azure OpenAI, Ollama, vLLM, llama.cpp)",
    secret=True,
    default_doc="unset (the built-in offline model)",
)
OPENAI_BASE_URL = OptionalText(
    "OPENAI_BASE_URL",
    None,
    MODELS,
    "base URL of that server",
    default_doc="unset (OpenAI with a key, else the offline model)",
    example="http://127.0.0.1:11434/v1",
)
APTIX_LLM_MODEL = OptionalText(
    "APTIX_LLM_MODEL", None, MODELS, "model name sent to that server", default_doc="unset", example="gpt-4o-mini"
)
APTIX_MODELS_CONFIG = Text(
    "APTIX_MODELS_CONFIG",
    "models.json",
    MODELS,
    "providers and models (see [Several models](models.md#several-models)); without the file, `OPENAI_*` or the "
    "offline model",
)
APTIX_IMAGE_MODEL = Text(
    "APTIX_IMAGE_MODEL",
    "gpt-image-1",
    MODELS,
    "Images API model for `image_gen` with a real provider (charts with data are always drawn locally)",
)
APTIX_LLM_TIMEOUT = Number("APTIX_LLM_TIMEOUT", 60.0, MODELS, "seconds before a model call times out")
APTIX_LLM_MAX_RETRIES = Integer("APTIX_LLM_MAX_RETRIES", 2, MODELS, "SDK retries on 429/5xx/connection errors")

# --- Agent runs -----------------------------------------------------------------------------------
APTIX_MAX_STEPS = Integer("APTIX_MAX_STEPS", 10, AGENT, "model calls per Agent turn", minimum=1)
APTIX_MAX_REPEATS = Integer(
    "APTIX_MAX_REPEATS",
    2,
    AGENT,
    "replies in a row that only repeat tool calls already made in the turn before the run stops and answers",
    minimum=1,
)
APTIX_TOKEN_BUDGET = Integer("APTIX_TOKEN_BUDGET", 200_000, AGENT, "tokens per Agent run", minimum=1)
APTIX_MAX_TOOLS = Integer(
    "APTIX_MAX_TOOLS",
    128,
    AGENT,
    "tool schemas per model request (OpenAI refuses more than 128); beyond it, the other allowed tools are offered "
    "on demand through `tool_search` (pinned: `agent_change_mode`, internal tools, MCP tools the policy names)",
    minimum=1,
)
APTIX_TOOL_SCHEMA_SHARE = Number(
    "APTIX_TOOL_SCHEMA_SHARE",
    0.25,
    AGENT,
    "share of the model's context the allowed tools' schemas may take; beyond it (or APTIX_MAX_TOOLS) the request "
    "offers the pinned tools and `tool_search`, and the tools it finds from the next step on",
    minimum=0.01,
)
APTIX_TOOL_SEARCH_RESULTS = Integer(
    "APTIX_TOOL_SEARCH_RESULTS", 8, AGENT, "tools one `tool_search` call returns (ranked by BM25)", minimum=1
)
APTIX_TOOL_RESULT_CHARS = Integer(
    "APTIX_TOOL_RESULT_CHARS",
    40_000,
    AGENT,
    "characters of a tool result the model gets; the rest is cut with a marker saying how much",
    minimum=100,
)
APTIX_TOOL_RESULT_STORE_CHARS = Integer(
    "APTIX_TOOL_RESULT_STORE_CHARS", 200_000, AGENT, "characters of a tool result the trace keeps", minimum=100
)
APTIX_CONTEXT_TOKENS = Integer(
    "APTIX_CONTEXT_TOKENS",
    32_000,
    AGENT,
    "tokens a request may fill; earlier turns (with their tool calls and results) go newest first until it is "
    "full (a model's `contextTokens` in the models file wins)",
    minimum=1_000,
)
APTIX_REPLY_TOKENS = Integer(
    "APTIX_REPLY_TOKENS", 4_096, AGENT, "room kept for the reply (at most a quarter of the context)", minimum=1
)
APTIX_ASK_FOLLOWUP = Flag(
    "APTIX_ASK_FOLLOWUP", False, AGENT, "Ask execution: one follow-up model call after internal tool results"
)
APTIX_AUTO_TITLES = Flag(
    "APTIX_AUTO_TITLES",
    True,
    AGENT,
    "after a session's first answer, name it with one small extra model call (not with the offline model); "
    "false: the first message names it",
)
APTIX_MODE_CHANGE_CONSENT = Choice(
    "APTIX_MODE_CHANGE_CONSENT",
    "ask",
    AGENT,
    "`ask`: a model's mode change waits for the user's consent (TUL-007 §4.3); `trust`: it happens at once",
    choices=("ask", "trust"),
)

# --- MCP ------------------------------------------------------------------------------------------
APTIX_MCP_CONFIG = Text(
    "APTIX_MCP_CONFIG",
    "mcp.json",
    MCP,
    "MCP servers launched at start-up (Claude Desktop / Cursor `mcpServers` format), relative to the repository "
    "unless absolute",
)
APTIX_MCP_AUTOSTART = Flag(
    "APTIX_MCP_AUTOSTART",
    True,
    MCP,
    "start the MCP servers when a web or worker process starts (`manage.py mcp_status` checks them)",
)
APTIX_DEMO_DB = OptionalText(
    "APTIX_DEMO_DB",
    None,
    MCP,
    "where `manage.py demo_data` writes the demo database",
    default_doc="`var/demo.sqlite3` in the repository",
)
SQL_SERVER = 'the `sql` server\'s `"env"` in `mcp.json`'
APTIX_SQL_MAX_ROWS = PositiveInteger(
    "APTIX_SQL_MAX_ROWS", 200, MCP, "rows per result of the SQL MCP server", child_process=SQL_SERVER
)
APTIX_SQL_TIMEOUT_MS = PositiveInteger(
    "APTIX_SQL_TIMEOUT_MS", 5000, MCP, "milliseconds per call of the SQL MCP server", child_process=SQL_SERVER
)
APTIX_SQL_MAX_BYTES = PositiveInteger(
    "APTIX_SQL_MAX_BYTES",
    16 << 20,
    MCP,
    "bytes per result of the SQL MCP server (16 MiB; a longer result is cut with a footer saying so)",
    child_process=SQL_SERVER,
)
APTIX_SQL_MEMORY_MB = PositiveInteger(
    "APTIX_SQL_MEMORY_MB",
    1024,
    MCP,
    "the SQL MCP server process's address space in MiB (`RLIMIT_AS`; at least 128, the server runs in about 100)",
    minimum=128,  # Python, the MCP SDK and a driver start in about 100 MiB of address space
    unit="MiB",
    child_process=SQL_SERVER,
)

# --- Live stream ----------------------------------------------------------------------------------
APTIX_WS_MAX_PER_USER = Integer(
    "APTIX_WS_MAX_PER_USER", 20, STREAM, "live-stream sockets one process holds per user", minimum=1
)
APTIX_WS_MAX_PER_SESSION = Integer(
    "APTIX_WS_MAX_PER_SESSION", 8, STREAM, "live-stream sockets one process holds per session", minimum=1
)
APTIX_WS_REPLAY_MAX = Integer(
    "APTIX_WS_REPLAY_MAX",
    400,
    STREAM,
    "events a reconnecting page may have replayed; a page further behind is told to reload",
    minimum=1,
)
APTIX_WS_MAX_MESSAGE = Integer(
    "APTIX_WS_MAX_MESSAGE",
    4096,
    STREAM,
    "bytes of the largest frame a client may send on the (one-way) stream",
    minimum=128,
)
APTIX_WS_RECHECK = Number(
    "APTIX_WS_RECHECK",
    60.0,
    STREAM,
    "seconds between a socket's checks that its user may still read the session",
    minimum=0.01,
)
APTIX_WS_CATCHUP = Number(
    "APTIX_WS_CATCHUP",
    5.0,
    STREAM,
    "seconds a running turn may be quiet on a socket before the socket looks up its events in the database (an "
    "event the channel layer lost, a turn's end above all, still arrives)",
    minimum=0.01,
)
APTIX_WS_COMPRESSION = Flag(
    "APTIX_WS_COMPRESSION",
    True,
    STREAM,
    "compress websocket messages (permessage-deflate, with the context kept between messages) for clients that "
    "offer it, as browsers do; `manage.py aptix_serve` only",
)
APTIX_SESSION_PAGE_TURNS = Integer(
    "APTIX_SESSION_PAGE_TURNS",
    20,
    STREAM,
    "turns the session page draws at first; earlier ones load as you scroll up (*Load earlier turns*)",
    minimum=1,
)

# --- Files ----------------------------------------------------------------------------------------
APTIX_UPLOAD_MAX_BYTES = Integer("APTIX_UPLOAD_MAX_BYTES", 50 << 20, FILES, "bytes per uploaded file", minimum=1)
APTIX_UPLOAD_USER_QUOTA = Integer("APTIX_UPLOAD_USER_QUOTA", 1 << 30, FILES, "bytes of files one user keeps", minimum=1)
APTIX_FILES_QUERY_TIMEOUT = Number("APTIX_FILES_QUERY_TIMEOUT", 10.0, FILES, "seconds per `files_query`", minimum=0.01)
APTIX_FILES_QUERY_MEMORY_MB = Integer(
    "APTIX_FILES_QUERY_MEMORY_MB", 512, FILES, "MiB DuckDB may use per `files_query`", minimum=64
)
APTIX_FILES_QUERY_THREADS = Integer(
    "APTIX_FILES_QUERY_THREADS", 2, FILES, "threads per `files_query` and table upload", minimum=1
)
APTIX_FILES_INGEST_MEMORY_MB = Integer(
    "APTIX_FILES_INGEST_MEMORY_MB", 100, FILES, "MiB DuckDB may use to ingest one uploaded table", minimum=32
)
APTIX_FILES_MAX_ROWS = Integer("APTIX_FILES_MAX_ROWS", 10_000_000, FILES, "rows per uploaded table", minimum=1)
APTIX_FILES_MAX_COLUMNS = Integer("APTIX_FILES_MAX_COLUMNS", 1000, FILES, "columns per uploaded table", minimum=1)
APTIX_FILES_MAX_UNZIPPED = Integer(
    "APTIX_FILES_MAX_UNZIPPED", 256 << 20, FILES, "bytes an XLSX or DOCX may decompress to (zip bombs)", minimum=1
)

# --- Rate limits and login lockout ----------------------------------------------------------------
APTIX_LOGIN_FAILURE_LIMIT = Integer(
    "APTIX_LOGIN_FAILURE_LIMIT", 5, LIMITS, "wrong passwords before a login is locked out; `0` turns the lockout off"
)
APTIX_LOGIN_ADDRESS_LIMIT = Integer(
    "APTIX_LOGIN_ADDRESS_LIMIT",
    50,
    LIMITS,
    "wrong passwords from one address, whatever the usernames, before logins from that address are "
    "refused for the cool-off (password spraying); users elsewhere are not affected; `0` turns it off",
)
APTIX_LOGIN_COOLOFF_MINUTES = Number(
    "APTIX_LOGIN_COOLOFF_MINUTES",
    15.0,
    LIMITS,
    "how long a lockout lasts; each attempt during it starts it again",
    minimum=0.1,
)
APTIX_LOGIN_LOCKOUT_BY = LockoutBy(
    "APTIX_LOGIN_LOCKOUT_BY",
    [["username", "ip_address"]],
    LIMITS,
    "what failures are counted for: `username+ip`, `ip`, `username`, or several, comma-separated",
)
APTIX_RATE_TURNS = Rate(
    "APTIX_RATE_TURNS", "30/m", LIMITS, "new messages and new conversations per user (web and API together)"
)
APTIX_RATE_API = Rate("APTIX_RATE_API", "120/m", LIMITS, "JSON API requests per token")
APTIX_RATE_BAD_TOKENS = Rate(
    "APTIX_RATE_BAD_TOKENS",
    "20/m",
    LIMITS,
    "requests with a missing or invalid bearer token per client address; past it, all of that address's bearer "
    "requests wait",
)
APTIX_TRUSTED_PROXIES = Integer(
    "APTIX_TRUSTED_PROXIES",
    0,
    LIMITS,
    "proxies in front of Aptix that append to `X-Forwarded-For`; the client address is read from there only when "
    "set (0: none, the connection's address is the client's)",
)

# Every declaration, in the order above (the order of the generated files).
DECLARED: dict[str, Setting] = {value.name: value for value in list(globals().values()) if isinstance(value, Setting)}
