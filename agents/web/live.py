"""The live stream's HTML: each broadcast event becomes htmx out-of-band fragments for one websocket
connection, drawn with the same templates as the page (timeline.py), so a reloaded page and a live
stream end in exactly the same HTML.

What each event type shows is its view (event_views.py): the items it adds to or changes in the
turn's timeline (timeline.py, the same function as the page's), sent as out-of-band fragments, and
where the fragment is more than that, its live view here (`@renders(<type>)`). An event type with
neither only advances the stream cursor. Fragments are keyed by element ids:
`turn-<id>` (the whole turn), `turn-<id>-items` (its timeline), `turn-<id>-live` (the text being
streamed), `turn-<id>-status` (step and tokens, with Stop), `tool-<call id>` (a tool card), and
the session parts of fragments.py (composer, mode badge, meta, stream cursor).
"""

from __future__ import annotations

import re
from typing import Any

from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from agents.documents.services import DocumentNotFoundError
from agents.events import FINAL_EVENT_TYPES, live_payload
from agents.events.payloads import DocumentUpdated, ModelDelta, ModelMessage, StepStarted, TurnEnded, turn_columns
from agents.models import AgentSession, Turn, TurnEvent
from agents.selectors import (
    event_list_before,
    event_list_until,
    session_reread,
    tool_call_of_turn,
    turn_reread,
    turn_waits_for_decisions,
)
from agents.state import ModeChange

from .document_panel import render_panel
from .event_views import EVENT_VIEWS, TurnItems, renders
from .fragments import ComposerState, replaced_turns, session_fragments, stream_cursor
from .markdown import render_markdown
from .timeline import live_text, render_turn

RERENDER_MIN_CHARS = 200  # a streamed text is rendered whole again once it grew by this much...
RERENDER_GROWTH = 4  # ...and to this many times its length when last rendered...
RERENDER_MAX_CHARS = 2_000  # ...while it is this long at most: later it is rendered once, at its end
_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})([^\n]*)", re.M)
_CODE_END = "</code></pre></div>"  # a code block as markdown.py frames it


def open_fence(text: str) -> bool:
    """Whether `text` ends inside a fenced code block (CommonMark: a line of three or more ` or ~,
    closed by a line of the same character at least as long; an info string of a ` fence has no `).
    Top-level fences only: a heuristic for streaming, the final rendering is markdown-it's."""
    opened = ""
    for match in _FENCE_LINE.finditer(text):
        fence, rest = match.groups()
        if not opened and not (fence[0] == "`" and "`" in rest):
            opened = fence
        elif opened and fence[0] == opened[0] and len(fence) >= len(opened) and not rest.strip():
            opened = ""
    return bool(opened)


def with_tail(html: str, text: str) -> tuple[SafeString, bool]:
    """Rendered Markdown with the element streamed text is appended to until the next rendering:
    inside its last paragraph, so the words run on; inside its code block if the text ends in an open
    fence, so code goes on as code; else (after a list, a table) below it. Its id is the page's one
    `live-tail` (a session runs one turn at a time), where aptix.js appends each piece. Also says
    whether the tail is in a code block."""
    body = html.rstrip()
    if open_fence(text) and body.endswith(_CODE_END):
        # markdown-it ends the block's last line with a break the text does not have yet: the tail goes before it.
        cut = len(body) - len(_CODE_END) - (0 if text.endswith("\n") else 1)
        if text.endswith("\n") or body[cut] == "\n":
            return mark_safe(body[:cut] + '<span class="live-tail-box" id="live-tail"></span>' + body[cut:]), True
    # Markdown drops the text's trailing space, which the next appended piece needs before it.
    space = " " if text[-1:].isspace() else ""
    tail = f'<span class="live-tail-box" id="live-tail">{space}</span>'
    if body.endswith("</p>"):
        return mark_safe(body[: -len("</p>")] + tail + "</p>"), False
    return mark_safe(body + tail), False


