"""Rich content of MCP tool results: images, audio and other blobs, resource links and embedded
resources, turned into what the model reads and what the user sees.

`describe_blocks` runs where the answer arrives (the host loop): it only describes. Images and
blobs are decoded and kept as `Attachment`s with their bytes in a `RichResult`; `store_attachments`
(run on a thread by the registry entry, which knows the session) then saves them through Django's
storage, per session, as image_gen's pictures are:

    images/<session id>/<32 hex>.(png|jpg|gif|webp)   shown inline (agents/web/views/media.py)
    files/<session id>/<32 hex>/<name>                always a download (Content-Disposition: attachment)

Only raster images that Pillow reads as PNG, JPEG, GIF or WebP are shown; anything else claiming
to be an image (SVG, which may carry script, or bytes that are no image at all) is a download. A PNG
whose optional (ancillary) chunk has a wrong checksum, which browsers display since libpng then
drops that chunk, is shown too, stored without that chunk: the reference MCP server's own sample
image has an iCCP colour profile with a bad CRC, which Pillow refuses outright.
Links are links only for http and https. Sizes are bounded by the server's `max_message_mb` (a
bigger message never arrives), MAX_ATTACHMENTS per result and RESOURCE_TEXT_CHARS per embedded
text shown in its card.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import mimetypes
import re
import uuid
import zlib
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

import mcp_types as types

from aptix.ids import HEX_ID
from tools.base import InvokeResult

from .apps import MAX_APP_BYTES

MAX_ATTACHMENTS = 20  # images, files, links and resources shown per result; the rest are only named
RESOURCE_TEXT_CHARS = 20_000  # of an embedded text resource kept for its card (the model gets it all)
IMAGE_FORMATS = {"PNG": ("png", "image/png"), "JPEG": ("jpg", "image/jpeg"), "GIF": ("gif", "image/gif")}
IMAGE_FORMATS["WEBP"] = ("webp", "image/webp")
LINK_SCHEMES = ("http", "https")
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
# What mimetypes does not know on every system (it has audio/x-wav, not audio/wav).
_EXTENSIONS = {"audio/wav": ".wav", "audio/mpeg": ".mp3", "audio/ogg": ".ogg", "audio/webm": ".weba"}


@dataclass(frozen=True)
class Attachment:
    """One non-text content block. `kind`: "image" (shown), "file" (a download), "link" or
    "resource" (embedded text, shown collapsed). `data` holds the bytes until they are stored."""

    kind: str
    name: str
    mime: str = ""
    size: int = 0  # bytes of an image or file, characters of a resource's text
    url: str = ""  # /media/… once stored; a link's address (http/https only)
    uri: str = ""  # what the server called it (a link or resource URI)
    text: str = ""  # a resource's text (cut to RESOURCE_TEXT_CHARS)
    width: int = 0
    height: int = 0
    path: str = ""  # the storage name once stored (read again to show an image to a vision model)
    data: bytes = field(default=b"", repr=False, compare=False)

    def payload(self) -> dict[str, Any]:
        """What the tool.result event keeps (no bytes)."""
        fields = ("kind", "name", "mime", "size", "url", "uri", "width", "height", "path")
        kept = {key: value for key in fields if (value := getattr(self, key)) not in ("", 0)}
        if self.text:
            kept["text"] = self.text[:RESOURCE_TEXT_CHARS]
        return kept

    def placeholder(self, number: int) -> str:
        """What the model reads in place of this block (it names the image, so a model that cannot
        see images still knows there is one and where the user sees it)."""
        size = f"{self.size:,} bytes"
        if self.kind == "image":
            where = f": {self.url}" if self.url else ""
            return (
                f"[image {number} ({self.mime}, {self.width}×{self.height}, {size}){where} — the user sees it "
                f"with the tool call; to show it in the answer write ![description]({self.url or 'its URL'})]"
            )
        if self.kind == "file":
            return f"[file {self.name} ({self.mime or 'unknown type'}, {size}) — offered to the user as a download]"
        if self.kind == "link":
            return f"[resource link {self.name}: {self.uri}{f' ({self.mime})' if self.mime else ''}]"
        return f"[resource {self.uri}{f' ({self.mime})' if self.mime else ''}]"


@dataclass(frozen=True)
class RichResult(InvokeResult):
    """A successful result with non-text content. `parts` are its blocks in order (text, or an
    Attachment); `result` is what the model reads and `text` the text blocks alone (the card shows
    the attachments apart)."""

    parts: tuple[str | Attachment, ...] = ()
    text: str = ""

    @property
    def attachments(self) -> tuple[Attachment, ...]:
        return tuple(part for part in self.parts if isinstance(part, Attachment))


def describe_blocks(content: list[Any]) -> tuple[list[str | Attachment], list[str]]:
    """The blocks as parts (text or Attachment) and as the plain description the model reads before
    anything is stored."""
    parts: list[str | Attachment] = []
    described: list[str] = []
    shown = 0
    for block in content:
        part = _part(block)
        if isinstance(part, Attachment):
            shown += 1
            if shown > MAX_ATTACHMENTS:
                part = f"[{part.kind} {part.name} left out: over {MAX_ATTACHMENTS} attachments in one result]"
        parts.append(part)
        described.append(describe_block(block))
    return parts, described


def rich_result(parts: list[str | Attachment], described: list[str]) -> InvokeResult:
    """A plain InvokeResult when every part is text; a RichResult otherwise."""
    text = "\n".join(described)
    if all(isinstance(part, str) for part in parts):
        return InvokeResult.create(text)
    only_text = "\n".join(part for part in parts if isinstance(part, str))
    return RichResult(successful=True, result=text, parts=tuple(parts), text=only_text)


def format_result(result: types.CallToolResult, name: str, *, keep: bool = False) -> InvokeResult:
    """A tool call's answer as a tool result: text content joined, other content described briefly
    (a RichResult keeps it for the card and the model); structured content when there is no content
    at all. A tool-side error (is_error) becomes a tool error with the server's text. `keep`: the
    result as the server sent it is kept too (`view["result"]`, for its MCP App: apps.py), unless it is
    larger than an app's HTML may be."""
    formatted = _formatted(result, name)
    if not keep:
        return formatted
    raw = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    raw.pop("resultType", None)
    if len(json.dumps(raw)) > MAX_APP_BYTES:
        raw = {"content": [{"type": "text", "text": formatted.result or formatted.error_message or ""}]}
    return replace(formatted, view={"result": raw})


