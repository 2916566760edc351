"""image_gen: draw a chart, a title card or (through an injected provider) an illustration.

Local rendering needs no network: charts with matplotlib's Agg backend through
`matplotlib.figure.Figure` (never pyplot, which keeps global state and is not thread-safe), cards
with Pillow. A real image provider is injected by the caller as `remote(prompt, size) -> PNG bytes`;
this package never imports `agents`. The image is saved through a Django storage as
`images/<32-hex>.png` and the tool returns its URL. The local renderers live in `image_render`.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from ..arguments import ToolArgumentError, json_object_arguments
from ..base import AgentTool, InvokeResult, ResultImage, ToolContext, ToolDependencies, function_schema, json_result
from ..media import image_name, is_site_image
from .image_render import normalise_png, render_card, render_chart

KINDS = ("bar", "line", "pie", "card")
SIZES = ("512x512", "1024x1024", "1024x768")
DEFAULT_SIZE = "1024x768"
DEFAULT_CHART_KIND = "bar"
MAX_POINTS = 50
MAX_PROMPT_CHARS = 4000
# How long an injected provider may take before the call counts as a failure.
REMOTE_TIMEOUT_SECONDS = 120

ERROR_INVALID_JSON = (
    "image_gen requires the arguments to be a valid JSON object, e.g. "
    "{\"prompt\": \"Monthly revenue\", \"kind\": \"bar\", \"labels\": [\"Jan\", \"Feb\"], \"values\": [3, 5]}."
)
ERROR_UNKNOWN_ARGUMENTS = "image_gen does not accept {names}; allowed arguments are {allowed}."
ERROR_PROMPT = "image_gen requires a non-empty 'prompt' string."
ERROR_PROMPT_TOO_LONG = f"image_gen requires 'prompt' to be at most {MAX_PROMPT_CHARS} characters."
ERROR_TITLE = "image_gen requires 'title' to be a string when given."
ERROR_KIND = "image_gen requires 'kind' to be one of " + ", ".join(KINDS) + "."
ERROR_SIZE = "image_gen requires 'size' to be one of " + ", ".join(SIZES) + "."
ERROR_LABELS = "image_gen requires 'labels' to be an array of strings."
ERROR_VALUES = "image_gen requires 'values' to be an array of finite numbers."
ERROR_LABELS_WITHOUT_VALUES = "image_gen requires 'values' whenever 'labels' are given (one number per label)."
ERROR_VALUES_WITHOUT_LABELS = "image_gen requires 'labels' whenever 'values' are given (one label per value)."
ERROR_LENGTH_MISMATCH = "image_gen requires 'labels' and 'values' of the same length."
ERROR_TOO_MANY_POINTS = f"image_gen accepts at most {MAX_POINTS} labels/values; summarise or group the data first."
ERROR_PIE_VALUES = "image_gen requires pie chart 'values' to be non-negative with a total above zero."
ERROR_FAILED = "image_gen could not create the image."

# Stable tag for the admin log, so operators can find every failed image.
LOG_TAG = "ImageGenTool.Render"

_ALLOWED_ARGUMENTS = ("prompt", "kind", "title", "labels", "values", "size")

RemoteRenderer = Callable[[str, str], Awaitable[bytes]]


class ImageGenTool(AgentTool):
    TOOL_NAME: ClassVar[str] = "image_gen"
    TOOL_USAGE_METADATA: ClassVar[str] = (
        "Use this tool when the user asks you to draw, illustrate, chart or plot something. A chart needs "
        "'labels' and 'values' of the same length (max 50) from real data, never invented. Show the "
        "returned url with its alt text. Do not call it for plain text or tables."
    )
    SCHEMA_DESCRIPTION: ClassVar[str] = "Creates a chart or picture and returns its URL."
    is_tool_fully_executed_on_server = True
    RESULT_IS_ANSWER: ClassVar[bool] = True  # an Ask answer may be this result alone (tools/base.py)

    @staticmethod
    def result_image(result: str) -> ResultImage | None:
        """The image a result points to on this site: the card shows it, the export links it."""
        data = json_result(result)
        url = data.get("url") if data else None
        if data and isinstance(url, str) and is_site_image(url):
            return {"url": url, "alt": str(data.get("alt") or "image")}
        return None

    @staticmethod
    def result_markdown(result: str) -> str | None:
        """An Ask answer shows the image itself."""
        data = json_result(result)
        return f"![{data.get('alt', 'image')}]({data['url']})" if data and "url" in data else None

    @classmethod
    def from_dependencies(cls, deps: ToolDependencies) -> ImageGenTool:
        return cls(deps.logger, remote=deps.image_remote)

    def __init__(self, logger: Any, *, storage: Any = None, remote: RemoteRenderer | None = None) -> None:
        if logger is None:
            raise ValueError("ImageGenTool requires an admin logger (got None).")
        if remote is not None and not callable(remote):
            raise ValueError("ImageGenTool requires 'remote' to be an async callable remote(prompt, size) or None.")
        self._logger = logger
        self._storage = storage if storage is not None else default_storage
        self._remote = remote

    @staticmethod
    def get_schema() -> dict:
        return function_schema(
            ImageGenTool.TOOL_NAME,
            ImageGenTool.SCHEMA_DESCRIPTION,
            {
                "prompt": {
                    "type": "string",
                    "description": "What the image shows.",
                },
                "kind": {
                    "type": "string",
                    "enum": list(KINDS),
                },
                "title": {"type": "string"},
                "labels": {
                    "type": "array",
                    "items": {"type": "string"},
                    "maxItems": MAX_POINTS,
                },
                "values": {
                    "type": "array",
                    "items": {"type": "number"},
                    "maxItems": MAX_POINTS,
                },
                "size": {
                    "type": "string",
                    "enum": list(SIZES),
                },
            },
            required=["prompt"],
        )

    async def execute(self, arguments_json: str | None, context: ToolContext | None) -> InvokeResult:
        try:
            request = _parse_arguments(arguments_json)
        except ToolArgumentError as exc:
            return InvokeResult.from_error(str(exc))

        has_data = request["labels"] is not None
        chart_kind = request["kind"] or DEFAULT_CHART_KIND
        if has_data and chart_kind == "pie" and (any(v < 0 for v in request["values"]) or sum(request["values"]) <= 0):
            return InvokeResult.from_error(ERROR_PIE_VALUES)

        if has_data and chart_kind != "card":
            backend, kind = "local", chart_kind
        elif self._remote is not None and not has_data and request["kind"] != "card":
            backend, kind = "remote", "image"
        else:
            backend, kind = "local", "card"

        alt = request["title"] or request["prompt"]
        width, height = _parse_size(request["size"])
        try:
            if backend == "remote":
                assert self._remote is not None  # chosen as the backend only when there is one
                async with asyncio.timeout(REMOTE_TIMEOUT_SECONDS):  # (wait_for can drop a cancel on 3.11)
                    raw = await self._remote(request["prompt"], request["size"])
                data, width, height = await asyncio.to_thread(normalise_png, raw)
            elif kind == "card":
                data, width, height = await asyncio.to_thread(
                    render_card, request["prompt"], request["title"], width, height
                )
            else:
                data, width, height = await asyncio.to_thread(
                    render_chart, kind, alt, request["labels"], request["values"], width, height
                )
            url = await asyncio.to_thread(self._store, data, getattr(context, "session_id", None))
        except Exception as exc:  # noqa: BLE001 - a renderer, provider or storage failure is a tool error
            self._logger.add_exception(
                exc, LOG_TAG, session_id=getattr(context, "session_id", None), backend=backend, kind=kind
            )
            return InvokeResult.from_error(ERROR_FAILED)

        payload = {"url": url, "alt": alt, "kind": kind, "width": width, "height": height, "backend": backend}
        return InvokeResult.create(json.dumps(payload))

    def _store(self, data: bytes, session_id: str | None) -> str:
        """Stored under the session it was drawn for: the media view serves it to whoever may see
        that session, and to nobody else (agents/web/views/media.py)."""
        name = self._storage.save(image_name(session_id, "png"), ContentFile(data))
        return self._storage.url(name)


def _parse_arguments(arguments_json: str | None) -> dict:
    """The checked arguments, with defaults filled in; the first problem raises ToolArgumentError with
    its own message (checked in this order: JSON, names, prompt, title, kind, size, labels/values)."""
    args = _load_arguments(arguments_json)
    prompt = _parse_prompt(args.get("prompt"))
    title = _parse_title(args.get("title"))
    kind = _parse_kind(args.get("kind"))
    size = _parse_size_name(args.get("size"))
    labels, values = _parse_chart_data(args.get("labels"), args.get("values"))
    return {"prompt": prompt, "title": title, "kind": kind, "size": size, "labels": labels, "values": values}


def _load_arguments(arguments_json: str | None) -> dict:
    """The arguments as a JSON object with only the allowed names."""
    if arguments_json is None or not str(arguments_json).strip():
        raise ToolArgumentError(ERROR_PROMPT)
    args = json_object_arguments(arguments_json, ERROR_INVALID_JSON)

    unknown = [key for key in args if key not in _ALLOWED_ARGUMENTS]
    if unknown:
        raise ToolArgumentError(
            ERROR_UNKNOWN_ARGUMENTS.format(
                names=", ".join(repr(k) for k in unknown), allowed=", ".join(repr(k) for k in _ALLOWED_ARGUMENTS)
            )
        )
    return args


def _parse_prompt(prompt: Any) -> str:
    if not isinstance(prompt, str) or not prompt.strip():
        raise ToolArgumentError(ERROR_PROMPT)
    prompt = prompt.strip()
    if len(prompt) > MAX_PROMPT_CHARS:
        raise ToolArgumentError(ERROR_PROMPT_TOO_LONG)
    return prompt


def _parse_title(title: Any) -> str | None:
    if title is not None and not isinstance(title, str):
        raise ToolArgumentError(ERROR_TITLE)
    return (title or "").strip() or None


def _parse_kind(kind: Any) -> str | None:
    if kind is not None and kind not in KINDS:
        raise ToolArgumentError(ERROR_KIND)
    return kind


def _parse_size_name(size: Any) -> str:
    if size is None:
        size = DEFAULT_SIZE
    if size not in SIZES:
        raise ToolArgumentError(ERROR_SIZE)
    return size


def _parse_chart_data(labels: Any, values: Any) -> tuple[list[str] | None, list[float] | None]:
    """Chart labels and values: both or neither, of the same length, at most MAX_POINTS."""
    if labels is not None:
        if not isinstance(labels, list) or not all(_is_label(item) for item in labels):
            raise ToolArgumentError(ERROR_LABELS)
        labels = [str(item) for item in labels]
    if values is not None:
        if not isinstance(values, list) or not all(_is_number(item) for item in values):
            raise ToolArgumentError(ERROR_VALUES)
        values = [float(item) for item in values]
    # Empty arrays carry no data: treat them like absent ones.
    labels = labels or None
    values = values or None
    if labels is not None and values is None:
        raise ToolArgumentError(ERROR_LABELS_WITHOUT_VALUES)
    if values is not None and labels is None:
        raise ToolArgumentError(ERROR_VALUES_WITHOUT_LABELS)
    if labels is not None and values is not None:  # both or neither, checked above
        if len(labels) != len(values):
            raise ToolArgumentError(ERROR_LENGTH_MISMATCH)
        if len(labels) > MAX_POINTS:
            raise ToolArgumentError(ERROR_TOO_MANY_POINTS)
    return labels, values


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_label(value: Any) -> bool:
    # Models often send years or ids as numbers; they read fine as labels.
    return isinstance(value, str) or _is_number(value)


def _parse_size(size: str) -> tuple[int, int]:
    width, _, height = size.partition("x")
    return int(width), int(height)
