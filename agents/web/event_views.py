"""What the page shows of each event type: one `EventView` per type, keyed by the names of the event
registry (agents/events/registry.py), used by the page and the live stream alike.

An event type that shows in a turn's timeline has an items view (`@shows`, in timeline.py): what
the event adds to or changes in the turn's items, given the `TurnItems` being built. The timeline
(timeline.py `turn_items`) runs it over a turn's stored events; the live stream (live.py) runs the
same function on each broadcast event and sends, as out-of-band fragments, just what it changed. An
event type whose live fragment is more than those items (the whole turn redrawn, the session's
parts, streamed text, the status line) has a live view too (`@renders`, in live.py).

A new event type that shows is therefore its registry entry and one `@shows` function (and its
template, if it is a new kind of item); `test_event_registry` checks every type has a view.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agents.events import EVENTS

if TYPE_CHECKING:
    from agents.models import Turn


@dataclass
class Item:
    """One entry of a turn's timeline: "text", "reasoning", "tool", "mode" or "approval"."""

    kind: str
    data: dict[str, Any] = field(default_factory=dict)


# A live fragment: a template and its context (the turn is added when it is rendered).
Fragment = tuple[str, dict[str, Any]]
EVENT_TEMPLATE = "agents/_event.html"


class TurnItems:
    """A turn's timeline being built, one event at a time: its items, the index of each keyed card
    (a tool call's card by the call's id, an approval's by `approval:<id>`), the calls seen, and —
    when built for the live stream (`live`) — the fragments that draw each change on the page.

    `lookup_call` finds a call the live stream did not see (a connection that joined after it)."""

    def __init__(
        self, turn: Turn, *, live: bool = False, lookup_call: Callable[[str], Mapping[str, Any]] | None = None
    ) -> None:
        self.turn = turn
        self.live = live
        self.items: list[Item] = []
        self.cards: dict[str, int] = {}
        self.calls: dict[str, Mapping[str, Any]] = {}
        self.fragments: list[Fragment] = []
        self._lookup_call = lookup_call

    def add(self, item: Item | None, *, key: str = "", **context: Any) -> None:
        """Append `item` (a card under `key`); live, the fragment appends it to the turn's items
        (`context` goes with it to the template)."""
        if item is not None:
            if key:
                self.cards[key] = len(self.items)
            self.items.append(item)
        if self.live:
            self.fragments.append((EVENT_TEMPLATE, {"item": item, "append": True, **context}))

    def card(self, key: str) -> Item | None:
        at = self.cards.get(key)
        return self.items[at] if at is not None else None

    def replace(self, key: str, item: Item) -> None:
        """Put `item` in the place of the card `key` (live: the page swaps the card by its id)."""
        if (at := self.cards.get(key)) is not None:
            self.items[at] = item
        if self.live:
            self.fragments.append((EVENT_TEMPLATE, {"item": item, "replace": True}))

    def fragment(self, template: str, **context: Any) -> None:
        """A live fragment of its own (a part of a card); nothing on the page's timeline."""
        if self.live:
            self.fragments.append((template, context))

    def call(self, call_id: str) -> Mapping[str, Any] | None:
        """The `tool.called` payload of `call_id`: seen, or (live) looked up."""
        called = self.calls.get(call_id)
        if called is None and self._lookup_call is not None:
            called = self.calls[call_id] = self._lookup_call(call_id)
        return called

    def take_fragments(self) -> list[Fragment]:
        fragments, self.fragments = self.fragments, []
        return fragments


ItemsView = Callable[[TurnItems, Any], None]
# (the socket's renderer: live.py LiveRenderer, which imports this module; the turn; the payload; its seq)
LiveView = Callable[[Any, "Turn", Any, int], str]


@dataclass
class EventView:
    """How one event type shows: its items view (timeline and live stream) and its live view (when
    the live fragment is more than the items). A type with neither only advances the stream cursor."""

    items: ItemsView | None = None
    live: LiveView | None = None


EVENT_VIEWS: dict[str, EventView] = {}


def _views(event_types: tuple[str, ...]) -> list[EventView]:
    unknown = set(event_types) - set(EVENTS)
    if unknown:
        raise ValueError(f"No such event type: {', '.join(sorted(unknown))} (see agents/events/registry.py).")
    return [EVENT_VIEWS.setdefault(event_type, EventView()) for event_type in event_types]


def shows(*event_types: str) -> Callable[[ItemsView], ItemsView]:
    """Register the decorated function as the items view of `event_types`."""
    views = _views(event_types)

    def register(view: ItemsView) -> ItemsView:
        for entry in views:
            entry.items = view
        return view

    return register


def renders(*event_types: str) -> Callable[[LiveView], LiveView]:
    """Register the decorated function as the live view of `event_types`."""
    views = _views(event_types)

    def register(view: LiveView) -> LiveView:
        for entry in views:
            entry.live = view
        return view

    return register
