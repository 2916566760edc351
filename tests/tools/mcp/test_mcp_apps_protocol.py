"""MCP Apps, the protocol half (tools/mcp/apps.py): which tools have an app, who may call them, what an
app's resource may declare and the frame policy made of it; mcp.json's `apps` switch."""

from __future__ import annotations

import json

import mcp_types as types
import pytest

from tools.mcp.apps import (
    APP_MIME,
    MAX_APP_BYTES,
    NotAnApp,
    app_resource,
    app_uri,
    checked_csp,
    for_app,
    for_model,
    frame_policy,
)
from tools.mcp.config import load_config


def tool(meta=None) -> types.Tool:
    return types.Tool(name="t", input_schema={"type": "object"}, meta=meta)


def test_the_app_is_named_by_the_tools_ui_meta_or_the_older_flat_key():
    assert app_uri(tool({"ui": {"resourceUri": "ui://a/app.html"}})) == "ui://a/app.html"
    assert app_uri(tool({"ui/resourceUri": "ui://b/app.html"})) == "ui://b/app.html"
    assert app_uri(tool({"ui": {"resourceUri": "https://evil.example/app.html"}})) is None  # ui:// only
    assert app_uri(tool()) is None


def test_visibility_keeps_app_only_tools_from_the_model_and_model_only_ones_from_apps():
    assert for_model(tool()) and for_app(tool())
    assert not for_model(tool({"ui": {"visibility": ["app"]}})) and for_app(tool({"ui": {"visibility": ["app"]}}))
    assert for_model(tool({"ui": {"visibility": ["model"]}})) and not for_app(tool({"ui": {"visibility": ["model"]}}))


def test_only_plain_origins_reach_the_csp():
    csp = checked_csp(
        {
            "connectDomains": [
                "https://api.example.com/",
                "'unsafe-eval'",
                "https://x.example; script-src *",
                "https:",
            ],
            "resourceDomains": ["https://*.cdn.example", "data:", "http://cdn.example", "*"],
            "frameDomains": "https://not-a-list.example",
        }
    )
    assert csp == {"connectDomains": ["https://api.example.com"], "resourceDomains": ["https://*.cdn.example"]}
    assert checked_csp({"connectDomains": ["http://localhost:5173"]}) == {}
    assert checked_csp({"connectDomains": ["http://localhost:5173"]}, local=True) == {
        "connectDomains": ["http://localhost:5173"]
    }


def test_the_frame_policy_allows_nothing_the_app_did_not_declare():
    policy = frame_policy({}, host_origin="https://aptix.example", script_origin="https://apps.example")
    directives = dict(d.split(" ", 1) for d in policy.split("; "))
    assert directives["default-src"] == "'none'"
    assert directives["connect-src"] == "'none'" and directives["frame-src"] == "'none'"
    assert directives["frame-ancestors"] == "https://aptix.example"
    assert directives["form-action"] == "'none'" and directives["object-src"] == "'none'"
    declared = frame_policy(
        {"connectDomains": ["https://api.example.com"], "resourceDomains": ["https://cdn.example"]},
        host_origin="https://aptix.example",
        script_origin="https://apps.example",
    )
    assert "connect-src https://api.example.com;" in declared
    assert "script-src https://apps.example 'unsafe-inline' https://cdn.example;" in declared


def contents(text="<p>app</p>", mime=APP_MIME, meta=None):
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri="ui://a", mime_type=mime, text=text, meta=meta)]
    )


def test_an_apps_resource_is_html_of_the_apps_type_within_the_size_limit():
    app = app_resource(
        "ui://a",
        contents(
            meta={
                "ui": {
                    "csp": {"connectDomains": ["https://api.example.com"]},
                    "prefersBorder": False,
                    "permissions": {"camera": {}, "usb": {}},
                }
            }
        ),
    )
    assert app.html == "<p>app</p>" and app.csp == {"connectDomains": ["https://api.example.com"]}
    assert app.prefers_border is False and app.permissions == {"camera": {}}
    with pytest.raises(NotAnApp, match="is text/html, not text/html;profile=mcp-app"):
        app_resource("ui://a", contents(mime="text/html"))
    with pytest.raises(NotAnApp, match="over 2 MiB"):
        app_resource("ui://a", contents(text="x" * (MAX_APP_BYTES + 1)))


def test_mcp_json_switches_a_servers_apps_off_and_names_a_bad_value(tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"on": {"command": "true"}, "off": {"command": "true", "apps": False}}}))
    servers = {server.name: server for server in load_config(path).servers}
    assert servers["on"].apps is True and servers["off"].apps is False
    path.write_text(json.dumps({"mcpServers": {"bad": {"command": "true", "apps": "yes"}}}))
    assert str(load_config(path).errors["bad"]) == 'MCP server "bad": "apps" must be true or false'
