"""Metadata and authorization URLs from a server's answers are fetched only over https, never on a
private, loopback or link-local address unless the entry allows it (DEBUG allows http and loopback),
redirects checked again, answers bounded."""

from __future__ import annotations

import pytest

from tools.mcp.ssrf import UnsafeUrl, check_url


@pytest.mark.parametrize(
    "url",
    [
        "https://169.254.169.254/latest/meta-data/",
        "https://10.0.0.1/.well-known/oauth-authorization-server",
        "https://192.168.1.1/x",
        "https://127.0.0.1/x",
        "https://[::1]/x",
        "http://93.184.215.14/x",  # http: refused outside DEBUG whatever the address
        "ftp://example.com/x",
    ],
)
def test_unsafe_urls_are_refused(settings, url):
    settings.DEBUG = False
    with pytest.raises(UnsafeUrl):
        check_url(url)


def test_debug_allows_http_and_loopback_but_not_other_private_ranges(settings):
    settings.DEBUG = True
    check_url("http://127.0.0.1:8000/.well-known/oauth-protected-resource")
    for url in ("http://169.254.169.254/latest/meta-data/", "https://10.0.0.1/x"):
        with pytest.raises(UnsafeUrl, match="allowPrivateNetwork"):
            check_url(url)


def test_an_entry_may_allow_its_private_network(settings):
    settings.DEBUG = False
    check_url("https://10.0.0.1/x", allow_private=True)
    check_url("https://93.184.215.14/x")  # a public address is fine


@pytest.mark.parametrize("url", ["https://169.254.169.254/mcp", "https://10.0.0.1/mcp"])
def test_discovery_refuses_a_server_on_a_private_address(settings, url):
    from tools.mcp.config import ServerConfig
    from tools.mcp.oauth import OAuthError, discover
    from tools.mcp.userauth import OAuthSettings

    settings.DEBUG = True  # even so: only loopback is allowed in development
    config = ServerConfig(name="cloud", type="http", url=url, auth=OAuthSettings())
    with pytest.raises(OAuthError, match="allowPrivateNetwork"):
        discover(config)


@pytest.mark.parametrize(
    "url",
    [
        "https://[64:ff9b::a9fe:a9fe]/x",  # NAT64 of 169.254.169.254
        "https://[2002:a9fe:a9fe::1]/x",  # 6to4 of 169.254.169.254
        "https://[::169.254.169.254]/x",  # IPv4-compatible
        "https://[::ffff:10.0.0.1]/x",  # IPv4-mapped
        "https://[fec0::1]/x",  # site-local
    ],
)
def test_an_ipv6_address_is_judged_by_the_ipv4_address_it_carries_too(settings, url):
    settings.DEBUG = False
    with pytest.raises(UnsafeUrl, match="private, loopback or link-local"):
        check_url(url)


def test_a_public_ipv4_address_inside_ipv6_is_fine(settings):
    settings.DEBUG = False
    check_url("https://[64:ff9b::5db8:d70e]/x")  # NAT64 of 93.184.215.14


def test_the_request_goes_to_the_address_that_was_checked(settings, monkeypatch):
    """DNS rebinding: the name answered a safe address for the check and another for the request;
    the request now reaches the checked address, the name kept in its Host header."""
    import socket
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from tools.mcp.ssrf import fetch

    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.headers["Host"])
            body = b'{"ok": true}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    real = socket.getaddrinfo
    answers = iter(["127.0.0.1"])  # the check's answer; any later one is the rebinding's

    def rebinding(host, *args, **kwargs):
        if host == "rebind.example":
            address = next(answers, "192.0.2.1")  # TEST-NET: nothing answers there
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    settings.DEBUG = True  # http:// and loopback, as in development
    try:
        response, body = fetch("GET", f"http://rebind.example:{port}/.well-known/x")
    finally:
        server.shutdown()
    assert response.status_code == 200 and body == b'{"ok": true}'
    assert seen == [f"rebind.example:{port}"]
