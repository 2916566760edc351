"""Primary keys of Aptix's own records: 32 hex characters (a random UUID without dashes).

Models use `new_hex_id` as a field default; their migrations name it as `agents.models.new_hex_id`
and `modes.models.new_hex_id`, so both models modules import it under that name."""

from __future__ import annotations

import re
import uuid

HEX_ID = re.compile(r"[0-9a-f]{32}")  # what new_hex_id makes: check ids that come from outside with fullmatch


def new_hex_id() -> str:
    return uuid.uuid4().hex
