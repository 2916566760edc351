"""How often a streamed reply becomes a model.delta event: the coalescing policy.

Tokens arrive one by one (50 a second and more); each model.delta event is a database row and a
frame to every viewer, so deltas are gathered and sent as one event per interval. The interval
depends on the reply and on the process:

- a reply's first delta goes at once (the answer visibly starts);
- then one event per DELTA_INTERVAL for the reply's first DELTA_FAST_SECONDS, then one per
  DELTA_INTERVAL_LONG (a long answer costs every viewer a fifth of the events, and nobody reads
  faster than that: four updates a second still read as a flowing text);
- under load, longer: the replies streaming in this process share DELTA_EVENTS_PER_SECOND (so 100
  streams send what 20 would at the fast rate, instead of five times the rows, frames and renders),
  and a turn whose writer has not yet taken what it was handed (the database is behind) waits one
  DELTA_INTERVAL more per batch waiting;
- never longer than DELTA_INTERVAL_MAX.

`delta_interval` is the whole policy, a pure function (tests/agents/events/test_pacing.py);
`StreamingReplies` counts the replies streaming in the process.
"""

from __future__ import annotations

import weakref

DELTA_INTERVAL = 0.05
DELTA_INTERVAL_LONG = 0.25
DELTA_FAST_SECONDS = 1.0
DELTA_INTERVAL_MAX = 1.0
DELTA_EVENTS_PER_SECOND = 400  # model.delta events a process makes per second, all its replies together


def delta_interval(*, since_start: float | None, streams: int = 1, backlog: int = 0) -> float:
    """Seconds between two model.delta events of a reply. `since_start`: seconds since the reply's
    first delta (None: this is the first, which goes at once); `streams`: replies streaming in
    this process, this one included; `backlog`: the turn's batches handed to its writer and not yet
    taken (the database is behind)."""
    if since_start is None:
        return 0.0
    own = DELTA_INTERVAL if since_start < DELTA_FAST_SECONDS else DELTA_INTERVAL_LONG
    shared = max(streams, 1) / DELTA_EVENTS_PER_SECOND
    behind = own + backlog * DELTA_INTERVAL if backlog else 0.0
    return min(DELTA_INTERVAL_MAX, max(own, shared, behind))


class StreamingReplies:
    """The replies streaming in this process (weakly held: a run that dies mid-reply is not counted
    for ever)."""

    def __init__(self) -> None:
        self._replies: weakref.WeakSet[object] = weakref.WeakSet()

    def started(self, reply: object) -> None:
        self._replies.add(reply)

    def ended(self, reply: object) -> None:
        self._replies.discard(reply)

    def __len__(self) -> int:
        return len(self._replies)


streaming = StreamingReplies()
