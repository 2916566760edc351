"""Benchmark: bytes and render time one viewer's socket costs for a streamed answer.

A 2,000-token answer (about 8,000 characters of Markdown: paragraphs, a list, a table, a code block;
`--prose`: paragraphs only) arrives at `--rate` tokens/s (4 characters a token) as model.delta
events the way the recorder coalesces them for a lone reply (agents/events/pacing.py: one event per
DELTA_INTERVAL for the reply's first DELTA_FAST_SECONDS, then one per DELTA_INTERVAL_LONG;
`--chars-per-delta` fixes the size instead), then model.message and turn.completed (with the answer
and usage, as a run writes it). Appended text is a `<b data-seq>` frame that aptix.js appends
(templates/agents/_live_tail.html); the whole text is rendered again while it is short
(agents/web/live.py RERENDER_*). Each event is rendered by the live renderer as the websocket consumers of a
session share it (agents/web/renders.py). Printed: frames, total bytes sent to one viewer, the
largest frame, the render CPU time, and the bytes on the wire once compressed as Daphne does under
`manage.py aptix_serve` for a browser (permessage-deflate, tests/browser/test_stream_compression.py).

    .venv/bin/python bench/stream_bytes.py [--tokens 2000] [--rate 50] [--chars-per-delta N] [--prose]
"""

from __future__ import annotations

import argparse
import random
import re
import time
import zlib

from benchenv import setup_django  # bench/benchenv.py: this script runs from bench/

setup_django(
    APTIX_MCP_AUTOSTART="false",
)

from django.contrib.auth import get_user_model
from django.core.management import call_command

from agents.events.pacing import delta_interval
from agents.sessions import session_create
from agents.turns import turn_start
from agents.web.live import LiveRenderer
from agents.web.markdown import render_markdown
from aptix.teams import team_ensure

BLOCK = (
    "Revenue grew in **every region** except the south, where a *late shipment* moved orders into the "
    "next quarter.\n\n- North: up 12%\n- East: up 8%\n- South: down 3%\n\n| Region | Q1 | Q2 |\n|---|---|---|\n"
    "| North | 120 | 134 |\n| South | 98 | 95 |\n\n```python\ntotal = sum(row.revenue for row in rows)\n```\n\n"
)


WORDS = [
    "revenue",
    "orders",
    "margin",
    "region",
    "quarter",
    "shipment",
    "customer",
    "supplier",
    "forecast",
    "churn",
    "basket",
    "price",
    "discount",
    "return",
    "invoice",
    "warehouse",
    "stock",
    "demand",
    "season",
    "campaign",
    "channel",
    "retail",
    "online",
    "wholesale",
    "growth",
    "decline",
    "north",
    "east",
    "south",
    "west",
    "plums",
    "pears",
    "apples",
    "cherries",
    "figs",
    "lemons",
    "melons",
    "grapes",
    "apricots",
    "peaches",
]


def answer(tokens: int, block: str = BLOCK) -> str:
    """`block` repeated, each copy with its own numbers and words (seeded), so that a compressor
    finds no more repetition than in a real answer of that shape."""
    rng, text = random.Random(7), ""
    while len(text) < tokens * 4:
        copy = re.sub(r"\d+", lambda m: str(rng.randint(1, 999)), block)
        copy = re.sub(
            r"\b(every|south|north|east|late|shipment|orders|quarter|revenue|total|rows?)\b",
            lambda m: rng.choice(WORDS),
            copy,
        )
        text += copy
    return text[: tokens * 4]


PROSE = (
    "Revenue grew in every region except the south, where a late shipment moved orders into the next "
    "quarter. The north led with twelve percent, and the east followed with eight.\n\n"
)


def pieces(text: str, rate: float, fixed: int | None) -> list[str]:
    """The text of each model.delta event: `fixed` characters, or what the recorder's coalescing
    gathers from tokens arriving at `rate` a second."""
    if fixed:
        return [text[i : i + fixed] for i in range(0, len(text), fixed)]
    out, at, clock, per_second = [], 0, 0.0, rate * 4
    while at < len(text):
        interval = delta_interval(since_start=clock, streams=1)  # one reply streaming, the database keeping up
        size = max(4, round(per_second * interval)) if out else 4  # the first token goes at once
        out.append(text[at : at + size])
        at, clock = at + size, clock + (interval if len(out) > 1 else 0.0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--chars-per-delta", type=int, default=0)
    parser.add_argument("--prose", action="store_true")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench-stream")
    session = session_create(team=team_ensure(name="Bench stream", owner=user), user=user, execution="ask")
    turn = turn_start(session=session, text="Summarise revenue")
    text = answer(args.tokens, PROSE if args.prose else BLOCK)
    usage = {"prompt_tokens": 500, "completion_tokens": args.tokens}
    final = {"status": "completed", "answer": text, "mode": session.mode, "mode_changes": [], "branch": None}
    events = [("turn.started", {"mode": session.mode, "execution": "ask"}), ("step.started", {"step": 1})]
    events += [("model.delta", {"text": piece}) for piece in pieces(text, args.rate, args.chars_per_delta)]
    events += [("model.message", {"content": text, "step": 1, "usage": {**usage, "turn_total": 500 + args.tokens}})]
    events += [("turn.completed", {**final, "usage": usage, "steps": 1})]
    renderer = LiveRenderer(session)
    sizes: dict[str, list[int]] = {}
    wire = Deflate()
    cpu = time.process_time()
    for seq, (event_type, payload) in enumerate(events, 1):
        frame = renderer.render(turn, event_type, payload, seq).encode()
        wire.send(frame)
        kind = f"{event_type} (appended)" if renderer.tail_only else event_type
        sizes.setdefault(kind, []).append(len(frame))
    cpu = time.process_time() - cpu
    every = [size for group in sizes.values() for size in group]
    print(
        f"{args.tokens} tokens ({len(text):,} chars{', prose' if args.prose else ''}) in {len(events)} events: "
        f"{sum(every) / 1024:,.1f} KB sent to one viewer, largest frame {max(every) / 1024:.1f} KB, "
        f"render CPU {cpu * 1000:.0f} ms"
    )
    for kind, group in sizes.items():
        print(f"  {kind:28} {len(group):4} frames {sum(group) / 1024:8.1f} KB")
    answer_html = len(str(render_markdown(text)).encode())
    print(f"  of which the answer's HTML (in the final frame): {answer_html / 1024:.1f} KB")
    print(
        f"on the wire, compressed as manage.py aptix_serve does for a browser (permessage-deflate): "
        f"{wire.sent / 1024:,.1f} KB"
    )


class Deflate:
    """What permessage-deflate (RFC 7692) puts on the wire for these messages, as Autobahn's
    PerMessageDeflate does with aptix_serve's settings: one raw deflate stream kept across messages
    (context takeover), mem_level 5, each message flushed with Z_SYNC_FLUSH and its trailing
    00 00 ff ff dropped, plus the websocket frame header of a server-to-client frame."""

    def __init__(self) -> None:
        self.stream = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -zlib.MAX_WBITS, 5)
        self.sent = 0

    def send(self, message: bytes) -> None:
        body = self.stream.compress(message) + self.stream.flush(zlib.Z_SYNC_FLUSH)
        size = len(body) - 4
        self.sent += size + (2 if size < 126 else 4 if size < 65536 else 10)


if __name__ == "__main__":
    main()
