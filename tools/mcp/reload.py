"""Live reloading of mcp.json: what changed between two parsed configs, and when to look again.

How a reload reaches the running processes: the MCP host runs inside each web and worker process,
and `manage.py mcp_reload` is a process of its own, so the request travels through the file
system. Every host polls two files every `RELOAD_POLL` seconds (an `os.stat` each, nothing more):
the config file itself and the request file `var/mcp-reload`, which `mcp_reload` touches. When
either one's (mtime, size, inode) changes, the host re-reads the config and applies the
difference. A file, not a signal or a socket, because it reaches every process on the machine
(Daphne, `aptix_worker`, several of each) without knowing their pids, survives a process that is
restarting at that moment (it reads the config anew anyway), and needs no extra service.

A restart (`mcp_reload --restart <server>` or `--all`, the admin's Restart buttons) is needed when
nothing in the config changed but the server did (its code, a file it reads at start-up). It goes
the same way through a third file, `var/mcp-restart`, to which each request appends one line,
"<request id> <server>,<server>" or "<request id> *" (names never hold spaces or commas). Every host
reads the lines added since it last looked (RestartRequests), applies any change to the config
first, then restarts the named servers that change did not just start or restart. A host that
starts later does not act on earlier requests. Past RESTART_FILE_LIMIT bytes the file is replaced by
one holding only the new request (a new inode, so readers read it from its beginning).
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .config import McpConfig, ServerConfig, ServerConfigError

logger = logging.getLogger("aptix.mcp")

RELOAD_POLL = 2.0  # seconds between two looks at the config file and the reload request file
REQUEST_FILE = "mcp-reload"  # in the var directory; `manage.py mcp_reload` touches it
RESTART_FILE = "mcp-restart"  # in the var directory; restart requests are appended to it
RESTART_FILE_LIMIT = 64 * 1024
ALL_SERVERS = "*"

Entry = ServerConfig | ServerConfigError  # one server of a parsed config: usable, or why not


def entries(config: McpConfig) -> dict[str, Entry]:
    """Each server of `config` by name, in file order."""
    servers = {server.name: server for server in config.servers}
    return {name: config.errors.get(name) or servers[name] for name in config.names}


def log_ignored_keys(servers: Iterable[Entry]) -> None:
    """Log the VS Code-only keys of these entries (config.VSCODE_ONLY_KEYS), which are ignored."""
    for server in servers:
        if isinstance(server, ServerConfig) and server.ignored:
            keys = ", ".join(f'"{key}"' for key in server.ignored)
            logger.info(
                'MCP server "%s": ignoring %s (VS Code-only: configures VS Code, not the server)',
                server.name,
                keys,
                extra={"server": server.name},
            )


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

    @classmethod
    def of(
        cls, old: dict[str, Entry], new: dict[str, Entry], changed: list[str], *, kept: tuple[str, ...]
    ) -> ReloadResult:
        """What replacing the entries `old` with `new` (`changed`: the names whose entry changed) did."""
        gone = [name for name in old if name not in new]
        return cls(
            started=tuple(n for n in changed if runnable(new[n]) and not runnable(old.get(n))),
            restarted=tuple(n for n in changed if runnable(new[n]) and runnable(old.get(n))),
            stopped=tuple(n for n in [*changed, *gone] if runnable(old.get(n)) and not runnable(new.get(n))),
            unchanged=tuple(name for name in new if name not in changed),
            updated=tuple(n for n in [*changed, *gone] if not runnable(old.get(n)) and not runnable(new.get(n))),
            kept=kept,
        )

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


def request_restart(var_dir: Path, servers: Sequence[str] | None) -> tuple[Path, str]:
    """Ask every running host to restart `servers` (None: all of them); returns the request file and
    the request's id (the host that asks applies it at once and skips it when it reads it back)."""
    path = Path(var_dir) / RESTART_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    request_id = uuid.uuid4().hex
    line = f"{request_id} {','.join(servers) if servers is not None else ALL_SERVERS}\n"
    if signature(path) is not None and path.stat().st_size > RESTART_FILE_LIMIT:
        fresh = path.with_name(f"{path.name}.{request_id}")
        fresh.write_text(line, encoding="utf-8")
        os.replace(fresh, path)
    else:
        with open(path, "a", encoding="utf-8") as requests:  # O_APPEND: each line lands whole
            requests.write(line)
    return path, request_id


class RestartRequests:
    """The restart requests appended to the request file since the last look: (id, servers), where
    servers is None for all of them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._inode, self._offset = self._where()

    def _where(self) -> tuple[int | None, int]:
        try:
            stat = os.stat(self.path)
        except OSError:
            return None, 0
        return stat.st_ino, stat.st_size

    def new(self) -> list[tuple[str, tuple[str, ...] | None]]:
        inode, size = self._where()
        if inode is None or (inode == self._inode and size == self._offset):
            return []
        if inode != self._inode or size < self._offset:
            self._inode, self._offset = inode, 0  # a new file: every line of it is new
        try:
            with open(self.path, "rb") as requests:
                requests.seek(self._offset)
                data = requests.read(max(0, size - self._offset))
        except OSError:
            return []
        complete = data[: data.rfind(b"\n") + 1]  # a line still being written is read next time
        self._offset += len(complete)
        found = []
        for line in complete.decode("utf-8", "replace").splitlines():
            request_id, _, names = line.strip().partition(" ")
            if request_id and names:
                found.append((request_id, None if names == ALL_SERVERS else tuple(names.split(","))))
        return found
