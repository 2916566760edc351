"""The MCP server configuration: `mcp.json`, in the format of Claude Desktop, Cursor and VS Code.

    {"mcpServers": {
        "time": {"command": "mcp-server-time"},
        "sql": {"command": "python", "args": ["-m", "tools.mcp.sql_server", "sqlite:///var/demo.sqlite3"],
                "cwd": ".", "env": {"PGPASSWORD": "${PGPASSWORD}"}, "timeout": 30},
        "docs": {"type": "http", "url": "https://mcp.example.com/mcp",
                 "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}, "disabled": true}}}

The servers are under "mcpServers" (Claude Desktop, Cursor) or "servers" (VS Code's
`.vscode/mcp.json`, whose "inputs" list is accepted but cannot be answered here, see below).

Keys of a server: `type` ("stdio", the default; "http" for streamable HTTP, inferred when only `url`
is given; "sse" for the legacy HTTP+SSE transport), `command`, `args`, `env`, `envFile`, `cwd`
(stdio); `url`, `headers` (http, sse); `disabled`, `timeout` (seconds per tool call and for the
start-up handshake, default 60), `initTimeout` (seconds for the start-up handshake alone, default
`timeout`), `maxTimeout` (seconds a call that keeps reporting progress may run in all: each progress
notification gives it `timeout` again, up to this; default ten times `timeout`, never less than it),
`max_message_mb` (the largest message the server may send, default 16), `ping_interval`
(seconds of idleness before the host pings the server, default 30; 0 turns pings off), `apps`
(whether its tools' MCP Apps are shown in the conversation, default true: apps.py), `sampling`
(whether it may ask to use the user's model, each request approved by the user, default true).

- `${VAR}` (or VS Code's `${env:VAR}`) in `command`, `args`, `env`, `cwd`, `url` and `headers` is read
  from the environment, so secrets stay out of the file; an unset variable is an error for that
  server, naming the variable, and so is any other `${...}` form (VS Code's `${input:...}` prompts,
  `${command:...}`): nothing here could answer it, and passing it on literally would send
  "${input:token}" as a credential.
- `envFile` is a dotenv file (relative to the config file's directory) whose variables are added to
  that server's environment; `env` wins over it. A missing file is an error for that server.
- A key given twice in one object (a server pasted twice, a second "env") is an error naming it:
  JSON parsers keep the last one silently.
- A server name is 1-61 letters, digits, "_" or "-", without "__" and not ending in "_": tools are
  named `<server>__<tool>` and split at the first "__", so `a_` + `x` and `a` + `_x` cannot collide.
- `command` "python" / "python3" is the interpreter running Aptix (the venv's); another bare name
  is looked up in the venv's bin directory first, then on PATH.
- A relative `cwd` is resolved against the config file's directory, which is also the default.
- A broken entry is an error naming the server and the field; the other servers are unaffected.
  Unknown keys are errors too, so a typo ("comand") does not silently drop a setting; only the keys
  VS Code documents for itself (`dev`, `sandbox`) are ignored (the host logs them), and
  `"sandboxEnabled": true` is an error: the server would run without the sandbox it asks for.
- The file may have comments and trailing commas, as VS Code writes it (JSONC: envfile.py).
- Children get only a minimal environment (HOME, PATH, ...) plus `env`: pass DSNs and keys there.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .envfile import EnvFileError, duplicates, loads, read_env_file
from .userauth import USER_REF_RE, OAuthSettings, allow_private_network, parse_auth, user_variables

DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_MESSAGE_MB = 16.0
DEFAULT_PING_INTERVAL = 30.0
SERVER_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{0,60}[a-zA-Z0-9-]$")  # leaves room for "__" and a tool name in 64
TOOL_SEPARATOR = "__"
ENV_REF_RE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")  # a reference EnvExpander can answer
REFERENCE_RE = re.compile(r"\$\{([^}]*)\}")  # any ${...}
ENV_VARIABLE_RE = re.compile(r"^(?:env:)?([A-Za-z_][A-Za-z0-9_]*)$")
STDIO_KEYS = {"command", "args", "env", "envFile", "cwd"}
HTTP_KEYS = {"url", "headers"}
KNOWN_KEYS = STDIO_KEYS | HTTP_KEYS | {"type", "disabled", "timeout", "initTimeout", "maxTimeout"}
KNOWN_KEYS |= {"max_message_mb", "ping_interval", "auth", "allowPrivateNetwork"}  # the last two: userauth.py
KNOWN_KEYS |= {"apps", "sampling"}  # MCP Apps shown (apps.py); sampling declared (elicitation.py); both by default
# Keys VS Code documents for its own mcp.json that configure VS Code, not the server: development
# mode (`dev`: restart on file changes, attach a debugger) and its sandbox. Logged and ignored.
VSCODE_ONLY_KEYS = ("dev", "sandbox", "sandboxEnabled")
MAX_TIMEOUT_FACTOR = 10  # `maxTimeout` defaults to ten times `timeout`
TYPES = ("stdio", "http", "sse")
SERVER_LISTS = ("mcpServers", "servers")  # Claude Desktop / Cursor, VS Code
INPUTS_ERROR = "inputs are not supported here, use ${env:VAR}"
INTERPRETER_NAMES = {"python", "python3"}


class McpConfigError(ValueError):
    """The config file as a whole is unusable (missing, not JSON, no "mcpServers" or "servers" object)."""


class ServerConfigError(ValueError):
    """One server's entry is broken; the message names the server and the field."""

    def __init__(self, server: str, problem: str) -> None:
        super().__init__(f'MCP server "{server}": {problem}')
        self.server = server
        self.problem = problem


