"""The stream socket's protocol edges: every close code it uses is one Daphne can send, and a cursor
no page writes is refused before it reaches the database."""

from __future__ import annotations

import pytest

from agents.web import streams
from agents.web.consumers import BadCursor, Cursor, cursor_of

TURN = "0123456789abcdef0123456789abcdef"


def test_every_close_code_is_one_daphne_sends():
    """Autobahn (Daphne's websocket layer) refuses to send any code but 1000 or 3000-4999 and fails the
    socket with 1011 instead: a close code of ours outside that range never reaches the page."""
    codes = {name: value for name, value in vars(streams).items() if name.startswith("CLOSE_")}
    assert codes and all(code == 1000 or 3000 <= code <= 4999 for code in codes.values()), codes
    assert len(set(codes.values())) == len(codes)  # each says one thing


@pytest.mark.parametrize(
    ("query", "cursor"),
    [
        (b"", None),  # not a session page's socket
        (b"turn=&seq=0", Cursor("", 0)),  # a page that showed no turn
        (f"turn={TURN}&seq=7".encode(), Cursor(TURN, 7)),
    ],
)
def test_the_cursors_pages_write(query, cursor):
    assert cursor_of(query) == cursor


@pytest.mark.parametrize(
    "query",
    [
        b"turn=%00&seq=1",  # PostgreSQL: "A string literal cannot contain NUL" as an unhandled DataError
        b"turn=x&seq=1",
        f"turn={TURN}&seq=-1".encode(),
        f"turn={TURN}&seq=abc".encode(),
        f"turn={TURN}&seq=99999999999".encode(),  # over the integer column: a DataError on PostgreSQL
        f"turn={TURN}&seq=\u0661".encode(),  # an Arabic-Indic one: str.isdigit() alone accepts it
    ],
)
def test_a_cursor_no_page_writes_is_refused(query):
    with pytest.raises(BadCursor):
        cursor_of(query)
