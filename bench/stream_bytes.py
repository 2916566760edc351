"""Benchmark: bytes and render time one viewer's socket costs for a streamed answer.

A 2,000-token answer (about 8,000 characters of Markdown: paragraphs, a list, a table, a code block)
arrives as model.delta events the way the recorder coalesces them (`--chars-per-delta`, about 10 at
50 tokens/s and one event per 50 ms), then model.message and turn.completed. Each event is rendered
by the live renderer exactly as the websocket consumer does for one viewer. Printed: frames, total
bytes sent, the largest frame, and the render CPU time.

    .venv/bin/python bench/stream_bytes.py [--tokens 2000] [--chars-per-delta 10]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "aptix.settings")
os.environ.setdefault("SECRET_KEY", "bench-only")
os.environ.setdefault("APTIX_MCP_AUTOSTART", "false")
if not os.environ.get("DATABASE_URL"):
    os.environ["APTIX_VAR_DIR"] = tempfile.mkdtemp(prefix="aptix-bench-")

import django

django.setup()

from django.contrib.auth import get_user_model
from django.core.management import call_command

from agents.sessions import session_create
from agents.turns import turn_start
from agents.web.live import LiveRenderer
from aptix.teams import team_ensure

BLOCK = (
    "Revenue grew in **every region** except the south, where a *late shipment* moved orders into the "
    "next quarter.\n\n- North: up 12%\n- East: up 8%\n- South: down 3%\n\n| Region | Q1 | Q2 |\n|---|---|---|\n"
    "| North | 120 | 134 |\n| South | 98 | 95 |\n\n```python\ntotal = sum(row.revenue for row in rows)\n```\n\n"
)


def answer(tokens: int) -> str:
    text = ""
    while len(text) < tokens * 4:
        text += BLOCK
    return text[: tokens * 4]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--chars-per-delta", type=int, default=10)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench-stream")
    session = session_create(team=team_ensure(name="Bench stream", owner=user), user=user, execution="ask")
    turn = turn_start(session=session, text="Summarise revenue")
    text = answer(args.tokens)
    step = args.chars_per_delta
    events = [("turn.started", {"mode": session.mode, "execution": "ask"}), ("step.started", {"step": 1})]
    events += [("model.delta", {"text": text[i : i + step]}) for i in range(0, len(text), step)]
    events += [("model.message", {"content": text, "step": 1}), ("turn.completed", {"answer": text})]
    renderer = LiveRenderer(session)
    sizes = []
    cpu = time.process_time()
    for seq, (event_type, payload) in enumerate(events, 1):
        sizes.append(len(renderer.render(turn, event_type, payload, seq).encode()))
    cpu = time.process_time() - cpu
    print(
        f"{args.tokens} tokens ({len(text):,} chars) in {len(events)} events: {sum(sizes) / 1024:,.1f} KB sent to one "
        f"viewer, largest frame {max(sizes) / 1024:.1f} KB, render CPU {cpu * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()
