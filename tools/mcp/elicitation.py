"""Elicitation: an MCP server asks the user for input while one of its tools runs.

Aptix declares `elicitation` (form and URL modes) because each connection's client gets an
elicitation callback (connection.py, which hands each request to `answer` here). A server asks in
one of two ways, and both reach that callback (the SDK routes them through one callback table):
- 2026-07-28 servers answer the call with an `InputRequiredResult`; the SDK's `call_tool` calls the
  callback inside the call's own task and retries the call with the answer (multi round-trip);
- handshake-era servers send an `elicitation/create` request while the call runs; the SDK calls
  the callback from its receive task.

Who is asked: the caller of a tool passes an `Asker` in the call's CallContext (tools/base.py: a
turn's run asks the user of the session), which goes down with the call to its connection. The
connection finds it for either way (connection.py): the first way runs in the call's own task, the
second is given the latest call still running on that connection. A request with nobody to ask (a
call from `manage.py`, a test) is answered "cancel": no user made a choice.

A tool call that fails with URLElicitationRequired (-32042: the server needs the user to visit a page
first, e.g. to link an account) asks a durable caller the error's URL question (`url_required`) by
raising InputPause under the key URL_REQUIRED; the answer "accept" (the user says they are done)
sends the call again once, plainly; "decline" or "cancel" ends it with a clear result.

Durable questions: a run's Asker is `durable`. A question that reaches the callback
through a 2026-07-28 multi round-trip on an HTTP connection (`Round.http`) needs no open call: the
callback raises `InputPause` (the request, the key it was asked under and the call's `request_state`,
which `Connection` records in the call's `Round`), the call ends there, and the caller pauses the
turn like an approval. Any process then sends the call again with the answer (the CallContext's
`resume`, a Resume: `input_responses` and `request_state`), after a restart too. A server-initiated request, or a stdio
server (its process dies with Aptix's), is asked in the open call, as above.

`form_fields` checks a form's requested schema (a flat object of strings, numbers, integers,
booleans, enums and multi-select enums, as the specification allows) and `validate_content` checks and converts what
the user entered against it; both raise ValueError with a message for the user.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal

import mcp_types as types

Action = Literal["accept", "decline", "cancel"]
ACTIONS: tuple[str, ...] = ("accept", "decline", "cancel")
STRING_FORMATS = ("email", "uri", "date", "date-time")


@dataclass(frozen=True)
class Request:
    """What the server asks: `schema` for form mode, `url` (and the server's `elicitation_id`) for URL
    mode; in sampling mode (the server asks to use the user's model: `answer_sampling`) `sampling` is
    the request as the card shows it and the caller runs the model once the user approves."""

    server: str
    message: str
    mode: Literal["form", "url", "sampling"]
    schema: dict[str, Any] = field(default_factory=dict, hash=False)
    url: str = ""
    elicitation_id: str = ""
    sampling: dict[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class Answer:
    action: Action
    content: dict[str, Any] | None = field(default=None, hash=False)


Ask = Callable[[Request], Coroutine[Any, Any, Answer]]


@dataclass(frozen=True)
class Asker:
    """Who answers a server's questions during a call: `ask`, awaited on `loop` (the caller's)."""

    ask: Ask
    loop: asyncio.AbstractEventLoop
    durable: bool = False  # a multi round-trip's question over HTTP pauses (InputPause) instead

    @classmethod
    def here(cls, ask: Ask, *, durable: bool = False) -> Asker:
        """`ask`, awaited on the running loop (the caller's)."""
        return cls(ask, asyncio.get_running_loop(), durable)


@dataclass
class Round:
    """One call's multi round-trip, as the connection sees it: whether it is over HTTP, and the
    `request_state` of the server's latest "input required" answer (None before one)."""

    http: bool
    input_required: bool = False
    request_state: str | None = None


@dataclass(frozen=True)
class Resume:
    """A call sent again with the answer to the question it paused on."""

    key: str
    answer: Answer
    request_state: str | None = None

    def input_responses(self) -> dict[str, Any]:
        content = self.answer.content if self.answer.action == "accept" else None
        return {self.key: types.ElicitResult(action=self.answer.action, content=content)}


class InputPause(Exception):
    """The server asked during a multi round-trip over HTTP, for a durable caller: the call ends
    here; `resume` (a Resume with the answer) sends it again later, from any process."""

    def __init__(self, request: Request, key: str, request_state: str | None) -> None:
        super().__init__(f'MCP server "{request.server}" asks the user: {request.message}')
        self.request, self.key, self.request_state = request, key, request_state


# A call that failed with URLElicitationRequired (-32042) pauses under this key: its Resume sends the
# call again plainly (no input responses) once the user says they are done, or ends it on a refusal.
URL_REQUIRED = "urlElicitationRequired"
URL_DECLINED = (
    'MCP tool "{name}" was not run: it needs you to visit a page of its server first ({url}), and the '
    "question was {action}d."
)
URL_STILL_REQUIRED = (
    'MCP tool "{name}" failed: it still needs a visit to a page of its server ({url}) after a retry: {message}'
)


def url_required(server: str, error: Any) -> Request | None:
    """The URL question a URLElicitationRequired error (-32042, `error` the MCPError's ErrorData) asks:
    its first http(s) page; None when it names none (the call then fails plainly)."""
    from mcp.shared.exceptions import UrlElicitationRequiredError

    try:
        pages = UrlElicitationRequiredError.from_error(error).elicitations
    except (ValueError, TypeError):
        return None
    for page in pages:
        if page.url.startswith(("https://", "http://")):
            message = page.message or error.message
            return Request(server, message, "url", url=page.url, elicitation_id=page.elicitation_id or "")
    return None


def request_of(server: str, params: Any) -> Request:
    """The SDK's request parameters as a Request; ValueError for a form this client cannot show."""
    if isinstance(params, types.ElicitRequestURLParams):
        if not params.url.startswith(("https://", "http://")):
            raise ValueError("URL elicitation needs an http(s) URL")
        elicitation_id = getattr(params, "elicitation_id", None) or ""  # not sent on 2026-07-28
        return Request(server, params.message, "url", url=params.url, elicitation_id=elicitation_id)
    schema = params.requested_schema
    schema = schema if isinstance(schema, dict) else schema.model_dump(by_alias=True, exclude_none=True)
    form_fields(schema)
    return Request(server, params.message, "form", schema=schema)


async def answer(
    server: str, asker: Asker | None, round_: Round | None, request_id: Any, params: Any
) -> types.ElicitResult | types.ErrorData:
    """The connection's answer to `server`'s elicitation request (on the MCP host's loop): asked of
    `asker` (None: "cancel"); `round_` is the call's multi round-trip when the request came as one
    (in the call's own task), else None."""
    if asker is None:
        return types.ElicitResult(action="cancel")
    try:
        request = request_of(server, params)
    except ValueError as exc:
        return types.ErrorData(code=types.INVALID_PARAMS, message=f"Aptix cannot show this request: {exc}")
    if asker.durable and round_ is not None and round_.http and round_.input_required:
        raise InputPause(request, str(request_id), round_.request_state)
    future = asyncio.run_coroutine_threadsafe(asker.ask(request), asker.loop)
    try:
        got = await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        future.cancel()  # the server gave up (or the call was stopped): the card goes away
        raise
    content = got.content if got.action == "accept" and request.mode == "form" else None
    return types.ElicitResult(action=got.action, content=content)


# --- sampling -------------------------------------------------------------------------------------
# A server asks to use the user's model (`sampling/createMessage`, which Aptix declares unless its
# mcp.json entry says "sampling": false): asked of the call's asker like a question, in the open call
# (never paused), as a card that shows the request. The caller runs the session's model only once the
# user approves, and answers with its reply: Answer("accept", {"text", "model", "stopReason"}), or
# {"error": why} when the model failed.

SAMPLING_DECLINED = "The user declined to let the server use their model."
SAMPLING_NOBODY = "Nobody can approve this sampling request here: it was refused."
SAMPLED_TEXT_CHARS = 20_000  # of each message shown on the card


def sampling_request(server: str, params: Any) -> Request:
    """The card's request for `params` (CreateMessageRequestParams): each message's text (other
    content named), the server's system prompt and the most it asks for."""
    messages = []
    for message in params.messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        text = "\n".join(
            block.text if isinstance(block, types.TextContent) else f"[{getattr(block, 'type', 'content')}]"
            for block in blocks
        )
        messages.append({"role": message.role, "text": text[:SAMPLED_TEXT_CHARS]})
    wanted = {"messages": messages, "systemPrompt": params.system_prompt or "", "maxTokens": params.max_tokens}
    message = f"asks to use your model for a reply of up to {params.max_tokens} tokens to these messages."
    return Request(server, message, "sampling", sampling=wanted)


async def answer_sampling(server: str, asker: Asker | None, params: Any) -> types.CreateMessageResult | types.ErrorData:
    """The connection's answer to `server`'s sampling request (on the MCP host's loop): the reply of
    the model `asker`'s caller runs once the user approves; an error when nobody can approve, the
    user declines or the model fails."""
    if asker is None:
        return types.ErrorData(code=types.INVALID_REQUEST, message=SAMPLING_NOBODY)
    future = asyncio.run_coroutine_threadsafe(asker.ask(sampling_request(server, params)), asker.loop)
    try:
        got = await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        future.cancel()
        raise
    content = got.content or {}
    if got.action != "accept":
        return types.ErrorData(code=types.INVALID_REQUEST, message=SAMPLING_DECLINED)
    if not isinstance(content.get("text"), str):
        return types.ErrorData(code=types.INTERNAL_ERROR, message=str(content.get("error") or "The model failed."))
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text=content["text"]),
        model=str(content.get("model") or "aptix"),
        stop_reason=str(content.get("stopReason") or "endTurn"),
    )


