"""Fetching URLs that come from a server's answers (OAuth protected resource metadata, authorization
server metadata, its endpoints): a remote MCP server must not make Aptix reach into the network it
runs in (cloud metadata at 169.254.169.254, an internal admin on 10.x).

- Only https://, and never a host that resolves to a private, loopback, link-local, reserved or
  multicast address, unless the server's entry says `"allowPrivateNetwork": true`. With DEBUG=true,
  http:// and loopback are allowed (development and tests), other private ranges still are not.
- An address that embeds an IPv4 one (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`,
  6to4 `2002::/16`, Teredo, NAT64 `64:ff9b::/96`) is judged by that IPv4 address too; IPv6
  site-local `fec0::/10` is private.
- The request goes to the address that was checked (the URL's host kept in the Host header and the
  TLS server name): the name is resolved once, so a second answer (DNS rebinding) cannot send it on.
- Redirects are followed by hand, at most MAX_REDIRECTS, each target checked again.
- Answers are read up to MAX_BYTES; a longer one is refused.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

import httpx2
from django.conf import settings

MAX_REDIRECTS = 3
MAX_BYTES = 1 << 20  # 1 MiB: metadata and token answers are a few KiB
TIMEOUT = httpx2.Timeout(10.0)


class UnsafeUrl(ValueError):
    """A URL Aptix refuses to fetch; the message says why."""


NAT64 = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052: the last 32 bits are an IPv4 address
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (and reaches, through a gateway or the host's own stack)."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in NAT64 or (int(address) >> 32 == 0 and int(address) > 1):  # NAT64, IPv4-compatible
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_public(address: Address) -> bool:
    """Whether `address`, and the IPv4 address it embeds, are global unicast addresses."""
    if not address.is_global or address.is_multicast:
        return False
    if isinstance(address, ipaddress.IPv6Address):
        inner = embedded_ipv4(address)
        return not address.is_site_local and (inner is None or (inner.is_global and not inner.is_multicast))
    return True


def check_url(url: str, *, allow_private: bool = False) -> Address:
    """Raise UnsafeUrl unless `url` may be fetched (see the module's rules); the address to connect to."""
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
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    for address in addresses:
        if allow_private or (debug and address.is_loopback):
            continue
        if not is_public(address):
            raise UnsafeUrl(
                f"{parts.hostname!r} resolves to {address}, a private, loopback or link-local address "
                '(set "allowPrivateNetwork": true on the server\'s entry to allow it)'
            )
    if not addresses:
        raise UnsafeUrl(f"{parts.hostname!r} cannot be resolved (no address)")
    return addresses[0]


def pinned(url: str, address: Address) -> tuple[str, dict[str, str], dict[str, Any]]:
    """(the URL with `address` for its host, the Host header, the request's extensions): the request
    reaches the checked address while the server and its certificate see the URL's name."""
    parts = urlsplit(url)
    host = f"[{address}]" if address.version == 6 else str(address)
    netloc = f"{host}:{parts.port}" if parts.port else host
    target = urlunsplit(parts._replace(netloc=netloc))
    name = parts.hostname or ""
    named = f"[{name}]" if ":" in name else name
    return target, {"Host": f"{named}:{parts.port}" if parts.port else named}, {"sni_hostname": name}


def fetch(method: str, url: str, *, allow_private: bool = False, **kwargs: Any) -> tuple[httpx2.Response, bytes]:
    """The response (after checked redirects) and its body, at most MAX_BYTES."""
    with httpx2.Client(timeout=TIMEOUT, follow_redirects=False) as client:
        for _ in range(MAX_REDIRECTS + 1):
            target, host, extensions = pinned(url, check_url(url, allow_private=allow_private))
            headers = {**(kwargs.get("headers") or {}), **host}
            sent = {key: value for key, value in kwargs.items() if key != "headers"}
            with client.stream(method, target, headers=headers, extensions=extensions, **sent) as response:
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