class LiveRenderer:
    """Turns broadcast events into HTML fragments: for a session's sockets in one process
    (renders.py) or for one socket's replay. It keeps each running turn's timeline as the items
    views build it (so a result redraws the card of a call it saw; one it did not see is read from
    the database), and the events of each turn it saw from the start, so the turn's end is drawn
    from them and the final event's payload, without reading the turn back."""

    def __init__(self, session: AgentSession) -> None:
        self.session = session
        self.reader = session.read_only  # a teammate's socket of a shared session: no buttons drawn
        self.timelines: dict[str, TurnItems] = {}  # turn id → its timeline, as the events shown built it
        self.live: dict[str, str] = {}  # turn id → text streamed since its last model message
        self.rendered: dict[str, int] = {}  # turn id → length of that text when last rendered whole
        self.in_code: set[str] = set()  # turns whose last rendering put the tail inside a code block
        self.tail_only = False  # the fragment being rendered only appends streamed text
        self.max_steps: dict[str, int | None] = {}
        self.seen: dict[str, list[TurnEvent]] = {}  # turn id → its events, if seen from seq 1 on

    def forget(self, turn_id: str) -> None:
        """Drop what was remembered of a turn (events were missed): read from the database again."""
        for memory in (self.live, self.rendered, self.seen, self.timelines):
            memory.pop(turn_id, None)
        self.in_code.discard(turn_id)

    def forget_text(self, turn_id: str) -> None:
        """The streamed text is done (a model message) or dropped (a retry): the next starts empty."""
        self.live[turn_id] = ""
        self.rendered.pop(turn_id, None)
        self.in_code.discard(turn_id)

    def renders_inline(self, turn: Turn, event_type: str, seq: int) -> bool:
        """Whether rendering the event needs neither the database nor blocking work (so it can be
        done on the event loop): streamed text of a turn whose text so far is known, a step's start,
        a new message's turn starting (drawn from the event and the turn row alone)."""
        if event_type == "turn.started":
            return seq == 1 and turn.origin == Turn.Origin.MESSAGE
        return event_type == "step.started" or (event_type == "model.delta" and turn.id in self.live)

    def render(self, turn: Turn, event_type: str, payload: dict, seq: int) -> str:
        """Sync (templates and, for some events, the database): call through sync_to_async."""
        view = EVENT_VIEWS.get(event_type)
        self.tail_only = False
        payload = live_payload(payload, event_type)
        self._remember(turn.id, event_type, payload, seq)
        if view is None:
            html = ""
        elif view.live is not None:
            html = view.live(self, turn, payload, seq)
        else:
            html = self.items(turn, event_type, payload)
        if self.tail_only:  # the page moves its cursor to the piece's seq itself (static/js/aptix.js)
            return html
        return html + stream_cursor(turn.id, seq)

    def items(self, turn: Turn, event_type: str, payload: Any) -> str:
        """The fragments that draw what the event's items view (timeline.py) changed in the turn's
        timeline: the same items the page shows, appended or swapped in by id."""
        view = EVENT_VIEWS[event_type]
        timeline = self.timelines.get(turn.id)
        if timeline is None:
            timeline = self.timelines[turn.id] = TurnItems(turn, live=True, lookup_call=lambda i: _stored_call(turn, i))
        timeline.turn = turn
        if view.items is not None:
            view.items(timeline, payload)
        return "".join(
            render_to_string(name, {"turn": turn, "reader": self.reader, **context})
            for name, context in timeline.take_fragments()
        )

    def _remember(self, turn_id: str, event_type: str, payload: dict, seq: int) -> None:
        events = self.seen.get(turn_id)
        if event_type == "turn.started" and seq == 1:
            events = self.seen[turn_id] = []
        elif events is None or events[-1].seq != seq - 1:
            self.seen.pop(turn_id, None)  # not from the start, or one missed: read from the database
            return
        events.append(TurnEvent(turn_id=turn_id, seq=seq, type=event_type, payload=payload))

    def events_until(self, turn: Turn, seq: int) -> list[TurnEvent]:
        """The turn's events up to `seq`: those seen, or (not seen from the start) the stored ones."""
        events = self.seen.get(turn.id)
        if events is not None and events and events[-1].seq == seq:
            return list(events)
        return event_list_until(turn=turn, seq=seq)

    def streamed(self, turn: Turn, seq: int) -> str:
        """What the turn streamed before event `seq`: remembered, or (a connection that resumed
        mid-reply, whose page already shows the start) read from the database."""
        if turn.id not in self.live:
            self.live[turn.id] = live_text(event_list_before(turn=turn, seq=seq))
        return self.live[turn.id]

    def status(self, turn: Turn, step: int | None, tokens: int | None) -> str:
        context = {
            "turn": turn,
            "running": True,
            "step": step,
            "max_steps": self.max_steps.get(turn.id),
            "tokens": tokens,
            "oob": True,
            "reader": self.reader,
        }
        return render_to_string("agents/_turn_status.html", context)


