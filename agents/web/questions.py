"""The page's card for an MCP server's question (agents/elicitations.py): the inputs of a form, drawn
from the requested schema (text, number, boolean, enum, several of an enum), or a URL's link with a
Done button; the labels of its answers. The timeline's approval card takes these fields
(timeline.approval_item) and _approval.html includes _question.html for them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tools.mcp import FormField, form_fields

from .connections import connect_url

INPUT_TYPES = {"email": "email", "uri": "url", "date": "date", "date-time": "datetime-local"}
ANSWER_LABELS = {
    "accepted": "Answered",
    "declined": "Declined",
    "cancelled": "Cancelled",
    "declined_by_new_message": "Declined by a new message",
}


def card_fields(call: Mapping[str, Any], kind: str, server: str) -> dict[str, Any]:
    """What a pending item's card needs beyond the fields every card has, by its kind: the link that
    connects a server acting as each user, or an MCP server's question."""
    if kind == "connect":
        return {"connect_url": connect_url(server)}
    if kind == "elicitation":
        return question_data(call)
    return {}


def question_data(call: Mapping[str, Any]) -> dict[str, Any]:
    """What the card shows: the message, the link (URL mode) or the form's inputs."""
    data: dict[str, Any] = {"message": call.get("message", ""), "mode": call.get("mode", "form")}
    if data["mode"] == "url":
        url = str(call.get("url", ""))
        data["url"] = url if url.startswith(("https://", "http://")) else ""
        return data
    if data["mode"] == "sampling":  # the server asks to use the user's model: what it would send
        data["sampling"] = call.get("sampling") or {}
        data["inputs"] = []
        return data
    try:
        data["inputs"] = [_input(f) for f in form_fields(call.get("schema") or {})]
    except ValueError:
        data["inputs"] = []
    return data


def _input(f: FormField) -> dict[str, Any]:
    prop = f.schema
    widget = {"text": "input", "number": "input", "integer": "input"}.get(f.kind, f.kind)
    attrs: dict[str, Any] = {}
    if f.kind == "text":
        attrs["type"] = INPUT_TYPES.get(str(prop.get("format", "")), "text")
        for key, attr in (("minLength", "minlength"), ("maxLength", "maxlength")):
            if key in prop:
                attrs[attr] = prop[key]
    elif f.kind in ("number", "integer"):
        attrs["type"] = "number"
        attrs["step"] = "1" if f.kind == "integer" else "any"
        for key in ("minimum", "maximum"):
            if key in prop:
                attrs[key[:3]] = prop[key]
    default = f.default
    return {
        "name": f.name,
        "widget": widget,
        "title": f.title,
        "description": f.description,
        "required": f.required,
        "attrs": sorted(attrs.items()),
        "options": [
            {"value": v, "label": label, "selected": v == default or (isinstance(default, list) and v in default)}
            for v, label in f.options
        ],
        "default": "" if default is None or isinstance(default, (list, bool)) else default,
        "checked": default is True,
    }


def answer_label(decision: str) -> str:
    return ANSWER_LABELS.get(decision, decision)