@dataclass(frozen=True)
class ServerConfig:
    name: str
    type: str  # "stdio" | "http" | "sse"
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT
    init_timeout: float = DEFAULT_TIMEOUT  # for the start-up handshake: `initTimeout`, else `timeout`
    # A call reporting progress gets `timeout` again after each notification, up to this in all.
    max_timeout: float = DEFAULT_TIMEOUT * MAX_TIMEOUT_FACTOR
    disabled: bool = False
    max_message_bytes: int = int(DEFAULT_MAX_MESSAGE_MB * 1024 * 1024)
    ping_interval: float = DEFAULT_PING_INTERVAL  # 0: never ping
    # Per-user credentials (userauth.py): OAuth, or the ${user:NAME} names `headers`/`env` keep unexpanded.
    auth: OAuthSettings | None = None
    user_variables: tuple[str, ...] = ()
    allow_private_network: bool = False
    apps: bool = True  # its tools' MCP Apps are shown (apps.py); "apps": false in mcp.json turns them off
    sampling: bool = True  # it may ask to use the user's model, who approves each time (elicitation.py)

    @property
    def per_user(self) -> bool:
        """Whether each user needs a connection of their own (never shared)."""
        return self.auth is not None or bool(self.user_variables)

    # VS Code-only keys the entry has (VSCODE_ONLY_KEYS): logged by the host, no effect on the server.
    ignored: tuple[str, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class McpConfig:
    """The parsed file: every server name in file order, the usable servers, the broken ones by
    name with their error, and the file's top-level keys (checks.py names the unknown ones, so that
    nothing reads the file a second time with another parser)."""

    path: Path
    names: tuple[str, ...] = ()
    servers: tuple[ServerConfig, ...] = ()
    errors: Mapping[str, ServerConfigError] = field(default_factory=dict)
    keys: tuple[str, ...] = field(default=(), compare=False)


def load_config(path: str | os.PathLike, environ: Mapping[str, str] | None = None) -> McpConfig:
    path = Path(path)
    try:
        raw = loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise McpConfigError(f"MCP config file {path} does not exist.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise McpConfigError(f"MCP config file {path} cannot be read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise McpConfigError(
            f"MCP config file {path} is not valid JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    return parse_config(raw, path=path, environ=os.environ if environ is None else environ)


def parse_config(raw: Any, *, path: Path, environ: Mapping[str, str]) -> McpConfig:
    entries = _server_entries(raw, path)
    servers, errors = [], {}
    for name, entry in entries.items():
        try:
            if name in duplicates(entries):
                raise ServerConfigError(name, "is defined more than once in the config file (remove all but one)")
            servers.append(parse_server(name, entry, base_dir=path.parent, environ=environ))
        except ServerConfigError as exc:
            errors[name] = exc
    return McpConfig(path=path, names=tuple(entries), servers=tuple(servers), errors=errors, keys=tuple(raw))


def _server_entries(raw: Any, path: Path) -> dict:
    """The object of servers: "mcpServers" (Claude Desktop, Cursor) or "servers" (VS Code)."""
    lists = [key for key in SERVER_LISTS if isinstance(raw, dict) and key in raw]
    if not lists or not isinstance(raw[lists[0]], dict):
        raise McpConfigError(
            f'MCP config file {path} must be an object with an "mcpServers" (or VS Code\'s "servers") object.'
        )
    if len(lists) > 1:
        raise McpConfigError(f'MCP config file {path} has both "mcpServers" and "servers": keep one.')
    if lists[0] in duplicates(raw):
        raise McpConfigError(f'MCP config file {path} has "{lists[0]}" more than once: keep one.')
    return raw[lists[0]]


def parse_server(name: str, entry: Any, *, base_dir: Path, environ: Mapping[str, str]) -> ServerConfig:
    def fail(problem: str) -> ServerConfigError:
        return ServerConfigError(name, problem)

    _check_name(name, fail)
    if not isinstance(entry, dict):
        raise fail("the entry must be an object")
    ignored = _check_keys(entry, fail)
    kind = entry.get("type", "http" if "url" in entry and "command" not in entry else "stdio")
    if kind not in TYPES:
        raise fail(f'"type" must be "stdio", "http" or "sse", not {kind!r}')
    misplaced = sorted((HTTP_KEYS if kind == "stdio" else STDIO_KEYS) & entry.keys())
    if misplaced:
        raise fail(f'"{misplaced[0]}" does not apply to a "type": "{kind}" server')
    expand = EnvExpander(environ, fail)
    timeout = _number(entry, "timeout", DEFAULT_TIMEOUT, fail)
    common = {
        "name": name,
        "type": kind,
        "timeout": timeout,
        "init_timeout": _number(entry, "initTimeout", timeout, fail),
        "max_timeout": _max_timeout(entry, timeout, fail),
        "disabled": _flag(entry, fail),
        "apps": _flag(entry, fail, "apps", default=True),
        "sampling": _flag(entry, fail, "sampling", default=True),
        "max_message_bytes": int(_number(entry, "max_message_mb", DEFAULT_MAX_MESSAGE_MB, fail) * 1024 * 1024),
        "ping_interval": _number(entry, "ping_interval", DEFAULT_PING_INTERVAL, fail, zero=True),
        "ignored": ignored,
    }
    if common["disabled"]:
        # Kept for later: its command need not exist nor its ${VARS} be set while it is off.
        return ServerConfig(**common)
    common["auth"] = parse_auth(entry, kind, expand, fail)
    common["allow_private_network"] = allow_private_network(entry, fail)
    if kind != "stdio":
        headers = _string_map(entry, "headers", expand, fail)
        common["user_variables"] = user_variables(headers.values())
        return ServerConfig(**common, url=_url(entry, kind, expand, fail), headers=headers)
    cwd = _cwd(entry, base_dir, expand, fail)
    env = _env_file(entry, base_dir, expand, fail) | _string_map(entry, "env", expand, fail)
    common["user_variables"] = user_variables(env.values())
    return ServerConfig(
        **common,
        command=_command(entry, Path(cwd), env, expand, fail),
        args=tuple(expand(arg, f"args[{i}]") for i, arg in enumerate(_string_list(entry, "args", fail))),
        env=env,
        cwd=cwd,
    )


def _check_name(name: str, fail) -> None:
    if not SERVER_NAME_RE.match(name) or TOOL_SEPARATOR in name:
        raise fail(
            "the server name must be 1-61 letters, digits, '_' or '-', without \"__\" and not ending in '_' "
            "(its tools are named <server>__<tool>)"
        )


def _check_keys(entry: dict, fail) -> tuple[str, ...]:
    """The entry's VS Code-only keys (to be ignored); an unknown key is an error."""
    if duplicates(entry):
        raise fail(f'"{duplicates(entry)[0]}" is given more than once')
    if entry.get("sandboxEnabled", False) is not False:
        # Ignoring it would run unconfined a server the file asks to confine.
        raise fail(
            '"sandboxEnabled" asks VS Code to run this server in its sandbox, which Aptix cannot do: '
            "remove it (or set it to false) to run the server without one"
        )
    for key in entry:
        if key not in KNOWN_KEYS and key not in VSCODE_ONLY_KEYS:
            close = difflib.get_close_matches(str(key), sorted(KNOWN_KEYS), n=1)
            hint = f' (did you mean "{close[0]}"?)' if close else f" (known keys: {', '.join(sorted(KNOWN_KEYS))})"
            raise fail(f'unknown key "{key}"{hint}')
    return tuple(key for key in entry if key in VSCODE_ONLY_KEYS)


class EnvExpander:
    """Replaces ${VAR} / ${env:VAR} with the environment's value; an unset variable is an error, and
    so is any other ${...} form (${input:id}, ${command:id}, ...), which only an editor answers."""

    def __init__(self, environ: Mapping[str, str], fail) -> None:
        self._environ = environ
        self._fail = fail

    def __call__(self, value: str, field_name: str) -> str:
        def replace(match: re.Match) -> str:
            if match.group(1).startswith("user:"):
                # A user's named secret: kept as written in headers and env (filled per user when a
                # connection is made, userauth.py), refused anywhere else.
                if not field_name.startswith(("headers.", "env.")) or not USER_REF_RE.fullmatch(match.group(0)):
                    raise self._fail(
                        f'"{field_name}" uses {match.group(0)}: ${{user:NAME}} (NAME: letters, digits, "_") is '
                        'allowed in "headers" and "env" only'
                    )
                return match.group(0)
            reference = ENV_VARIABLE_RE.match(match.group(1))
            if match.group(1).startswith("input:"):
                raise self._fail(f'"{field_name}" uses {match.group(0)}: {INPUTS_ERROR}')
            if reference is None:
                raise self._fail(
                    f'"{field_name}" uses {match.group(0)}, which Aptix cannot expand: '
                    "only ${VAR} and ${env:VAR} (environment variables) are supported"
                )
            variable = reference.group(1)
            if variable not in self._environ:
                raise self._fail(f'"{field_name}" uses ${{{variable}}}, which is not set in the environment')
            return self._environ[variable]

        return REFERENCE_RE.sub(replace, value)


def _string_list(entry: dict, key: str, fail) -> list[str]:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise fail(f'"{key}" must be a list of strings')
    return value


def _string_map(entry: dict, key: str, expand: EnvExpander, fail) -> dict[str, str]:
    value = entry.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise fail(f'"{key}" must be an object of strings')
    if duplicates(value):
        raise fail(f'"{key}.{duplicates(value)[0]}" is given more than once')
    return {k: expand(v, f"{key}.{k}") for k, v in value.items()}


UNITS = {"timeout": "seconds", "initTimeout": "seconds", "ping_interval": "seconds", "max_message_mb": "MiB"}
UNITS["maxTimeout"] = "seconds"


def _number(entry: dict, key: str, default: float, fail, *, zero: bool = False) -> float:
    value = entry.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or (value == 0 and not zero):
        kind = "a positive number or 0" if zero else "a positive number"
        raise fail(f'"{key}" must be {kind} of {UNITS[key]}')
    return float(value)


def _max_timeout(entry: dict, timeout: float, fail) -> float:
    value = _number(entry, "maxTimeout", timeout * MAX_TIMEOUT_FACTOR, fail)
    if value < timeout:
        raise fail(f'"maxTimeout" ({value:g} s) must be at least "timeout" ({timeout:g} s)')
    return value


def _flag(entry: dict, fail, key: str = "disabled", *, default: bool = False) -> bool:
    value = entry.get(key, default)
    if not isinstance(value, bool):
        raise fail(f'"{key}" must be true or false')
    return value


def _url(entry: dict, kind: str, expand: EnvExpander, fail) -> str:
    value = entry.get("url")
    if not isinstance(value, str) or not value:
        raise fail(f'"url" is required for a "type": "{kind}" server')
    url = expand(value, "url")
    if not url.startswith(("http://", "https://")):
        raise fail(f'"url" must start with http:// or https://, not {url!r}')
    return url


def _cwd(entry: dict, base_dir: Path, expand: EnvExpander, fail) -> str:
    value = entry.get("cwd", ".")
    if not isinstance(value, str) or not value:
        raise fail('"cwd" must be a non-empty string')
    cwd = (base_dir / expand(value, "cwd")).resolve()
    if not cwd.is_dir():
        raise fail(f'"cwd" {cwd} is not a directory')
    return str(cwd)


def _env_file(entry: dict, base_dir: Path, expand: EnvExpander, fail) -> dict[str, str]:
    value = entry.get("envFile")
    if value is None:
        return {}
    if not isinstance(value, str) or not value:
        raise fail('"envFile" must be a non-empty string (a dotenv file, relative to the config file)')
    try:
        return read_env_file((base_dir / expand(value, "envFile")).resolve())
    except EnvFileError as exc:
        raise fail(f'"envFile" {exc}') from None


def _command(entry: dict, cwd: Path, env: Mapping[str, str], expand: EnvExpander, fail) -> str:
    value = entry.get("command")
    if not isinstance(value, str) or not value.strip():
        raise fail('"command" is required (a non-empty string)')
    command = expand(value, "command")
    resolved = resolve_command(command, cwd=cwd, path=env.get("PATH", os.environ.get("PATH", "")))
    if resolved is None:
        where = f"{cwd}" if os.sep in command else f"{Path(sys.executable).parent} and PATH"
        raise fail(f'"command" {command!r} was not found (looked in {where})')
    return resolved


def resolve_command(command: str, *, cwd: Path, path: str) -> str | None:
    """The executable to spawn: the running interpreter for python/python3, then the venv's bin
    directory, then PATH. A command with a slash is a path (relative to `cwd`)."""
    if command in INTERPRETER_NAMES:
        return sys.executable
    if os.sep in command:
        candidate = cwd / command
        return str(candidate) if os.access(candidate, os.X_OK) and candidate.is_file() else None
    in_venv = Path(sys.executable).parent / command
    if os.access(in_venv, os.X_OK) and in_venv.is_file():
        return str(in_venv)
    return shutil.which(command, path=path)