def _stored_turn(turn: Turn, seq: int) -> list:
    """The turn as of event `seq`: the run may have written later events already, and those follow on
    this stream as fragments of their own (drawn here too, they would show twice)."""
    turn_reread(turn=turn)
    return event_list_until(turn=turn, seq=seq)


def _ended(turn: Turn, payload: TurnEnded) -> None:
    """Give the turn the row columns its final event carries (payloads.py `turn_columns`); a final
    event without them (a turn ended by a sweep) reads the row."""
    columns = turn_columns(payload)
    if columns is None:
        turn_reread(turn=turn)
        return
    for name, value in columns.items():
        setattr(turn, name, value)
    if turn.finished_at is None:
        turn.finished_at = timezone.now()


@renders("turn.started")
def _turn_started(live: LiveRenderer, turn: Turn, payload: dict, seq: int) -> str:
    """Drawn from the event: a turn's first event shows it running with nothing streamed yet."""
    turn.status, turn.answer, turn.error = Turn.Status.RUNNING, "", ""
    turn.model_label = payload.get("model") or turn.model_label  # read before the run wrote it: the status line's
    live.live[turn.id] = ""  # nothing streamed yet: the first delta needs no database read
    events = live.events_until(turn, seq) if seq > 1 else list(live.seen.get(turn.id, []))
    # Appended, unless the page has the turn already (the send request's answer drew it): aptix.js.
    # A message that carried files: the Files panel of every tab lists them now.
    html = session_fragments(
        live.session, append=render_turn(turn, events, if_absent=True, reader=live.reader), files=bool(turn.files)
    )
    if turn.origin != Turn.Origin.MESSAGE:  # sent again: other tabs fold what it replaced, too
        html = replaced_turns(turn) + html
    if turn.origin == Turn.Origin.CONTINUED:  # after a switch: the session may go on in Agent now
        session_reread(session=live.session)
        html += session_fragments(live.session, meta=True)
    return html


@renders(*FINAL_EVENT_TYPES)
def _turn_ended(live: LiveRenderer, turn: Turn, payload: TurnEnded, seq: int) -> str:
    events = live.events_until(turn, seq)
    _ended(turn, payload)
    html = render_turn(turn, events, oob=True, reader=live.reader)
    live.seen.pop(turn.id, None)
    live.timelines.pop(turn.id, None)
    session_reread(session=live.session)  # its mode, title, grants: one read per process, not per viewer
    # The badge (and its catalog, the largest part) only if the mode changed: mode.changed drew it then.
    changed = bool(payload.get("mode_changes")) or "mode_changes" not in payload
    return html + session_fragments(live.session, composer="idle", mode_badge=changed, meta=True, waiting=True)


@renders("approval.requested", "approval.decided")
def _approval(live: LiveRenderer, turn: Turn, payload: dict, seq: int) -> str:
    """The turn redrawn with its cards (asked, or decided); the composer stays free while the turn
    waits (a new message declines what it waits for) and is busy again once its run continues."""
    html = render_turn(turn, _stored_turn(turn, seq), oob=True, reader=live.reader)
    session_reread(session=live.session)  # its grants may have changed
    waiting = turn_waits_for_decisions(turn=turn)
    composer: ComposerState = "idle" if waiting or turn.is_finished else "busy"
    # tools: an "Allow for this session" is listed in the Tools panel at once
    parts = session_fragments(live.session, composer=composer, turn=turn, tools=True, meta=True, waiting=True)
    return html + parts


