"""Ids built from a tool call's id (the model's or a server's choice: `<call>.2` for a call's second
question) are used as CSS selectors (`hx-target="#question-…-error"`, `afterend:#tool-…`): every such
id and selector is made of characters a selector takes as they are, so a dot cannot break the form."""

from __future__ import annotations

import re
from types import SimpleNamespace

from django.template.loader import render_to_string

from agents.web.timeline import approval_item, tool_item
from aptix.templatetags.dom import dom_id

SAFE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
ID_ATTRS = re.compile(r'\b(id|for|aria-describedby|aria-labelledby)="([^"]*)"')
SELECTORS = re.compile(r'\b(?:hx-target|hx-swap-oob)="(?:[a-z]+:)?#([^"]*)"')

SCHEMA = {
    "type": "object",
    "properties": {"full name": {"type": "string", "description": "As on the card"}, "ok": {"type": "boolean"}},
}


def ids_and_selectors(html: str) -> list[str]:
    found = [value for _, value in ID_ATTRS.findall(html)] + SELECTORS.findall(html)
    assert found
    return found


def test_a_question_after_an_approval_has_no_dot_in_its_ids_or_selectors():
    question = {"id": "call_1.2", "name": "ask__profile", "kind": "elicitation", "server": "ask"}
    item = approval_item({**question, "mode": "form", "message": "Who?", "schema": SCHEMA}, "general")
    turn = SimpleNamespace(session_id="s1", id="t1", status="awaiting_approval")
    html = render_to_string("agents/_approval.html", {"item": item, "turn": turn})

    assert 'name="call" value="call_1.2"' in html  # the id the answer names stays the call's own
    assert 'hx-target="#question-call_1-2e-2-error"' in html
    assert 'id="question-call_1-2e-2-error"' in html
    assert all(SAFE.match(value) for value in ids_and_selectors(html)), ids_and_selectors(html)


def test_a_tool_card_of_a_dotted_call_id_and_its_out_of_band_media_have_safe_ids():
    called = {"id": "functions.lookup:0", "name": "lookup", "kind": "mcp", "arguments": "{}"}
    link = {"kind": "link", "url": "https://example.com/a", "name": "a"}
    item = tool_item(called, {"ok": True, "result": "done", "attachments": [link]})
    html = render_to_string("agents/_event.html", {"item": item, "replace": True})
    assert 'id="tool-functions-2e-lookup-3a-0"' in html
    assert 'hx-swap-oob="afterend:#tool-functions-2e-lookup-3a-0"' in html
    assert all(SAFE.match(value) for value in ids_and_selectors(html)), ids_and_selectors(html)
    progress = render_to_string("agents/_tool_progress.html", {"call_id": "call_1.2", "oob": True})
    assert 'id="tool-call_1-2e-2-progress"' in progress


def test_dom_id_keeps_safe_ids_and_escapes_the_rest():
    assert dom_id("call_AbC-123") == "call_AbC-123"
    assert dom_id("call_1.2") == "call_1-2e-2"
    assert dom_id('a b#"c') == "a-20-b-23--22-c"
