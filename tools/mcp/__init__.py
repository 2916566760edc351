"""The MCP client side: the host that runs the servers of mcp.json for this process and serves their
tools through the MCP registry (tools/registry.py).

This package is its one public face: the rest of Aptix (agents/, aptix/, tools/builtin/) imports
what it needs from `tools.mcp`, never from a module inside (`lint-imports` checks it). The names
below are looked up lazily, each from the module that defines it, so that importing one (mcp.json's
config from the model catalog, `python -m tools.mcp.sql_server`) does not load the whole client.

The modules, in layers (`[tool.importlinter]`: a module imports only from the layers below it):

  checks | usercheck | sql_server    system checks of mcp.json and the secrets key; the SQL server's command
  host          McpHost: the servers of one config on one background thread and loop; their
                requests (tool calls, resources/read, prompts/get, completion/complete) and statuses, waiting on them;
                live reloads and restarts; start_mcp_host() and this process's host (mcp_host, mcp_status, …)
  publisher     a server's tools kept in step with the MCP registry
  hosted        HostedServer: a server by name, as its tools' entries see it (the ServerPort)
  entry         McpToolEntry: the agent tool contract over one server's tool; ServerPort
  userpool      a server that acts as each user: a connection per (server, user)
  supervisor    one server's life: connect, list and publish its tools, restart with backoff
  listen        a 2026-07-28 connection's listen stream: list changes, subscribed resources' changes
  oauth         the MCP authorization flow, each user connecting their own account
  connection    one live session: the SDK's Client over a transport, calls with their CallContext
  http | transport | listing    streamable HTTP and its errors; the stdio child; tools/list checked tool by tool
  status        ServerStatus: what the admin page, the Tools panel and /readyz show of a server
  protocol      prompts | resources | completion | subscriptions | tasks | elicitation | handshake | rich
                | logs: what MCP's messages mean (listing and parsing prompts and resources, argument
                completion, resource subscriptions and who is told of a change, tasks and their polls,
                a server's questions and their forms, results as tool results), no connection of their own
  userauth | ssrf | reload | apps   ${user:NAME} and "auth"; fetching URLs from a server's answers;
                what a reload changes and the request files; MCP Apps (a tool's ui:// app, its CSP)
  config | envfile              mcp.json: parse and validate; JSON without duplicate keys, dotenv files

A tool call carries one CallContext (tools/base.py: the ToolContext's session, team and user, and
the call's `asker`, task `watch` and `resume`), which the entry passes whole down host → user pool
→ supervisor → connection; a web request (a resource read, a prompt got) gives the host its user.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .apps import frame_policy, stored_app
    from .completion import CompletionRequest, Suggestions, parse_request
    from .config import ENV_REF_RE, TOOL_SEPARATOR, EnvExpander, McpConfigError, ServerConfig, load_config
    from .elicitation import (
        ACTIONS,
        Action,
        Answer,
        Ask,
        Asker,
        FormField,
        InputPause,
        Request,
        Resume,
        form_fields,
        validate_content,
    )
    from .entry import McpToolEntry, ServerPort
    from .handshake import instructions_prompt
    from .host import McpHost, mcp_config_error, mcp_host, mcp_kept_errors, mcp_status, start_mcp_host
    from .oauth import OAuthError, authorization_complete, authorization_start, client_metadata, pending_server
    from .prompts import PromptRefused, not_offered
    from .reload import RELOAD_POLL, Signature, signature
    from .rich import RichResult, store_attachments
    from .status import ServerStatus
    from .subscriptions import set_resource_listener
    from .tasks import TaskState, TaskWatch

# name → the module (inside this package) that defines it
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("frame_policy", "stored_app"), "apps"),
    **dict.fromkeys(("CompletionRequest", "Suggestions", "parse_request"), "completion"),
    **dict.fromkeys(
        ("ENV_REF_RE", "TOOL_SEPARATOR", "EnvExpander", "McpConfigError", "ServerConfig", "load_config"), "config"
    ),
    **dict.fromkeys(
        (
            "ACTIONS",
            "Action",
            "Answer",
            "Ask",
            "Asker",
            "FormField",
            "InputPause",
            "Request",
            "Resume",
            "form_fields",
            "validate_content",
        ),
        "elicitation",
    ),
    **dict.fromkeys(("McpToolEntry", "ServerPort"), "entry"),
    "instructions_prompt": "handshake",
    **dict.fromkeys(
        ("McpHost", "mcp_config_error", "mcp_host", "mcp_kept_errors", "mcp_status", "start_mcp_host"), "host"
    ),
    **dict.fromkeys(
        ("OAuthError", "authorization_complete", "authorization_start", "client_metadata", "pending_server"), "oauth"
    ),
    **dict.fromkeys(("PromptRefused", "not_offered"), "prompts"),
    **dict.fromkeys(("RELOAD_POLL", "Signature", "signature"), "reload"),
    **dict.fromkeys(("RichResult", "store_attachments"), "rich"),
    "ServerStatus": "status",
    "set_resource_listener": "subscriptions",
    **dict.fromkeys(("TaskState", "TaskWatch"), "tasks"),
}

__all__ = [  # what _EXPORTS names (tests/tools/mcp/test_mcp_package.py checks they agree)
    "ACTIONS",
    "ENV_REF_RE",
    "RELOAD_POLL",
    "TOOL_SEPARATOR",
    "Action",
    "Answer",
    "Ask",
    "Asker",
    "CompletionRequest",
    "EnvExpander",
    "FormField",
    "InputPause",
    "McpConfigError",
    "McpHost",
    "McpToolEntry",
    "OAuthError",
    "PromptRefused",
    "Request",
    "Resume",
    "RichResult",
    "ServerConfig",
    "ServerPort",
    "ServerStatus",
    "Signature",
    "Suggestions",
    "TaskState",
    "TaskWatch",
    "authorization_complete",
    "authorization_start",
    "client_metadata",
    "form_fields",
    "frame_policy",
    "instructions_prompt",
    "load_config",
    "mcp_config_error",
    "mcp_host",
    "mcp_kept_errors",
    "mcp_status",
    "not_offered",
    "parse_request",
    "pending_server",
    "set_resource_listener",
    "signature",
    "start_mcp_host",
    "store_attachments",
    "stored_app",
    "validate_content",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)
