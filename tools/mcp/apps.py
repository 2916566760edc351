"""MCP Apps (the `io.modelcontextprotocol/ui` extension, spec 2026-01-26), the protocol half: which
tools come with an app, who may call them, and what an app's `ui://` resource declares.

A tool names its app in `_meta.ui.resourceUri` (or the older flat `_meta["ui/resourceUri"]`): a
`ui://` resource of MIME type `text/html;profile=mcp-app` whose `_meta.ui` says what the app may load
(`csp`: connect, resource, frame and base-URI domains), which browser features it asks for
(`permissions`) and whether it wants a border. `_meta.ui.visibility` says who may call the tool:
"model" (offered to the model), "app" (callable by an app of the same server); both by default.

Nothing here trusts the server: the CSP domains become a Content-Security-Policy header of the
frame that shows the app (agents/web/apps.py), so each must be a plain origin (https, or wss; http
and ws only for localhost), never a keyword, a scheme alone or anything with a quote, a semicolon
or a space that could add a directive. A domain that is not is dropped (the app loads less, never
more), and the resource's size is bounded (MAX_APP_BYTES): a bigger one is not shown.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

EXTENSION = "io.modelcontextprotocol/ui"
APP_MIME = "text/html;profile=mcp-app"
CLIENT_SETTINGS = {"mimeTypes": [APP_MIME]}
MAX_APP_BYTES = 2 * 1024 * 1024  # of an app's HTML; the published examples bundle their SDK: ~220 KB
CSP_KEYS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
PERMISSIONS = ("camera", "microphone", "geolocation", "clipboardWrite")
MAX_DOMAINS = 32  # per CSP key
_DOMAIN = re.compile(
    r"^(?:https|wss)://(?:\*\.)?[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*"
    r"(?::\d{1,5})?$"
)
_LOCAL = re.compile(r"^(?:http|ws)://(?:localhost|127\.0\.0\.1)(?::\d{1,5})?$")


def _ui_meta(meta: Any) -> Mapping[str, Any]:
    ui = meta.get("ui") if isinstance(meta, Mapping) else None
    return ui if isinstance(ui, Mapping) else {}


def app_uri(tool: types.Tool) -> str | None:
    """The `ui://` resource of `tool`'s app, or None when it has none."""
    meta = tool.meta if isinstance(tool.meta, Mapping) else {}
    uri = _ui_meta(meta).get("resourceUri") or meta.get("ui/resourceUri")
    return uri if isinstance(uri, str) and uri.startswith("ui://") and len(uri) <= 2000 else None


def visibility(tool: types.Tool) -> frozenset[str]:
    """Who may call `tool`: {"model", "app"} unless its `_meta.ui.visibility` narrows it."""
    given = _ui_meta(tool.meta).get("visibility")
    if not isinstance(given, list) or not given:
        return frozenset({"model", "app"})
    return frozenset(str(item) for item in given if item in ("model", "app"))


def for_model(tool: types.Tool) -> bool:
    return "model" in visibility(tool)


def for_app(tool: types.Tool) -> bool:
    return "app" in visibility(tool)


@dataclass(frozen=True)
class AppResource:
    """An app's HTML and what its resource declares, checked (module docstring)."""

    uri: str
    html: str
    csp: dict[str, list[str]] = field(default_factory=dict)
    permissions: dict[str, dict] = field(default_factory=dict)
    prefers_border: bool | None = None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.html.encode()).hexdigest()

    def declared(self) -> dict[str, Any]:
        """What the page's frame needs besides the HTML (kept with the tool's result)."""
        return {"uri": self.uri, "csp": self.csp, "permissions": self.permissions, "prefersBorder": self.prefers_border}


APP_DIR = "apps"  # in Django's storage: apps/<sha256>.html, each app's HTML once however often shown


