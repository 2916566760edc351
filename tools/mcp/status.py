"""The status of one MCP server, as the admin page, the Tools panel and `manage.py mcp_status` show it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime

from .handshake import Handshake
from .prompts import PromptInfo
from .resources import ResourceInfo


@dataclass(frozen=True)
class ServerStatus:
    """A snapshot, replaced (never mutated) on every change, so any thread may read it.

    state: starting | ready | restarting | failed | disabled | stopped. A "failed" HTTP server is
    still retried with backoff (`attempt` counts the tries); a failed stdio server is not.
    `dropped` holds the tools the server offered that are not published, each with why;
    `renamed` maps a published name to the server's own name where sanitising changed it;
    `handshake` is what the current (or last) session agreed on (protocol, capabilities, instructions)."""

    name: str
    type: str
    state: str
    tools: tuple[str, ...] = ()
    error: str | None = None
    pid: int | None = None
    started_at: datetime | None = None
    restarts: int = 0
    attempt: int = 0
    dropped: tuple[tuple[str, str], ...] = ()
    renamed: tuple[tuple[str, str], ...] = ()
    handshake: Handshake | None = None
    resources: tuple[ResourceInfo, ...] = ()  # its resources and URI templates (resources.py)
    prompts: tuple[PromptInfo, ...] = ()  # its prompts (prompts.py)

    @property
    def settled(self) -> bool:
        """Done starting, one way or the other."""
        return self.state in ("ready", "failed", "disabled", "stopped")

    def describe(self) -> str:
        if self.state == "ready":
            text = f"ready with {len(self.tools)} tool{'s' if len(self.tools) != 1 else ''}"
            return text + (f", {len(self.dropped)} dropped" if self.dropped else "")
        if self.state == "restarting":
            return f"restarting (attempt {self.attempt})"
        if self.state == "failed":
            retry = f" (retrying with backoff, attempt {self.attempt})" if self.attempt else ""
            return f"failed: {self.error}{retry}"
        return self.state

    def tool_rows(self) -> list[tuple[str, str]]:
        """(published name, the server's own name when sanitising changed it, else "")."""
        renamed = dict(self.renamed)
        return [(name, renamed.get(name, "")) for name in self.tools]

    def as_dict(self) -> dict:
        data = asdict(self)
        data["tools"] = list(self.tools)
        data["dropped"] = [{"tool": tool, "reason": reason} for tool, reason in self.dropped]
        data["renamed"] = dict(self.renamed)
        data["started_at"] = self.started_at.isoformat() if self.started_at else None
        data["resources"] = [{k: v for k, v in r.items() if v not in ("", False)} for r in data["resources"]]
        data["prompts"] = [prompt.as_json(self.name) for prompt in self.prompts]
        return data
