"""The registry of event types: one `EventType` entry per type, owning its payload type (a TypedDict
of payloads.py), whether it ends a turn, and which of its fields are trace only.

A new event type is one entry in `EVENTS` (and its TypedDict); what the page shows of it is its
view (agents/web/event_views.py: an `@shows` function in timeline.py, keyed by the same name). Every write checks
its payload here (`check_payload`): an unknown type, a required key missing or of the wrong
top-level type is refused with an error naming the type and the key. The check is done once per
event and costs a dict lookup plus one `isinstance` per required key; the streamed text
(model.delta) is built by the recorder itself and not checked again.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NotRequired, Required, Union

from ..state import ModeChange
from .payloads import (
    ApprovalDecided,
    ApprovalRequested,
    DocumentUpdated,
    ModelDelta,
    ModelMessage,
    ModelRetry,
    StepStarted,
    ToolCalled,
    ToolProgress,
    ToolResult,
    ToolTask,
    TurnEnded,
    TurnStarted,
)


class EventPayloadError(ValueError):
    """An event that may not be written: its type is unknown or its payload is malformed (a bug in
    the code that builds it, not a user error)."""


@dataclass(frozen=True)
class EventType:
    """One event type: its name, its payload's TypedDict, whether it ends the turn (`final`), and the
    fields kept in the stored trace but left out of the live stream (`trace_only`)."""

    name: str
    payload: type
    final: bool = False
    trace_only: frozenset[str] = frozenset()
    # The payload's required keys and the top-level types they may hold (from the TypedDict).
    required: tuple[tuple[str, tuple[type, ...]], ...] = field(init=False)

    def __post_init__(self) -> None:
        # Read from the annotations, not __required_keys__: with postponed annotations (this
        # codebase's `from __future__ import annotations`) Python 3.11 counts NotRequired keys in it.
        hints = typing.get_type_hints(self.payload, include_extras=True)
        total = getattr(self.payload, "__total__", True)
        checks = tuple((key, _runtime_types(hint)) for key, hint in hints.items() if _required(hint, total=total))
        object.__setattr__(self, "required", checks)

    def check(self, payload: Mapping[str, Any]) -> None:
        """Raise EventPayloadError unless every required key is there with a value of its type."""
        for key, kinds in self.required:
            if key not in payload:
                raise EventPayloadError(f"A {self.name} event needs {key!r} in its payload.")
            if not isinstance(payload[key], kinds):
                wanted = " or ".join(kind.__name__ for kind in kinds)
                got = type(payload[key]).__name__
                raise EventPayloadError(f"A {self.name} event's {key!r} must be {wanted}, not {got}.")


def _required(hint: Any, *, total: bool) -> bool:
    origin = typing.get_origin(hint)
    return origin is Required or (total and origin is not NotRequired)


def _runtime_types(hint: Any) -> tuple[type, ...]:
    """What `isinstance` checks for an annotation, at the top level only (list[X] → list, a
    TypedDict → dict, X | None → X or NoneType; a float also takes an int, as JSON does)."""
    origin = typing.get_origin(hint)
    if origin in (Required, NotRequired):
        return _runtime_types(typing.get_args(hint)[0])
    if origin in (Union, types.UnionType):
        return tuple(kind for arg in typing.get_args(hint) for kind in _runtime_types(arg))
    if hint is None or hint is type(None):
        return (type(None),)
    if hint is Any:
        return (object,)
    if typing.is_typeddict(hint):
        return (dict,)
    if hint is float:
        return (int, float)
    if origin is not None:
        return (origin,)
    return (hint,)


def _entries(*entries: EventType) -> dict[str, EventType]:
    return {entry.name: entry for entry in entries}


EVENTS: dict[str, EventType] = _entries(
    EventType("turn.started", TurnStarted, trace_only=frozenset({"system_prompt", "tools"})),
    EventType("step.started", StepStarted, trace_only=frozenset({"messages", "tools"})),
    EventType("model.delta", ModelDelta),
    EventType("model.message", ModelMessage),
    EventType("model.retry", ModelRetry),
    EventType("tool.called", ToolCalled),
    EventType("tool.progress", ToolProgress),
    EventType("tool.task", ToolTask),
    EventType("tool.result", ToolResult),
    EventType("mode.changed", ModeChange),
    EventType("document.updated", DocumentUpdated),
    EventType("approval.requested", ApprovalRequested),
    EventType("approval.decided", ApprovalDecided),
    EventType("limit.reached", TurnEnded, final=True),
    EventType("turn.completed", TurnEnded, final=True),
    EventType("turn.failed", TurnEnded, final=True),
    EventType("turn.cancelled", TurnEnded, final=True),
)

# Derived names other modules use (the consumer and the runners look for a turn's end).
EVENT_PAYLOADS: dict[str, type] = {name: entry.payload for name, entry in EVENTS.items()}
EVENT_TYPES = tuple(EVENTS)
FINAL_EVENT_TYPES = frozenset(name for name, entry in EVENTS.items() if entry.final)


def event_type(name: str) -> EventType:
    """The registry entry of `name`; EventPayloadError if there is none."""
    entry = EVENTS.get(name)
    if entry is None:
        raise EventPayloadError(f"Unknown event type {name!r} (see agents/events/registry.py).")
    return entry


def check_payload(name: str, payload: Mapping[str, Any]) -> None:
    """Refuse an event of an unknown type or with a malformed payload (EventPayloadError)."""
    event_type(name).check(payload)


def live_payload(payload: dict[str, Any], name: str) -> dict[str, Any]:
    """What of an event's payload goes to the live stream (and to replays): without its trace-only
    fields."""
    entry = EVENTS.get(name)
    if entry is None or not entry.trace_only or entry.trace_only.isdisjoint(payload):
        return payload
    return {k: v for k, v in payload.items() if k not in entry.trace_only}
