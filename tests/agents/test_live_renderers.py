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


@pytest.mark.django_db
def test_a_streamed_answer_costs_a_viewer_bytes_linear_in_its_length(team_a, alice):
    """Issue 17, item 3: every delta used to re-send the whole answer rendered (10.5 MB for 8,000
    characters in 10-character deltas). Now new text is appended and the whole is rendered again
    only when it has doubled, so the bytes grow with the answer, not with its square."""
    from agents.sessions import session_create
    from agents.turns import turn_start
    from agents.web.live import LiveRenderer

    session = session_create(team=team_a, user=alice, execution="ask")
    turn = turn_start(session=session, text="Tell me a lot")

    def streamed_bytes(chars: int) -> int:
        renderer = LiveRenderer(session)  # one viewer's socket
        text = ("Revenue grew in **every region** except the south.\n\n- North: up 12%\n\n" * 200)[:chars]
        return sum(
            len(renderer.render(turn, "model.delta", {"text": text[i : i + 10]}, seq))
            for seq, i in enumerate(range(0, chars, 10), 1)
        )

    short, long = streamed_bytes(2_000), streamed_bytes(8_000)
    assert long < 5 * short  # 4× the text: about 4× the bytes (it was 16×)
    assert long < 25 * 8_000
