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