def _formatted(result: types.CallToolResult, name: str) -> InvokeResult:
    if not result.content and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False)
        return InvokeResult.from_error(text) if result.is_error else InvokeResult.create(text)
    if result.is_error:
        text = "\n".join(describe_block(block) for block in result.content)
        return InvokeResult.from_error(text or f'MCP tool "{name}" failed without a message.')
    return rich_result(*describe_blocks(result.content))


def store_attachments(result: RichResult, session_id: str | None, storage: Any = None) -> RichResult:
    """Save the images and files of `result` for `session_id` and rewrite what the model reads
    with their addresses. Without a session (nobody could be shown them) nothing is stored."""
    if storage is None:
        from django.core.files.storage import default_storage

        storage = default_storage
    session = str(session_id or "")
    parts: list[str | Attachment] = []
    lines: list[str] = []
    images = 0
    for given in result.parts:
        part = given
        if isinstance(part, Attachment):
            if part.data and HEX_ID.fullmatch(session):
                part = _store(part, session, storage)
            images += part.kind == "image"
            lines.append(part.placeholder(images) + (f"\n{part.text}" if part.kind == "resource" else ""))
        else:
            lines.append(part)
        parts.append(part)
    return replace(result, parts=tuple(parts), result="\n".join(lines))


def _store(part: Attachment, session: str, storage: Any) -> Attachment:
    from django.core.files.base import ContentFile

    if part.kind == "image":
        extension = next(ext for ext, mime in IMAGE_FORMATS.values() if mime == part.mime)
        name = f"images/{session}/{uuid.uuid4().hex}.{extension}"
    else:
        name = f"files/{session}/{uuid.uuid4().hex}/{part.name}"
    stored = storage.save(name, ContentFile(part.data))
    return replace(part, path=stored, url=storage.url(stored), data=b"")


