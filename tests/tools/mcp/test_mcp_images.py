"""Images in MCP results are shown when a browser would show them: a PNG whose optional chunk (here
an iCCP colour profile, as in the reference `everything` server's `get-tiny-image`) has a wrong CRC is
an image, stored without that chunk, not a download; what is no image, or a PNG whose pixel data is
damaged, is still a download."""

from __future__ import annotations

import base64
import io
import struct
import zlib

import mcp_types as types
from PIL import Image

from tools.mcp.rich import format_result, without_broken_chunks


def chunk(kind: bytes, data: bytes, *, crc: int | None = None) -> bytes:
    checksum = zlib.crc32(kind + data) if crc is None else crc
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", checksum)


def png_with(extra: bytes, size: tuple[int, int] = (20, 10)) -> bytes:
    """A PNG from Pillow with `extra` chunks after its IHDR."""
    buffer = io.BytesIO()
    Image.new("RGB", size, "blue").save(buffer, format="PNG")
    plain = buffer.getvalue()
    ihdr_end = 8 + 12 + 13
    return plain[:ihdr_end] + extra + plain[ihdr_end:]


BAD_ICCP = chunk(b"iCCP", b"sRGB\x00\x00" + zlib.compress(b"a colour profile"), crc=0x12345678)


def shown(data: bytes, mime: str = "image/png"):
    block = types.ImageContent(type="image", data=base64.b64encode(data).decode(), mime_type=mime)
    (attachment,) = format_result(types.CallToolResult(content=[block]), "s__t").attachments
    return attachment


def test_a_png_with_a_bad_iccp_crc_is_shown_as_an_image_without_that_chunk():
    data = png_with(BAD_ICCP + chunk(b"tEXt", b"Comment\x00kept"))

    attachment = shown(data)

    assert (attachment.kind, attachment.mime, attachment.width, attachment.height) == ("image", "image/png", 20, 10)
    assert b"iCCP" not in attachment.data and b"tEXt" in attachment.data
    assert attachment.size == len(attachment.data) == len(data) - len(BAD_ICCP)
    with Image.open(io.BytesIO(attachment.data)) as image:
        image.load()  # the stored bytes are a clean PNG any reader takes
        assert image.size == (20, 10)


def test_an_intact_image_is_kept_byte_for_byte():
    data = png_with(chunk(b"tEXt", b"Comment\x00fine"))
    assert without_broken_chunks(data) is None
    assert shown(data).data == data


def test_what_is_no_image_or_has_damaged_pixel_data_is_still_a_download():
    assert shown(b"not an image at all").kind == "file"
    data = bytearray(png_with(b""))
    idat = data.index(b"IDAT")
    data[idat + 6] ^= 0xFF  # inside the compressed pixels: the critical chunk's CRC no longer matches
    assert shown(bytes(data)).kind == "file"
    assert shown(png_with(BAD_ICCP)[:-20]).kind == "file"  # cut short as well


def embedded(data: bytes, mime: str):
    resource = types.BlobResourceContents(uri="demo://shot.png", blob=base64.b64encode(data).decode(), mime_type=mime)
    block = types.EmbeddedResource(type="resource", resource=resource)
    (attachment,) = format_result(types.CallToolResult(content=[block]), "s__t").attachments
    return attachment


def test_an_embedded_image_resource_is_shown_as_an_image_and_other_blobs_are_downloads():
    image = embedded(png_with(b""), "image/png")
    assert (image.kind, image.width, image.uri) == ("image", 20, "demo://shot.png")
    assert embedded(b"not an image", "image/png").kind == "file"
    assert embedded(b"%PDF-1.7", "application/pdf").kind == "file"