# --- forms ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FormField:
    """One input of a form card: `kind` is text, number, integer, boolean, enum or multi (several of
    the enum's `options`, (value, label) pairs)."""

    name: str
    kind: str
    title: str
    description: str = ""
    required: bool = False
    options: tuple[tuple[str, str], ...] = ()
    default: Any = None
    schema: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


def form_fields(schema: dict[str, Any]) -> list[FormField]:
    """The inputs of a requested schema, in its order; ValueError when it is not a flat object of
    primitive properties (what the specification allows a form to ask for)."""
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise ValueError("the requested schema must be an object")
    properties = schema.get("properties") or {}
    if not isinstance(properties, dict):
        raise ValueError("the requested schema's properties must be an object")
    required = set(schema.get("required") or [])
    fields_ = []
    for name, prop in properties.items():
        if not isinstance(prop, dict):
            raise ValueError(f'property "{name}" is not a schema')
        fields_.append(_field(str(name), prop, name in required))
    return fields_


def _field(name: str, prop: dict[str, Any], required: bool) -> FormField:
    title, description = str(prop.get("title") or name), str(prop.get("description") or "")
    kind = prop.get("type")
    options: list[tuple[str, str]] = []
    if kind == "string" and isinstance(prop.get("enum"), list):
        names = prop.get("enumNames") if isinstance(prop.get("enumNames"), list) else prop["enum"]
        options = [(str(v), str(label)) for v, label in zip(prop["enum"], names or [], strict=False)]
    elif kind == "string" and isinstance(prop.get("oneOf"), list):
        options = [(str(o.get("const")), str(o.get("title") or o.get("const"))) for o in prop["oneOf"] if "const" in o]
    if options:
        return FormField(name, "enum", title, description, required, tuple(options), prop.get("default"), prop)
    if kind == "array" and isinstance(items := prop.get("items"), dict):
        if isinstance(items.get("enum"), list):
            options = [(str(v), str(v)) for v in items["enum"]]
        elif isinstance(items.get("anyOf"), list):
            options = [
                (str(o.get("const")), str(o.get("title") or o.get("const"))) for o in items["anyOf"] if "const" in o
            ]
        if options:
            return FormField(name, "multi", title, description, required, tuple(options), prop.get("default"), prop)
    if kind == "string":
        return FormField(name, "text", title, description, required, default=prop.get("default"), schema=prop)
    if kind in ("number", "integer", "boolean"):
        return FormField(name, kind, title, description, required, default=prop.get("default"), schema=prop)
    raise ValueError(f'property "{name}" has a type a form cannot ask for ({kind!r})')


