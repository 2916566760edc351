"""A server's resources (MCP `resources/list` and `resources/templates/list`), listed once its
session is up and kept in its status (the Tools panel shows them), and `resources/read` of one URI
(`McpHost.read_resource`), answered as a tool result is: text, and images or files stored for the
session (rich.py)."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

import mcp_types as types

logger = logging.getLogger("aptix.mcp")

MAX_LISTED = 500  # resources kept per server (a file server may list thousands)


@dataclass(frozen=True)
class ResourceInfo:
    """One resource, or (`template` True) one URI template such as `file:///{path}`."""

    uri: str
    name: str
    description: str = ""
    mime_type: str = ""
    template: bool = False

    def matches(self, uri: str) -> bool:
        """Whether `uri` is this resource, or fits this template (each `{var}` one or more characters)."""
        if not self.template:
            return uri == self.uri
        pattern = "".join(".+?" if part.startswith("{") else re.escape(part) for part in _parts(self.uri))
        return re.fullmatch(pattern, uri) is not None


def _parts(template: str) -> list[str]:
    return [part for part in re.split(r"(\{[^}]*\})", template) if part]


async def list_resources(client: Any) -> tuple[ResourceInfo, ...]:
    """The server's resources and templates (none when it does not declare `resources`); a server
    that fails to list them is logged and shows none, its tools still work."""
    capabilities = client.server_capabilities
    if capabilities.resources is None:
        return ()
    found: list[ResourceInfo] = []
    try:
        cursor = None
        while len(found) < MAX_LISTED:
            page = await client.list_resources(cursor=cursor)
            found += [_info(r) for r in page.resources]
            if (cursor := page.next_cursor) is None:
                break
        cursor = None
        while len(found) < MAX_LISTED:
            listed = await client.list_resource_templates(cursor=cursor)
            found += [_info(t, template=True) for t in listed.resource_templates]
            if (cursor := listed.next_cursor) is None:
                break
    except Exception as exc:  # noqa: BLE001 - the resources are extra: the server's tools go on
        logger.warning("MCP: could not list the resources (%s: %s)", type(exc).__name__, exc)
    return tuple(found[:MAX_LISTED])


def _info(item: types.Resource | types.ResourceTemplate, *, template: bool = False) -> ResourceInfo:
    uri = item.uri_template if isinstance(item, types.ResourceTemplate) else str(item.uri)
    return ResourceInfo(
        uri=uri,
        name=item.title or item.name,
        description=(item.description or "").strip(),
        mime_type=item.mime_type or "",
        template=template,
    )


def as_blocks(result: types.ReadResourceResult) -> list[types.ImageContent | types.EmbeddedResource]:
    """A read's contents as the blocks a tool result would carry (rich.py shows them): an image as an
    image (shown, and seen by a vision model), anything else as an embedded resource (text shown,
    other files a download)."""
    blocks: list[types.ImageContent | types.EmbeddedResource] = []
    for content in result.contents:
        mime = content.mime_type or ""
        if isinstance(content, types.BlobResourceContents) and mime.startswith("image/"):
            blocks.append(types.ImageContent(type="image", data=content.blob, mime_type=mime))
        else:
            blocks.append(types.EmbeddedResource(type="resource", resource=content))
    return blocks
