"""Fetching URLs that come from a server's answers (OAuth protected resource metadata, authorization
server metadata, its endpoints): a remote MCP server must not make Aptix reach into the network it
runs in (cloud metadata at 169.254.169.254, an internal admin on 10.x).

- Only https://, and never a host that resolves to a private, loopback, link-local, reserved or
  multicast address, unless the server's entry says `"allowPrivateNetwork": true`. With DEBUG=true,
  http:// and loopback are allowed (development and tests), other private ranges still are not.
- Redirects are followed by hand, at most MAX_REDIRECTS, each target checked again.
- Answers are read up to MAX_BYTES; a longer one is refused.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx2
from django.conf import settings

MAX_REDIRECTS = 3
MAX_BYTES = 1 << 20  # 1 MiB: metadata and token answers are a few KiB
TIMEOUT = httpx2.Timeout(10.0)


class UnsafeUrl(ValueError):
    """A URL Aptix refuses to fetch; the message says why."""


def check_url(url: str, *, allow_private: bool = False) -> None:
    """Raise UnsafeUrl unless `url` may be fetched (see the module's rules)."""
    parts = urlsplit(url)
    debug = bool(settings.DEBUG)
    if parts.scheme != "https" and not (debug and parts.scheme == "http"):
        raise UnsafeUrl(f"{url!r} is not an https:// URL")
    if not parts.hostname:
        raise UnsafeUrl(f"{url!r} has no host")
    try:
        infos = socket.getaddrinfo(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
    except OSError as exc:
        raise UnsafeUrl(f"{parts.hostname!r} cannot be resolved ({exc})") from None
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if allow_private or (debug and address.is_loopback):
            continue
        if not address.is_global or address.is_multicast:
            raise UnsafeUrl(
                f"{parts.hostname!r} resolves to {address}, a private, loopback or link-local address "
                '(set "allowPrivateNetwork": true on the server\'s entry to allow it)'
            )


def fetch(method: str, url: str, *, allow_private: bool = False, **kwargs: Any) -> tuple[httpx2.Response, bytes]:
    """The response (after checked redirects) and its body, at most MAX_BYTES."""
    with httpx2.Client(timeout=TIMEOUT, follow_redirects=False) as client:
        for _ in range(MAX_REDIRECTS + 1):
            check_url(url, allow_private=allow_private)
            with client.stream(method, url, **kwargs) as response:
                if response.is_redirect and "location" in response.headers:
                    url = urljoin(url, response.headers["location"])
                    method, kwargs = "GET", {k: v for k, v in kwargs.items() if k == "headers"}
                    continue
                body = bytearray()
                for chunk in response.iter_bytes():
                    body.extend(chunk)
                    if len(body) > MAX_BYTES:
                        raise UnsafeUrl(f"the answer of {url!r} is over {MAX_BYTES} bytes")
                return response, bytes(body)
    raise UnsafeUrl(f"{url!r}: more than {MAX_REDIRECTS} redirects")