def store_app(app: AppResource, storage: Any = None) -> str:
    """Keep `app`'s HTML in Django's storage (once per content) for the conversation to show it again
    later, whatever the server serves by then; its sha256."""
    from django.core.files.base import ContentFile

    if storage is None:
        from django.core.files.storage import default_storage

        storage = default_storage
    digest = app.sha256
    path = f"{APP_DIR}/{digest}.html"
    if not storage.exists(path):
        storage.save(path, ContentFile(app.html.encode()))
    return digest


def stored_app(digest: str, storage: Any = None) -> str | None:
    """The HTML kept by store_app under `digest`; None when it is not (or `digest` is no sha256)."""
    if not re.fullmatch(r"[0-9a-f]{64}", digest or ""):
        return None
    if storage is None:
        from django.core.files.storage import default_storage

        storage = default_storage
    path = f"{APP_DIR}/{digest}.html"
    if not storage.exists(path):
        return None
    with storage.open(path, "rb") as handle:
        return handle.read().decode()


class NotAnApp(ValueError):
    """The resource read for a tool's app is not one (wrong type, too big, no HTML)."""


def app_resource(uri: str, result: types.ReadResourceResult, *, local: bool = False) -> AppResource:
    """The app in `result` (a resources/read of `uri`); NotAnApp saying why it cannot be shown.
    `local`: http and ws origins of localhost are allowed in the CSP too (development)."""
    for content in result.contents:
        if not isinstance(content, types.TextResourceContents):
            continue
        mime = (content.mime_type or "").replace(" ", "").lower()
        if mime != APP_MIME:
            raise NotAnApp(f"the resource {uri} is {content.mime_type or 'of no type'}, not {APP_MIME}")
        if len(content.text.encode()) > MAX_APP_BYTES:
            raise NotAnApp(f"the resource {uri} is over {MAX_APP_BYTES // (1024 * 1024)} MiB")
        ui = _ui_meta(content.meta)
        border = ui.get("prefersBorder")
        return AppResource(
            uri=uri,
            html=content.text,
            csp=checked_csp(ui.get("csp"), local=local),
            permissions={
                name: {}
                for name in PERMISSIONS
                if isinstance(ui.get("permissions"), Mapping) and name in ui["permissions"]
            },
            prefers_border=border if isinstance(border, bool) else None,
        )
    raise NotAnApp(f"the resource {uri} has no HTML text")


def checked_csp(given: Any, *, local: bool = False) -> dict[str, list[str]]:
    """The CSP domains of `given` that are plain origins (module docstring), by key."""
    csp: dict[str, list[str]] = {}
    if not isinstance(given, Mapping):
        return csp
    for key in CSP_KEYS:
        values = given.get(key)
        if not isinstance(values, list):
            continue
        kept = [v.lower().rstrip("/") for v in values if isinstance(v, str)]
        kept = [v for v in kept if _DOMAIN.match(v) or (local and _LOCAL.match(v))]
        if kept:
            csp[key] = sorted(set(kept))[:MAX_DOMAINS]
    return csp


def frame_policy(csp: Mapping[str, list[str]], *, host_origin: str, script_origin: str) -> str:
    """The Content-Security-Policy of the frame an app runs in (the sandbox proxy page, whose policy
    its inner `srcdoc` frame inherits): nothing from the network but what `csp` (checked) names;
    inline script and style, as a bundled single-file app needs; framed by Aptix's origin only."""
    resources = " ".join(csp.get("resourceDomains", []))
    connect = " ".join(csp.get("connectDomains", [])) or "'none'"
    frames = " ".join(csp.get("frameDomains", [])) or "'none'"
    base = " ".join(csp.get("baseUriDomains", [])) or "'none'"
    media = f"data: blob: {resources}".strip()
    directives = [
        "default-src 'none'",
        f"script-src {script_origin} 'unsafe-inline' {resources}".strip(),
        f"style-src 'unsafe-inline' {resources}".strip(),
        f"img-src {media}",
        f"font-src {media}",
        f"media-src {media}",
        f"connect-src {connect}",
        f"frame-src {frames}",
        f"base-uri {base}",
        "form-action 'none'",
        "object-src 'none'",
        f"frame-ancestors {host_origin}",
    ]
    return "; ".join(directives)
