"""The context budget (APTIX_CONTEXT_TOKENS): what of a session's past goes into a request.

The system prompt, the tool schemas, the current message and the current turn's steps always go.
Earlier turns fill what is left, newest first (so the oldest drop first), each whole: the user's
message, the assistant's tool calls with their results (cut to the result budget) and the answer,
so a follow-up ("now by product") sees what the previous turn looked up. Before every model call the
request is measured again; when the current turn has grown past the budget, more history goes, and
when none is left the turn fails with a message a user understands.

Tokens are counted with the model family's real tokenizer where one is known (OpenAI's: the
`bpe-openai` package, whose encodings ship inside it, so nothing is downloaded) and otherwise
estimated as one token per 3.5 characters, a little generous for English and code.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings

from ..attachments import files_note, resources_note
from ..documents.outline import documents_block
from ..documents.services import documents_current
from ..llm.client import reply_tokens
from ..llm.reply import ModelError
from ..models import Turn, TurnEvent

CHARS_PER_TOKEN = 3.5  # the estimate for models without a known tokenizer
MESSAGE_OVERHEAD = 4  # tokens a chat message costs beyond its text (role, separators)
ENCODE_CHUNK = 20_000  # characters per encode call (the tokenizer refuses very long inputs)
HISTORY_BATCH = 25  # past turns read per database trip, newest first
ERROR_TOO_LONG = (
    "This turn does not fit the model's context ({used:,} tokens of {budget:,}), even with the earlier "
    "conversation left out and this turn's earlier tool results summarised. The biggest parts: {parts}. Start a new "
    "session, shorten the message, use a mode that offers fewer tools, or pick a model with a larger context."
)
SUMMARISED = (
    "[Aptix summarised this earlier result to fit the model's context: it was {size:,} characters. Call the tool "
    "again, asking for less, if you still need it.]"
)
CUT_MARKER = (
    "\n\n[Aptix cut this tool result: it is {size:,} characters and you got the first {kept:,}. "
    "If you need more, call the tool again asking for less (a narrower query, a LIMIT, fewer columns or "
    "a smaller range).]"
)
MARKER_TOKENS = 80  # room kept for the cut marker when a result is cut to what fits
DOCUMENTS_SHARE = 4  # the session's documents take at most a quarter of the budget (outlines beyond)
MIN_RESULT_CHARS = 1_000  # a result is never cut below this for the context (older steps give way instead)


class TokenCounter:
    """Counts tokens for one model: its family's tokenizer, or the documented estimate."""

    def __init__(self, model: str) -> None:
        self.encoding = _encoding_for(model)

    @property
    def exact(self) -> bool:
        return self.encoding is not None

    def text(self, text: str) -> int:
        if not text:
            return 0
        if self.encoding is None:
            return int(len(text) / CHARS_PER_TOKEN) + 1
        return sum(
            len(self.encoding.encode(text[i : i + ENCODE_CHUNK], disallowed_special=()))
            for i in range(0, len(text), ENCODE_CHUNK)
        )

    def message(self, message: dict[str, Any]) -> int:
        tokens = MESSAGE_OVERHEAD + self.text(message.get("content") or "")
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            tokens += self.text(function.get("name", "")) + self.text(function.get("arguments", "")) + 3
        return tokens

    def messages(self, messages: Iterable[dict[str, Any]]) -> int:
        return sum(self.message(m) for m in messages)

    def tools(self, schemas: list[dict[str, Any]]) -> int:
        return self.text(json.dumps(schemas)) if schemas else 0


def warm_encodings() -> None:
    """Import the tokenizer (serving processes call this on a thread at start: see `_encoding_for`)."""
    import bpe_openai  # noqa: F401 - imported for its start-up cost, paid here rather than by a turn


@lru_cache(maxsize=32)
def _encoding_for(model: str) -> Any:
    # Imported here, not with this module: bpe_openai builds its models' registry when imported (1.1 s
    # of CPU on the 2-core VM), and every `manage.py` command (migrate, collectstatic…) paid it.
    import bpe_openai

    try:
        return bpe_openai.encoding_for_model(model)
    except Exception:  # noqa: BLE001 - any unknown model (Qwen, Llama, …) falls back to the estimate
        return None


def context_budget(total: int | None = None) -> int:
    """Tokens a request may use: the model's context (default APTIX_CONTEXT_TOKENS) less room for the reply."""
    total = total or settings.APTIX_CONTEXT_TOKENS
    return total - reply_tokens(total)


