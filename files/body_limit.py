"""A request body larger than any upload may be is refused as soon as that is known, not after it has
all been received: Daphne (Twisted's HTTP server) reads a whole body to disk before the application
sees the request, so Django's upload handler (files/uploads.py) could only refuse a 58 MB file after
its 58 MB had crossed the network. `manage.py aptix_serve` gives Daphne this request class instead
of its own: a declared Content-Length over the limit is answered 413 when the headers arrive, and a
body without one (chunked) as soon as what arrived passes the limit. The answer is the upload's JSON
error (the chip shows its message) and the connection is closed, so the rest is never read.

The limit is APTIX_UPLOAD_MAX_BYTES plus the multipart envelope around one file: no request of
Aptix's (a JSON body, a form) comes near it. A plain `daphne aptix.asgi:application` has no such
class; its uploads are refused by the upload handler once received.
"""

from __future__ import annotations

import json
from typing import Any

from daphne.http_protocol import WebRequest
from django.conf import settings

from .errors import too_large
from .uploads import ENVELOPE_BYTES


def body_limit() -> int:
    """The most bytes a request body may have."""
    return int(settings.APTIX_UPLOAD_MAX_BYTES) + ENVELOPE_BYTES


class LimitedRequest(WebRequest):
    """Daphne's request, which refuses a body over `body_limit()` while it is still arriving."""

    refused = False
    received = 0

    def gotLength(self, length: int | None) -> None:
        if length is not None and length > body_limit():
            self._refuse()
            return
        super().gotLength(length)

    def handleContentChunk(self, data: bytes) -> None:
        if self.refused:
            return
        self.received += len(data)
        if self.received > body_limit():
            self._refuse()
            return
        super().handleContentChunk(data)

    def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:
        if not self.refused:  # a refused request was answered already: the application never sees it
            super().requestReceived(command, path, version)

    def _refuse(self) -> None:
        self.refused = True
        message = too_large(int(settings.APTIX_UPLOAD_MAX_BYTES)).message
        body = json.dumps({"error": {"message": message, "field": "file"}}).encode()
        head = (
            "HTTP/1.1 413 Content Too Large\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode()
        transport = self.channel.transport
        transport.write(head + body)
        transport.loseConnection()


def limit_bodies(factory: Any) -> None:
    """Make Daphne's HTTP factory build its connections with LimitedRequest (before it listens)."""
    build = factory.buildProtocol

    def build_limited(addr: Any) -> Any:
        protocol = build(addr)
        protocol.requestFactory = LimitedRequest
        return protocol

    factory.buildProtocol = build_limited
