"""The paced model of bench/streams_concurrency.py: an OpenAI-compatible Chat Completions server
streaming `tokens` tokens at `rate` a second, in the bench's process (reached through an in-process
ASGI transport) or, run as a script, in a process of its own on loopback HTTP, as a real model server
is: then the bench's process holds Aptix alone, and its CPU figure is Aptix's.

    .venv/bin/python bench/paced_model.py --tokens 200 --rate 50 --ttft 0 --title-prompt "..."

prints `http://127.0.0.1:PORT` once it serves; GET /first-tokens answers the `first_token` map as
JSON (time.perf_counter() is CLOCK_MONOTONIC: the same clock in every process of the machine), and
POST /first-tokens/clear empties it. No Django here."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time

MARK = re.compile(r"stream (\d+)")
TITLE_TOKENS = 4


class PacedModel:
    """An OpenAI-compatible Chat Completions server streaming `tokens` tokens at `rate` a second.
    `first_token[n]` is when it sent the first token of the request whose message says "stream n".
    A request whose system message is `title_prompt` (the session's title, asked after its first
    answer) gets a few words, as a model answers it, not another `tokens`-long stream."""

    def __init__(self, tokens: int, rate: float, ttft: float = 0.0, *, title_prompt: str = "") -> None:
        self.tokens, self.interval, self.ttft = tokens, 1.0 / rate, ttft
        self.title_prompt = title_prompt
        self.first_token: dict[int, float] = {}

    async def __call__(self, scope, receive, send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if scope["path"].startswith("/first-tokens"):
            await self._first_tokens(scope, send)
            return
        request = json.loads(body)
        mark = MARK.search(request["messages"][-1]["content"])
        stream_id = int(mark.group(1)) if mark else -1
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})

        async def chunk(delta: dict | None, **extra) -> None:
            choices = (
                [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": extra.pop("finish", None)}]
            )
            data = {"id": "b", "object": "chat.completion.chunk", "created": 0, "model": "paced", "choices": choices}
            await send(
                {
                    "type": "http.response.body",
                    "body": f"data: {json.dumps({**data, **extra})}\n\n".encode(),
                    "more_body": True,
                }
            )

        await chunk({"role": "assistant", "content": ""})
        await asyncio.sleep(self.ttft)  # a real model's time to first token (0: answers at once)
        started = time.perf_counter()
        title = bool(self.title_prompt) and request["messages"][0]["content"] == self.title_prompt
        tokens = TITLE_TOKENS if title else self.tokens
        for n in range(tokens):
            # paced against the start, not token to token: a busy loop does not slow the model down
            await asyncio.sleep(max(0.0, started + n * self.interval - time.perf_counter()))
            if n == 0:
                # The turn's own reply only: the title the session gets after its first turn is another
                # request naming the same stream, later (it once overwrote this: negative times).
                self.first_token.setdefault(stream_id, time.perf_counter())
            if title:  # no "word": a socket takes its first "word" for its stream's first token
                await chunk({"content": "Paced "})
            else:
                await chunk({"content": "word " if n % 12 else "word.\n\n"})
        await chunk({}, finish="stop")
        await chunk(None, usage={"prompt_tokens": 50, "completion_tokens": tokens, "total_tokens": 50 + tokens})
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})

    async def _first_tokens(self, scope, send) -> None:
        if scope["method"] == "POST":
            self.first_token.clear()
        body = json.dumps({str(k): v for k, v in self.first_token.items()}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})


async def _serve(model: PacedModel) -> None:
    import socket

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(model, lifespan="off", log_level="warning", access_log=False, http="h11", ws="none")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    print(f"http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    await task  # until the bench ends this process


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--ttft", type=float, default=0.0)
    parser.add_argument("--title-prompt", default="")
    args = parser.parse_args()
    asyncio.run(_serve(PacedModel(args.tokens, args.rate, args.ttft, title_prompt=args.title_prompt)))