def budgeted(content: str, limit: int | None = None) -> str:
    """A tool result as the model gets it: at most `limit` (default APTIX_TOOL_RESULT_CHARS) characters,
    with a marker saying how much was cut and how to ask for less (the trace keeps more:
    APTIX_TOOL_RESULT_STORE_CHARS)."""
    limit = limit or settings.APTIX_TOOL_RESULT_CHARS
    if len(content) <= limit:
        return content
    return content[:limit] + CUT_MARKER.format(size=len(content), kept=limit)


async def documents_context(session_id: str, counter: TokenCounter, budget: int) -> str:
    """The current version of each of the session's documents, for the end of the system prompt
    (agents/documents/outline.py), within a share of the request's `budget`."""
    versions = await sync_to_async(documents_current)(session_id=session_id)
    return documents_block(versions, counter.text, budget // DOCUMENTS_SHARE)


# --- earlier turns ---------------------------------------------------------------------------------


@dataclass
class History:
    """Earlier turns as chat messages (oldest first), each turn's message count, and what was left out."""

    messages: list[dict[str, Any]]
    sizes: list[int]  # messages per turn, oldest first: what `trim` drops a turn at a time
    dropped: int  # earlier turns left out for the budget
    tokens: int
    turn_ids: list[str] = field(default_factory=list)  # the turns sent, oldest first (the trace's reference)


async def load_history(turn: Turn, counter: TokenCounter, budget: int) -> History:
    """The session's earlier finished turns that fit in `budget` tokens, newest first until one does
    not fit (each whole, never a part of one). A session's first turn has none: it does not queue on
    asgiref's one sync thread for them (behind every other starting turn's reads)."""
    if turn.index <= 1:
        return History(messages=[], sizes=[], dropped=0, tokens=0)
    return await _load_history(turn, counter, budget)


@sync_to_async
def _load_history(turn: Turn, counter: TokenCounter, budget: int) -> History:
    kept: list[list[dict[str, Any]]] = []
    kept_ids: list[str] = []
    used = dropped = 0
    past = Turn.objects.filter(
        session_id=turn.session_id,
        index__lt=turn.index,
        status__in=[Turn.Status.COMPLETED, Turn.Status.LIMIT_REACHED],
        replaced_by__isnull=True,  # an edit, retry or regenerate took them out of the conversation
    ).order_by("-index")
    full = False
    for start in range(0, past.count(), HISTORY_BATCH):
        batch = list(past.only("id", "user_message", "answer", "files")[start : start + HISTORY_BATCH])
        if full:
            dropped += len(batch)
            continue
        steps = steps_of([t.pk for t in batch])
        for old in batch:
            messages = past_turn_messages(old, steps.get(old.pk, []))
            tokens = counter.messages(messages)
            if full or used + tokens > budget:
                full = True
                dropped += 1
                continue
            kept.append(messages)
            kept_ids.append(old.pk)
            used += tokens
    kept.reverse()
    kept_ids.reverse()
    return History(
        messages=[m for turn_messages in kept for m in turn_messages],
        sizes=[len(m) for m in kept],
        dropped=dropped,
        tokens=used,
        turn_ids=kept_ids,
    )


def steps_of(turn_ids: list[str]) -> dict[str, list[TurnEvent]]:
    steps: dict[str, list[TurnEvent]] = {}
    events = TurnEvent.objects.filter(turn_id__in=turn_ids, type__in=["model.message", "tool.result"]).order_by(
        "turn_id", "seq"
    )
    for event in events.only("turn_id", "type", "payload"):
        if event.type == "tool.result" or event.payload.get("tool_calls"):
            steps.setdefault(event.turn_id, []).append(event)
    return steps


def past_turn_messages(turn: Turn, steps: list[TurnEvent], *, result_chars: int | None = None) -> list[dict[str, Any]]:
    """One earlier turn as chat messages: the user's message, each tool step (the assistant's calls
    and their results, cut to the result budget: `result_chars`, default APTIX_TOOL_RESULT_CHARS) and
    the answer."""
    note = files_note(turn.files, vision=False, earlier=True)  # its images are not sent again
    note += resources_note(turn.resources)  # nor its resources' content
    messages: list[dict[str, Any]] = [{"role": "user", "content": turn.user_message + note}]
    results = {e.payload.get("id"): e.payload for e in steps if e.type == "tool.result"}
    for event in steps:
        calls = event.payload.get("tool_calls") or [] if event.type == "model.message" else []
        if not calls or any(c.get("id") not in results for c in calls):
            continue  # a step whose results are not all there (client tools, a stop) is left out
        messages.append(
            {
                "role": "assistant",
                "content": event.payload.get("content") or None,
                "tool_calls": [
                    {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                    for c in calls
                ],
            }
        )
        messages += [
            {"role": "tool", "tool_call_id": c["id"], "content": _result_text(results[c["id"]], result_chars)}
            for c in calls
        ]
    messages.append({"role": "assistant", "content": turn.answer or "(no answer)"})
    return messages


def _result_text(result: dict[str, Any], limit: int | None = None) -> str:
    if result.get("ok"):
        return budgeted(result.get("result") or "", limit)
    return json.dumps({"error": result.get("error") or "The tool failed."})


# --- before every model call -----------------------------------------------------------------------


def trim(
    messages: list[dict[str, Any]], sizes: list[int], counter: TokenCounter, budget: int, fixed: int, *, tools: int = 0
) -> int:
    """Make `messages` and `fixed` (the `tools` tool schemas) fit in `budget`; returns the tokens used.
    First the oldest history turns go (they sit right after the system prompt), then this turn's older
    tool results are summarised to a note, oldest first, the last step's kept. Raises ContextTooLong,
    naming the biggest parts, when even that does not fit."""
    used = counter.messages(messages) + fixed
    while used > budget and sizes:
        size = sizes.pop(0)
        gone = messages[1 : 1 + size]
        del messages[1 : 1 + size]
        used -= counter.messages(gone)
    if used > budget:
        used = _summarise_steps(messages, counter, budget, used)
    if used > budget:
        steps = counter.messages(messages[2:])
        parts = {
            "the system prompt": counter.messages(messages[:1]),
            f"the tools ({tools})": fixed,
            "your message": counter.messages(messages[1:2]),
            "this turn's steps": steps,
        }
        named = ", ".join(
            f"{name} {tokens:,} tokens" for name, tokens in sorted(parts.items(), key=lambda p: -p[1]) if tokens
        )
        raise ContextTooLong(ERROR_TOO_LONG.format(used=used, budget=budget, parts=named))
    return used


def _summarise_steps(messages: list[dict[str, Any]], counter: TokenCounter, budget: int, used: int) -> int:
    """Summarise the current turn's tool results (after the system prompt and the user's message) to a
    short note, oldest first, until the request fits; the last step's results stay whole."""
    last_call = max((i for i, m in enumerate(messages) if m.get("tool_calls")), default=len(messages))
    for message in messages[2:last_call]:
        if used <= budget:
            break
        content = message.get("content") or ""
        if message.get("role") != "tool" or content.startswith("[Aptix summarised"):
            continue
        note = SUMMARISED.format(size=len(content))
        used += counter.text(note) - counter.text(content)
        message["content"] = note
    return used


def result_room(
    state: Any, counter: TokenCounter, context_tokens: int | None, content: str, limit: int | None = None
) -> int:
    """Characters of a tool result that fit the request: at most `limit` (APTIX_TOOL_RESULT_CHARS),
    and no more than the context has room for after the system prompt, the tools, this turn's steps so
    far and the reply's room (earlier turns give way first, so they do not count)."""
    limit = limit or settings.APTIX_TOOL_RESULT_CHARS
    if len(content) <= MIN_RESULT_CHARS:
        return limit
    history = sum(state.history_sizes)
    current = [*state.messages[:1], *state.messages[1 + history :]]
    used = counter.messages(current) + counter.tools(state.tools) + MESSAGE_OVERHEAD + MARKER_TOKENS
    room = context_budget(context_tokens) - used
    sample = content[:limit]
    tokens = counter.text(sample)
    if tokens <= room:
        return limit
    return max(int(len(sample) * max(room, 0) / tokens * 0.95), MIN_RESULT_CHARS)


class ContextTooLong(Exception):
    """The request does not fit the model's context even without history."""


def fit_request(state: Any, counter: TokenCounter, context_tokens: int | None, tools: list[dict] | None) -> int:
    """Make the run's next request fit its model (`trim`), keeping the trace's index of the messages it
    already holds in step; a request that cannot fit is a ModelError the user reads."""

    before = len(state.messages)
    try:
        used = trim(
            state.messages,
            state.history_sizes,
            counter,
            context_budget(context_tokens),
            counter.tools(tools or []),
            tools=len(tools or []),
        )
    except ContextTooLong as exc:
        raise ModelError(str(exc), kind="context") from None
    state.traced = max(state.traced - (before - len(state.messages)), 0)
    return used
