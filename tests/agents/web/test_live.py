"""The live stream's views (agents/web/event_views.py): one view per event type, looked up by type; a
view for a type that does not exist is refused when it is registered."""

from __future__ import annotations

import pytest

from agents.events import EVENT_TYPES
from agents.web.event_views import EVENT_VIEWS
from agents.web.live import renders


def test_every_event_type_has_a_view():
    assert set(EVENT_VIEWS) == set(EVENT_TYPES)


def test_a_renderer_for_an_unknown_event_type_is_refused():
    with pytest.raises(ValueError, match=r"No such event type: tool\.exploded"):
        renders("tool.exploded")
    assert "tool.exploded" not in EVENT_VIEWS


@pytest.mark.django_db
def test_a_streamed_answer_costs_a_viewer_bytes_linear_in_its_length(team_a, alice):
    """Every delta used to re-send the whole answer rendered (10.5 MB for 8,000
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


def _stream(session, turn, pieces: list[str]) -> list[str]:
    from agents.web.live import LiveRenderer

    renderer = LiveRenderer(session)  # one viewer's socket
    return [renderer.render(turn, "model.delta", {"text": piece}, seq) for seq, piece in enumerate(pieces, 1)]


@pytest.fixture
def streaming(team_a, alice):
    from agents.sessions import session_create
    from agents.turns import turn_start

    session = session_create(team=team_a, user=alice, execution="ask")
    return session, turn_start(session=session, text="Show me code")


@pytest.mark.django_db
def test_appended_text_is_a_small_frame_of_its_own_with_its_seq(streaming):
    """The most frequent frame (it once was 55 bytes of markup around ~40 characters of text) is only
    the escaped text and its seq; aptix.js appends it to the live tail and moves the cursor there."""
    frames = _stream(*streaming, ["Hello", " <b>there</b> & you"])
    assert 'id="live-tail"' in frames[0] and 'id="stream-cursor"' in frames[0]
    assert frames[1] == '<b data-seq="2"> &lt;b&gt;there&lt;/b&gt; &amp; you</b>'


@pytest.mark.django_db
def test_code_streams_into_its_code_block_and_is_rendered_again_once_its_fence_closes(streaming):
    intro = "Here is the function you asked for, with a docstring and a test. " * 4  # > RERENDER_MIN_CHARS
    frames = _stream(*streaming, ["Code:\n\n```python\ndef f", "(x):\n    return x" + " " * 300, "\n```\n\n", intro])
    # The first rendering ends inside the open fence: the tail sits in the code, before its last line break.
    assert (
        '<span class="nf">f</span><span class="live-tail-box" id="live-tail"></span>\n</code></pre></div>' in frames[0]
    )
    assert frames[1].startswith('<b data-seq="2">')  # grown past 4×, but the fence is open: appended
    assert 'id="live-tail"' in frames[2] and '<span class="k">return</span>' in frames[2]  # closed: whole again
    assert frames[3].startswith('<b data-seq="4">')


@pytest.mark.django_db
def test_a_long_answer_is_not_rendered_whole_again_past_the_limit(streaming):
    from agents.web.live import RERENDER_MAX_CHARS

    text = "Revenue grew in **every region** except the south.\n\n" * 200
    pieces = [text[i : i + 40] for i in range(0, len(text), 40)]
    frames = _stream(*streaming, pieces)
    whole = [n for n, frame in enumerate(frames) if 'id="live-tail"' in frame]
    shown = [len("".join(pieces[: n + 1])) for n in whole]
    assert whole[0] == 0 and len(whole) > 2 and max(shown) <= RERENDER_MAX_CHARS < len(text)


@pytest.mark.parametrize(
    ("text", "is_open"),
    [
        ("```py\nx = 1", True),
        ("```py\nx = 1\n```", False),
        ("```py\nx = 1\n```\n\nNow ```", False),  # an inline code span, not a fence
        ("~~~\n```\nstill code", True),  # only the same character closes
        ("````\n```\nstill code", True),  # ...with a fence at least as long
        ("``` a`b\nnot code", False),  # a ` fence's info string has no `
        ("- item\n\n   ```\n   x", True),
    ],
)
def test_open_fence(text, is_open):
    from agents.web.live import open_fence

    assert open_fence(text) is is_open


@pytest.mark.django_db
def test_a_fence_the_tail_was_in_is_rendered_once_it_closes_however_long_the_text(streaming):
    """A page that joins mid-reply inside a code block gets the tail in the code; when the fence closes,
    the prose after it must not run on inside the code block: rendered again, past RERENDER_MAX_CHARS too."""
    from agents.web.live import RERENDER_MAX_CHARS

    start = "Words. " * (RERENDER_MAX_CHARS // 7) + "\n\n```python\nx = 1\n"
    frames = _stream(*streaming, [start, "y = 2", "\n```\n\nAfter the code", " it goes on."])
    assert '<span class="live-tail-box" id="live-tail"></span></code></pre></div>' in frames[0]
    assert frames[1].startswith('<b data-seq="2">')
    assert "<p>After the code" in frames[2] and '<span class="live-tail-box" id="live-tail"></span></p>' in frames[2]
    assert frames[3].startswith('<b data-seq="4">')
