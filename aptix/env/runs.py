"""Models, agent runs and MCP settings (see aptix/env/__init__.py)."""

from __future__ import annotations

from aptix.envtypes import Choice, FernetKeys, Flag, Integer, Number, OptionalText, PositiveInteger, Text

from .sections import AGENT, AUTOMATIONS, MCP, MODELS

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
APTIX_PROJECT_INSTRUCTIONS_CHARS = Integer(
    "APTIX_PROJECT_INSTRUCTIONS_CHARS",
    8000,
    AGENT,
    "characters of a project's instructions that go into each request of its sessions (the rest is cut; 0: none)",
    minimum=0,
)
APTIX_MAX_REPEATS = Integer(
    "APTIX_MAX_REPEATS",
    2,
    AGENT,
    "replies in a row that only repeat tool calls already made in the turn before the run stops and answers",
    minimum=1,
)
APTIX_TOKEN_BUDGET = Integer("APTIX_TOKEN_BUDGET", 200_000, AGENT, "tokens per Agent run", minimum=1)
APTIX_QUOTA_TURN_RESERVE = Integer(
    "APTIX_QUOTA_TURN_RESERVE",
    2_000,
    AGENT,
    "tokens of a monthly token quota each open turn holds until it ends (less what it used): turns sent at "
    "once start only while the quota has room for them",
    minimum=0,
)
APTIX_MAX_TOOLS = Integer(
    "APTIX_MAX_TOOLS",
    128,
    AGENT,
    "tool schemas per model request (OpenAI refuses more than 128); beyond it, the pinned tools (`agent_change_mode`, "
    "internal tools, MCP tools the policy names) and whole MCP servers in `mcp.json` order while they fit are "
    "offered, the other allowed tools on demand through `tool_search`",
    minimum=1,
)
APTIX_TOOL_SCHEMA_SHARE = Number(
    "APTIX_TOOL_SCHEMA_SHARE",
    0.25,
    AGENT,
    "share of the model's context the allowed tools' schemas may take; beyond it (or APTIX_MAX_TOOLS) the request "
    "offers the pinned tools, `tool_search` and whole MCP servers that fit, and the tools it finds from the next "
    "step on",
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
    "APTIX_REPLY_TOKENS",
    4_096,
    AGENT,
    "room kept for the reply (at most a quarter of the context), asked of the model as `max_tokens`",
    minimum=1,
)
APTIX_ASK_FOLLOWUP = Flag(
    "APTIX_ASK_FOLLOWUP", False, AGENT, "Ask execution: one follow-up model call after internal tool results"
)
APTIX_AUTO_TITLES = Flag(
    "APTIX_AUTO_TITLES",
    True,
    AGENT,
    "after a session's first answer, name it with one small extra model call of at most 256 tokens "
    "(not with the offline model); false: the first message names it",
)
APTIX_MODE_CHANGE_CONSENT = Choice(
    "APTIX_MODE_CHANGE_CONSENT",
    "ask",
    AGENT,
    "`ask`: a model's mode change waits for the user's consent (TUL-007 §4.3); `trust`: it happens at once",
    choices=("ask", "trust"),
)
APTIX_CATALOG_REVIEW = Choice(
    "APTIX_CATALOG_REVIEW",
    "off",
    AGENT,
    "`off`: a curator with the permission \"Can publish agent modes\" publishes a mode's draft at once; "
    "`two-person`: a draft is published only after another such curator approved it",
    choices=("off", "two-person"),
)
APTIX_CATALOG_TEST_CONCURRENCY = Integer(
    "APTIX_CATALOG_TEST_CONCURRENCY",
    4,
    AGENT,
    "cases of a catalog test run (`manage.py catalog_test`) that run at once",
    minimum=1,
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
APTIX_SECRETS_KEY = FernetKeys(
    "APTIX_SECRETS_KEY",
    None,
    MCP,
    "Fernet keys that encrypt each user's MCP credentials (OAuth tokens, the secrets of Settings → Connections), "
    "comma-separated, the newest first (rotation: put a new key in front, drop the old one once nothing uses "
    "it). Read from the environment only; required when an `mcp.json` entry has `\"auth\"` or `${user:NAME}`",
    secret=True,
    default_doc="unset (no per-user credentials)",
)
APTIX_MCP_APPS_ORIGIN = OptionalText(
    "APTIX_MCP_APPS_ORIGIN",
    None,
    MCP,
    "the origin MCP Apps are framed from: another host name (or port) of this same server that serves them and "
    "nothing else, e.g. `https://apps.aptix.example.com` behind a reverse proxy (docs/mcp.md#mcp-apps). Unset: "
    "`manage.py aptix_serve` listens on the next port too and serves them there; other servers show no apps",
    default_doc="unset (aptix_serve: its port + 1)",
)
APTIX_MCP_INSTRUCTIONS_CHARS = Integer(
    "APTIX_MCP_INSTRUCTIONS_CHARS",
    1000,
    MCP,
    "characters of each MCP server's `instructions` that go into a turn's system prompt (the rest is cut; 0: none)",
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
APTIX_DOCUMENT_MAX_CHARS = Integer(
    "APTIX_DOCUMENT_MAX_CHARS",
    200_000,
    AGENT,
    "characters per version of a session's document (`document_write`, the user's edit); a longer one is refused",
    minimum=100,
)

# --- Automations ----------------------------------------------------------------------------------
APTIX_AUTOMATIONS = Flag(
    "APTIX_AUTOMATIONS",
    True,
    AUTOMATIONS,
    "keep the automations' schedules in this process (the web process in the embedded default, the workers with "
    "`REDIS_URL`); every such process may, a scheduled time runs once",
)
APTIX_AUTOMATIONS_TICK = Number(
    "APTIX_AUTOMATIONS_TICK",
    5.0,
    AUTOMATIONS,
    "seconds between looks at the schedules, the retries and the runs waiting for a person",
    minimum=0.2,
)
APTIX_AUTOMATION_RETRY_SECONDS = Integer(
    "APTIX_AUTOMATION_RETRY_SECONDS",
    60,
    AUTOMATIONS,
    "seconds before a failed run's first retry; each further retry waits twice as long",
    minimum=1,
)
APTIX_PUBLIC_URL = Text(
    "APTIX_PUBLIC_URL",
    "http://127.0.0.1:8000",
    AUTOMATIONS,
    "the address people open Aptix at: the links of e-mail sent without a request (an automation's approvals)",
)
