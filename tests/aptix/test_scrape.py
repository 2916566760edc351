"""`GET /metrics`: served to loopback, refused from elsewhere without `Authorization: Bearer
$APTIX_METRICS_TOKEN` and served with it; a request through a proxy on this host (a forwarding
header) is not loopback. No login either way."""

from __future__ import annotations

import pytest
from django.test import Client

from aptix.scrape import scrape_allowed

pytestmark = pytest.mark.django_db


def scrape(address: str, **headers: str):
    return Client(REMOTE_ADDR=address).get("/metrics", headers=headers)


def test_loopback_reads_the_metrics_without_a_token():
    for address in ("127.0.0.1", "::1"):
        response = scrape(address)
        assert response.status_code == 200, address
        assert response["Content-Type"].startswith("text/plain; version=0.0.4")
        assert b"aptix_turns_started_total" in response.content


def test_another_address_is_refused_without_the_token(settings):
    settings.APTIX_METRICS_TOKEN = "s3cret-metrics-token"
    response = scrape("10.1.2.3")
    assert response.status_code == 403
    assert b"aptix_" not in response.content
    assert scrape("10.1.2.3", authorization="Bearer wrong-token").status_code == 403
    assert scrape("10.1.2.3", authorization="Basic s3cret-metrics-token").status_code == 403


def test_another_address_with_the_token_reads_the_metrics(settings):
    settings.APTIX_METRICS_TOKEN = "s3cret-metrics-token"
    response = scrape("10.1.2.3", authorization="Bearer s3cret-metrics-token")
    assert response.status_code == 200 and b"aptix_turns_finished_total" in response.content


def test_without_a_token_configured_only_loopback_is_served(settings):
    settings.APTIX_METRICS_TOKEN = None
    assert scrape("10.1.2.3").status_code == 403
    assert scrape("10.1.2.3", authorization="Bearer ").status_code == 403


def test_a_request_through_a_proxy_on_this_host_is_not_loopback(settings):
    settings.APTIX_METRICS_TOKEN = "s3cret-metrics-token"
    assert scrape("127.0.0.1", x_forwarded_for="203.0.113.9").status_code == 403
    assert scrape("127.0.0.1", x_real_ip="203.0.113.9").status_code == 403
    assert (
        scrape("127.0.0.1", x_forwarded_for="203.0.113.9", authorization="Bearer s3cret-metrics-token").status_code
        == 200
    )


def test_the_rule_the_workers_probe_shares():
    assert scrape_allowed("127.0.0.1", {}, None)
    assert not scrape_allowed("192.168.0.7", {}, None)
    assert not scrape_allowed("not-an-address", {}, "t")
    assert scrape_allowed("192.168.0.7", {"authorization": "bearer t"}, "t")


def test_an_empty_forwarding_header_is_not_loopback_either(settings):
    settings.APTIX_METRICS_TOKEN = "s3cret-metrics-token"
    for header in ("x_forwarded_for", "forwarded", "x_real_ip"):
        assert scrape("127.0.0.1", **{header: ""}).status_code == 403, header
    assert not scrape_allowed("127.0.0.1", {"x-forwarded-for": ""}, None)
    assert scrape_allowed("127.0.0.1", {"x-forwarded-for": ""}, "t") is False
