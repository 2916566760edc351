"""The system check of mcp.json (registered in tools/apps.py): a file that cannot be used, a server
entry that is broken, or a key the format does not have stops `manage.py check`, `aptix_serve` and
`aptix_worker` at start-up, naming the file, the server, the key and the problem, instead of starting
with that server failed. VS Code's `inputs` list is accepted (and ignored, docs/mcp.md); no mcp.json
at all means no MCP servers. A file changed under a running process is the host's to report
(reload.py: the running servers are kept). The file is read once, by config.load_config, the one
parser of mcp.json (JSONC: comments and trailing commas, as everywhere else it is read)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core import checks

from .config import SERVER_LISTS, McpConfigError, load_config

TOP_LEVEL_KEYS = {*SERVER_LISTS, "inputs"}  # "inputs": VS Code's prompts, which nobody here answers
HINT = "Fix the MCP configuration (docs/mcp.md)."


def check_mcp_config(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    if not settings.APTIX_MCP_AUTOSTART:  # this process starts no MCP host: the file is not its to use
        return []
    path = Path(settings.APTIX_MCP_CONFIG)
    if not path.exists():
        return []
    try:
        config = load_config(path)
    except McpConfigError as exc:
        return [checks.Error(str(exc), hint=HINT, id="aptix.E002")]
    problems = [f"{path}: {error}" for error in config.errors.values()]
    known = ", ".join(sorted(TOP_LEVEL_KEYS))
    unknown = [key for key in config.keys if key not in TOP_LEVEL_KEYS]
    problems += [f'{path}: unknown key "{key}" (known keys: {known})' for key in unknown]
    return [checks.Error(problem, hint=HINT, id="aptix.E002") for problem in problems]