def _part(block: Any) -> str | Attachment:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent):
        return _image(_decode(block.data), block.mime_type)
    if isinstance(block, types.AudioContent):
        return _file(_decode(block.data), block.mime_type, "audio")
    if isinstance(block, types.ResourceLink):
        url = block.uri if urlsplit(str(block.uri)).scheme.lower() in LINK_SCHEMES else ""
        name = block.title or block.name or str(block.uri)
        return Attachment("link", name, block.mime_type or "", block.size or 0, url=url, uri=str(block.uri))
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        mime = resource.mime_type or ""
        if isinstance(resource, types.TextResourceContents):
            name = _file_name(str(resource.uri), mime, "resource")
            text = resource.text
            return Attachment("resource", name, mime, len(text), uri=str(resource.uri), text=text)
        if mime.startswith("image/"):  # shown as an image when a browser would show it, else a download
            return replace(_image(_decode(resource.blob), mime), uri=str(resource.uri))
        named = _file_name(str(resource.uri), mime, "resource")
        return replace(_file(_decode(resource.blob), mime, named), uri=str(resource.uri))
    return f"[{getattr(block, 'type', type(block).__name__)} content]"


def describe_block(block: Any) -> str:
    """The text the model read for a block before rich content was shown (kept for results that are
    not stored: no session)."""
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, (types.ImageContent, types.AudioContent)):
        kind = "image" if isinstance(block, types.ImageContent) else "audio"
        return f"[{kind} {block.mime_type}, {len(block.data) * 3 // 4} bytes]"
    if isinstance(block, types.ResourceLink):
        return f"[resource link {block.uri}{f' ({block.mime_type})' if block.mime_type else ''}]"
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return resource.text
        return f"[resource {resource.uri}{f' ({resource.mime_type})' if resource.mime_type else ''}]"
    return f"[{getattr(block, 'type', type(block).__name__)} content]"


def _decode(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return b""


def _image(data: bytes, mime: str) -> Attachment:
    """An image Pillow reads as one of IMAGE_FORMATS (a PNG once its broken optional chunks are
    dropped, if it has any); anything else is offered as a download."""
    kind, size = _raster(data)
    if kind is None and (repaired := without_broken_chunks(data)) is not None:
        kind, size = _raster(repaired)
        data = repaired if kind is not None else data
    if kind not in IMAGE_FORMATS:
        return _file(data, mime, "image")
    extension, real_mime = IMAGE_FORMATS[kind]
    return Attachment("image", f"image.{extension}", real_mime, len(data), width=size[0], height=size[1], data=data)


def _raster(data: bytes) -> tuple[str | None, tuple[int, int]]:
    """(Pillow's format, size) of an image it reads and checks, or (None, (0, 0))."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            image.verify()  # reads the headers and checks the data without decoding every pixel
            return image.format, image.size
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, Image.DecompressionBombError):
        return None, (0, 0)


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def without_broken_chunks(data: bytes) -> bytes | None:
    """The PNG without its ancillary chunks whose CRC is wrong (libpng's default, so what browsers
    show); None when `data` is no PNG, is cut short, or has no such chunk. A critical chunk (IHDR,
    IDAT, ...) with a wrong CRC is kept: the image stays refused."""
    if not data.startswith(PNG_SIGNATURE):
        return None
    kept, position, dropped = [PNG_SIGNATURE], len(PNG_SIGNATURE), False
    while position < len(data):
        length = int.from_bytes(data[position : position + 4], "big")
        end = position + 12 + length  # length, type, data, CRC
        if end > len(data):
            return None
        kind = data[position + 4 : position + 8]
        intact = zlib.crc32(data[position + 4 : end - 4]) == int.from_bytes(data[end - 4 : end], "big")
        if intact or not kind[:1].islower():  # a lower-case first letter: ancillary
            kept.append(data[position:end])
        else:
            dropped = True
        position = end
        if kind == b"IEND":
            break
    return b"".join(kept) if dropped else None


def _file(data: bytes, mime: str, name: str) -> Attachment:
    if "." not in name:
        name += _extension(mime)
    return Attachment("file", name, mime, len(data), data=data)


def _extension(mime: str) -> str:
    mime = (mime or "").split(";")[0].strip().lower()
    return _EXTENSIONS.get(mime) or mimetypes.guess_extension(mime) or ".bin"


def _file_name(uri: str, mime: str, fallback: str) -> str:
    """A safe file name from a resource URI's last segment (letters, digits, '.', '_', '-')."""
    last = urlsplit(uri).path.rstrip("/").rsplit("/", 1)[-1]
    name = _UNSAFE_NAME.sub("_", last).strip("._")[:100]
    return name or fallback + _extension(mime)
