"""Live reloading of mcp.json: what changed between two parsed configs, and when to look again.

How a reload reaches the running processes: the MCP host runs inside each web and worker process,
and `manage.py mcp_reload` is a process of its own, so the request travels through the file
system. Every host polls two files every `RELOAD_POLL` seconds (an `os.stat` each, nothing more):
the config file itself and the request file `var/mcp-reload`, which `mcp_reload` touches. When
either one's (mtime, size, inode) changes, the host re-reads the config and applies the
difference. A file, not a signal or a socket, because it reaches every process on the machine
(Daphne, `aptix_worker`, several of each) without knowing their pids, survives a process that is
restarting at that moment (it reads the config anew anyway), and needs no extra service.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .config import McpConfig, ServerConfig, ServerConfigError

RELOAD_POLL = 2.0  # seconds between two looks at the config file and the reload request file
REQUEST_FILE = "mcp-reload"  # in the var directory; `manage.py mcp_reload` touches it

Entry = ServerConfig | ServerConfigError  # one server of a parsed config: usable, or why not


def entries(config: McpConfig) -> dict[str, Entry]:
    """Each server of `config` by name, in file order."""
    servers = {server.name: server for server in config.servers}
    return {name: config.errors.get(name) or servers[name] for name in config.names}


def same(old: Entry | None, new: Entry) -> bool:
    """Would the server run exactly as it does now? Parsed configs compare field by field (so a
    change in an `envFile` or a `${VAR}` counts, and reformatting the JSON does not)."""
    if isinstance(old, ServerConfigError) or isinstance(new, ServerConfigError):
        return isinstance(old, ServerConfigError) and isinstance(new, ServerConfigError) and str(old) == str(new)
    return old == new


def runnable(entry: Entry | None) -> ServerConfig | None:
    return entry if isinstance(entry, ServerConfig) and not entry.disabled else None


@dataclass(frozen=True)
class ReloadResult:
    """What a reload did, by server name; `error` when the file could not be used (nothing changed).
    `updated`: entries that changed without a process starting or stopping (added, removed or
    changed while disabled or broken)."""

    started: tuple[str, ...] = ()
    restarted: tuple[str, ...] = ()
    stopped: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()  # errors of changed entries not applied: those servers run as they were
    error: str | None = None

    def describe(self) -> str:
        if self.error:
            return f"{self.error} The servers already running were kept."
        parts = [
            f"{verb} {', '.join(names)}"
            for verb, names in (
                ("started", self.started),
                ("restarted", self.restarted),
                ("stopped", self.stopped),
                ("updated", self.updated),
            )
            if names
        ]
        kept = "".join(f" {error}: it runs on as it was." for error in self.kept)
        if not parts:
            return f"Nothing changed ({len(self.unchanged)} server(s) as before).{kept}"
        return "MCP servers " + "; ".join(parts) + f" ({len(self.unchanged)} unchanged).{kept}"


Signature = tuple[int, int, int] | None


def signature(path: Path) -> Signature:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size, stat.st_ino)


class FileWatch:
    """Tells whether any of some files changed since the last look."""

    def __init__(self, paths: Iterable[Path]) -> None:
        self.paths = tuple(paths)
        self._seen = self._look()

    def _look(self) -> tuple[Signature, ...]:
        return tuple(signature(path) for path in self.paths)

    def changed(self) -> bool:
        now = self._look()
        changed, self._seen = now != self._seen, now
        return changed


def request_reload(var_dir: Path) -> Path:
    """Ask every running host to reload (see the module docstring); returns the request file."""
    path = Path(var_dir) / REQUEST_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    os.utime(path)  # touch() keeps an existing file's mtime on some file systems
    return path