def validate_content(schema: dict[str, Any], raw: dict[str, Any]) -> dict[str, Any]:
    """What the user entered (form strings or JSON values), checked against `schema` and converted
    to its types; empty optional inputs are left out. ValueError names the first wrong input."""
    content: dict[str, Any] = {}
    for f in form_fields(schema):
        value = raw.get(f.name)
        if f.kind == "boolean" and value in (None, ""):
            value = False  # an unticked box is not sent with a form
        if value is None or value == "":
            if f.required:
                raise ValueError(f"{f.title}: this is required.")
            continue
        content[f.name] = _converted(f, value)
    return content


def _converted(f: FormField, value: Any) -> Any:
    if f.kind == "boolean":
        return _boolean(f, value)
    if f.kind in ("number", "integer"):
        return _number(f, value)
    if f.kind == "multi":
        return _chosen(f, value)
    return _text(f, str(value))


def _boolean(f: FormField, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if str(value).lower() in ("true", "on", "1", "yes"):
        return True
    if str(value).lower() in ("false", "off", "0", "no"):
        return False
    raise ValueError(f"{f.title}: choose yes or no.")


def _number(f: FormField, value: Any) -> float | int:
    prop = f.schema
    try:
        if isinstance(value, bool):  # booleans are ints in Python
            raise ValueError
        number: float | int = float(value) if f.kind == "number" else int(str(value).strip())
        if not math.isfinite(number):
            raise ValueError
    except ValueError:
        raise ValueError(f"{f.title}: enter {'a whole number' if f.kind == 'integer' else 'a number'}.") from None
    if "minimum" in prop and number < prop["minimum"]:
        raise ValueError(f"{f.title}: at least {prop['minimum']}.")
    if "maximum" in prop and number > prop["maximum"]:
        raise ValueError(f"{f.title}: at most {prop['maximum']}.")
    return number


def _chosen(f: FormField, value: Any) -> list[str]:
    prop = f.schema
    chosen = [str(v) for v in (value if isinstance(value, list) else [value])]
    if not set(chosen) <= {v for v, _ in f.options}:
        raise ValueError(f"{f.title}: choose among the options.")
    if len(chosen) < prop.get("minItems", 0) or len(chosen) > prop.get("maxItems", len(chosen)):
        raise ValueError(f"{f.title}: choose {prop.get('minItems', 0)} to {prop.get('maxItems', 'any number of')}.")
    return chosen


def _text(f: FormField, text: str) -> str:
    prop = f.schema
    if f.kind == "enum":
        if text not in {v for v, _ in f.options}:
            raise ValueError(f"{f.title}: choose one of the options.")
        return text
    if "minLength" in prop and len(text) < prop["minLength"]:
        raise ValueError(f"{f.title}: at least {prop['minLength']} characters.")
    if "maxLength" in prop and len(text) > prop["maxLength"]:
        raise ValueError(f"{f.title}: at most {prop['maxLength']} characters.")
    if prop.get("format") == "email" and "@" not in text:
        raise ValueError(f"{f.title}: enter an email address.")
    return text
