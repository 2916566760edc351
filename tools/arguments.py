"""Reading a tool call's arguments: the JSON object a model sends, and the error whose message goes
back to it."""

from __future__ import annotations

import json
from typing import Any


class ToolArgumentError(ValueError):
    """A problem with a tool call's arguments whose message (fixed by the tool's spec) goes back to the
    model as is."""


def json_object_arguments(arguments_json: str, invalid_message: str) -> dict[str, Any]:
    """A tool call's arguments as a JSON object; ToolArgumentError(invalid_message) when they are not
    JSON or not an object."""
    try:
        args = json.loads(arguments_json)
    except (TypeError, ValueError):
        raise ToolArgumentError(invalid_message) from None
    if not isinstance(args, dict):
        raise ToolArgumentError(invalid_message)
    return args
