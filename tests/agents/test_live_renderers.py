"""The live stream's renderer registry (agents/web/live.py): one renderer per event type, looked up by
type; a renderer for a type that does not exist is refused when it is registered."""

from __future__ import annotations

import pytest

from agents.events import EVENT_TYPES
from agents.web.live import LIVE_RENDERERS, renders


def test_every_event_type_has_a_live_renderer():
    assert set(LIVE_RENDERERS) == set(EVENT_TYPES)


def test_a_renderer_for_an_unknown_event_type_is_refused():
    with pytest.raises(ValueError, match=r"No such event type: tool\.exploded"):
        renders("tool.exploded")
    assert "tool.exploded" not in LIVE_RENDERERS