@renders("step.started")
def _step_started(live: LiveRenderer, turn: Turn, payload: StepStarted, seq: int) -> str:
    live.max_steps[turn.id] = payload.get("max_steps")
    return live.status(turn, payload.get("step"), None)


@renders("model.delta")
def _model_delta(live: LiveRenderer, turn: Turn, payload: ModelDelta, seq: int) -> str:
    """Bytes per viewer linear in the answer: the new text is appended as it comes (plain text, the
    tail after the last rendering; code inside an open fence goes into its code block); the whole text
    so far is rendered as Markdown again when it has grown RERENDER_GROWTH times since the last time
    (so a half-written table or list soon looks like one), not inside an open fence (the code reads
    right as it is) and not past RERENDER_MAX_CHARS, but always once a fence the tail was in closes
    (prose must not run on inside the code block); and at the end (model.message, the final event).
    A connection's first delta always renders the whole text: a page that resumed mid-reply gets the
    reply as it stands, whatever it showed before."""
    piece = payload.get("text", "")
    text = live.streamed(turn, seq) + piece
    live.live[turn.id] = text
    rendered = live.rendered.get(turn.id)
    if rendered is None or _rerender(rendered, text, in_code=turn.id in live.in_code):
        live.rendered[turn.id] = len(text)
        html, in_code = with_tail(render_markdown(text), text)
        (live.in_code.add if in_code else live.in_code.discard)(turn.id)
        return render_to_string("agents/_event.html", {"streamed_html": html, "turn": turn})
    live.tail_only = True
    return render_to_string("agents/_live_tail.html", {"text": piece, "seq": seq})


def _rerender(rendered: int, text: str, *, in_code: bool) -> bool:
    if in_code:
        return not open_fence(text)
    grown = len(text) >= max(RERENDER_GROWTH * rendered, rendered + RERENDER_MIN_CHARS)
    return grown and len(text) <= RERENDER_MAX_CHARS and not open_fence(text)


@renders("model.retry")
def _model_retry(live: LiveRenderer, turn: Turn, payload: dict, seq: int) -> str:
    """The stream was cut off and is asked again: the text shown so far goes."""
    live.forget_text(turn.id)
    return render_to_string("agents/_event.html", {"streamed_html": "", "turn": turn})


@renders("model.message")
def _model_message(live: LiveRenderer, turn: Turn, payload: ModelMessage, seq: int) -> str:
    live.forget_text(turn.id)  # the text moves into an item (tool step) or the answer; the next starts empty
    status = live.status(turn, payload.get("step"), (payload.get("usage") or {}).get("turn_total"))
    return status + live.items(turn, "model.message", payload)  # the answer stays streamed: no item


@renders("mode.changed")
def _mode_changed(live: LiveRenderer, turn: Turn, payload: ModeChange, seq: int) -> str:
    session_reread(session=live.session)
    item = live.items(turn, "mode.changed", payload)
    # tools: the Tools panel lists what the new mode's policy offers (and blocks)
    return item + session_fragments(live.session, mode_badge=True, tools=True, meta=True)


@renders("document.updated")
def _document_updated(live: LiveRenderer, turn: Turn, payload: DocumentUpdated, seq: int) -> str:
    """The card, and the open panel follows the agent's write: the document at its new version."""
    item = live.items(turn, "document.updated", payload)
    try:
        panel = render_panel(live.session, oob=True, document_id=payload["documentId"])
    except DocumentNotFoundError:  # deleted with its session since: the card alone
        panel = ""
    return item + panel


def _stored_call(turn: Turn, call_id: str) -> dict:
    return tool_call_of_turn(turn=turn, call_id=call_id) or {"id": call_id or "", "name": "tool"}
