"""image_gen: draw a chart, a title card or (through an injected provider) an illustration.

Local rendering needs no network: charts with matplotlib's Agg backend through
`matplotlib.figure.Figure` (never pyplot, which keeps global state and is not thread-safe), cards
with Pillow. A real image provider is injected by the caller as `remote(prompt, size) -> PNG bytes`;
this package never imports `agents`. The image is saved through a Django storage as
`images/<32-hex>.png` and the tool returns its URL.
"""
from __future__ import annotations

import asyncio
import hashlib
import io
import json
import math
import re
import textwrap
import threading
import uuid
from typing import Any, Awaitable, Callable, ClassVar

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from ..base import InvokeResult, ToolContext, function_schema

SAFE_ID = re.compile(r"[0-9a-f]{32}")  # a session id, as a folder name

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

# Card backgrounds: dark enough for white text; chosen from the prompt so a card is reproducible.
_CARD_COLOURS = ((31, 58, 96), (22, 92, 87), (88, 44, 110), (122, 46, 52), (46, 64, 40), (52, 52, 64))
_CHART_COLOURS = ("#3B6EA5", "#E07A3F", "#4E9F6E", "#C2464F", "#7D5BA6", "#8C6D46", "#D17AB5", "#6B7B8C")

# matplotlib's Figure API avoids pyplot's global state; its shared caches (fonts, mathtext) are still
# process-wide, so charts are drawn one at a time. A chart takes a fraction of a second.
_CHART_LOCK = threading.Lock()

RemoteRenderer = Callable[[str, str], Awaitable[bytes]]


class ImageGenTool:
    TOOL_NAME: ClassVar[str] = "image_gen"
    TOOL_USAGE_METADATA: ClassVar[str] = (
        "Use this tool when the user asks you to draw, illustrate, chart or plot something, or asks for "
        "a picture, diagram-like card or graph. For charts (kind 'bar', 'line' or 'pie') always give "
        "'labels' and 'values' of the same length (at most 50 points, numbers only) plus a short "
        "'title'; take the numbers from the conversation or from data you already have and never "
        "invent them. For an illustration or title card give a clear, descriptive 'prompt' (kind "
        "'card' forces a simple text card). The result is a JSON object with the image 'url' and "
        "'alt' text: show the image to the user with that URL. Do not call it for plain text "
        "answers, for tables the user can read as text, or when the user did not ask for a visual."
    )
    SCHEMA_DESCRIPTION: ClassVar[str] = (
        "Creates an image and returns its URL: a bar, line or pie chart from 'labels' and 'values', "
        "or an illustration/title card from 'prompt'. Call only when the user wants a visual."
    )
    is_tool_fully_executed_on_server = True

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
                    "description": "What to draw, or for a chart what it shows (used as the title "
                    "when 'title' is omitted).",
                },
                "kind": {
                    "type": "string",
                    "enum": list(KINDS),
                    "description": "Chart type when 'labels' and 'values' are given (default 'bar'); "
                    "'card' makes a simple text card from the prompt.",
                },
                "title": {"type": "string", "description": "Short title shown on the image and used as alt text."},
                "labels": {
                    "type": "array",
                    "items": {"type": "string"},
                    "maxItems": MAX_POINTS,
                    "description": "Category or x-axis labels for a chart, one per value.",
                },
                "values": {
                    "type": "array",
                    "items": {"type": "number"},
                    "maxItems": MAX_POINTS,
                    "description": "Numbers for a chart, one per label.",
                },
                "size": {
                    "type": "string",
                    "enum": list(SIZES),
                    "description": f"Image size in pixels, width x height (default {DEFAULT_SIZE}).",
                },
            },
            required=["prompt"],
        )

    async def execute(self, arguments_json: str | None, context: ToolContext | None) -> InvokeResult:
        try:
            request = _parse_arguments(arguments_json)
        except _ArgumentError as exc:
            return InvokeResult.from_error(str(exc))

        has_data = request["labels"] is not None
        chart_kind = request["kind"] or DEFAULT_CHART_KIND
        if has_data and chart_kind == "pie" and (
            any(v < 0 for v in request["values"]) or sum(request["values"]) <= 0
        ):
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
                raw = await asyncio.wait_for(
                    self._remote(request["prompt"], request["size"]), timeout=REMOTE_TIMEOUT_SECONDS
                )
                data, width, height = await asyncio.to_thread(_normalise_png, raw)
            elif kind == "card":
                data, width, height = await asyncio.to_thread(
                    _render_card, request["prompt"], request["title"], width, height
                )
            else:
                data, width, height = await asyncio.to_thread(
                    _render_chart, kind, alt, request["labels"], request["values"], width, height
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
        that session, and to nobody else (aptix/views.py)."""
        folder = f"images/{session_id}" if session_id and SAFE_ID.fullmatch(str(session_id)) else "images"
        name = self._storage.save(f"{folder}/{uuid.uuid4().hex}.png", ContentFile(data))
        return self._storage.url(name)


class _ArgumentError(ValueError):
    """An argument problem whose message goes back to the model as is."""


def _parse_arguments(arguments_json: str | None) -> dict:
    if arguments_json is None or not str(arguments_json).strip():
        raise _ArgumentError(ERROR_PROMPT)
    try:
        args = json.loads(arguments_json)
    except (TypeError, ValueError):
        raise _ArgumentError(ERROR_INVALID_JSON) from None
    if not isinstance(args, dict):
        raise _ArgumentError(ERROR_INVALID_JSON)

    unknown = [key for key in args if key not in _ALLOWED_ARGUMENTS]
    if unknown:
        raise _ArgumentError(
            ERROR_UNKNOWN_ARGUMENTS.format(
                names=", ".join(repr(k) for k in unknown), allowed=", ".join(repr(k) for k in _ALLOWED_ARGUMENTS)
            )
        )

    prompt = args.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise _ArgumentError(ERROR_PROMPT)
    prompt = prompt.strip()
    if len(prompt) > MAX_PROMPT_CHARS:
        raise _ArgumentError(ERROR_PROMPT_TOO_LONG)

    title = args.get("title")
    if title is not None and not isinstance(title, str):
        raise _ArgumentError(ERROR_TITLE)
    title = (title or "").strip() or None

    kind = args.get("kind")
    if kind is not None and kind not in KINDS:
        raise _ArgumentError(ERROR_KIND)

    size = args.get("size")
    if size is None:
        size = DEFAULT_SIZE
    if size not in SIZES:
        raise _ArgumentError(ERROR_SIZE)

    labels = args.get("labels")
    values = args.get("values")
    if labels is not None:
        if not isinstance(labels, list) or not all(_is_label(item) for item in labels):
            raise _ArgumentError(ERROR_LABELS)
        labels = [str(item) for item in labels]
    if values is not None:
        if not isinstance(values, list) or not all(_is_number(item) for item in values):
            raise _ArgumentError(ERROR_VALUES)
        values = [float(item) for item in values]
    # Empty arrays carry no data: treat them like absent ones.
    labels = labels or None
    values = values or None
    if labels is not None and values is None:
        raise _ArgumentError(ERROR_LABELS_WITHOUT_VALUES)
    if values is not None and labels is None:
        raise _ArgumentError(ERROR_VALUES_WITHOUT_LABELS)
    if labels is not None:
        if len(labels) != len(values):
            raise _ArgumentError(ERROR_LENGTH_MISMATCH)
        if len(labels) > MAX_POINTS:
            raise _ArgumentError(ERROR_TOO_MANY_POINTS)

    return {"prompt": prompt, "title": title, "kind": kind, "size": size, "labels": labels, "values": values}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_label(value: Any) -> bool:
    # Models often send years or ids as numbers; they read fine as labels.
    return isinstance(value, str) or _is_number(value)


def _parse_size(size: str) -> tuple[int, int]:
    width, _, height = size.partition("x")
    return int(width), int(height)


def _png_size(data: bytes) -> tuple[int, int]:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return image.size


def _normalise_png(raw: Any) -> tuple[bytes, int, int]:
    """Check what a provider returned is an image, re-encoding it as PNG when it is not one already."""
    from PIL import Image

    if not isinstance(raw, (bytes, bytearray, memoryview)) or not len(raw):
        raise ValueError(f"the image provider returned {type(raw).__name__}, not image bytes")
    data = bytes(raw)
    with Image.open(io.BytesIO(data)) as image:
        image.load()
        if image.format == "PNG":
            return data, image.width, image.height
        has_alpha = image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info
        converted = image.convert("RGBA" if has_alpha else "RGB")
    buffer = io.BytesIO()
    converted.save(buffer, format="PNG")
    return buffer.getvalue(), converted.width, converted.height


# --- charts (matplotlib, Agg, no pyplot) ---------------------------------------------------------


def _render_chart(kind: str, title: str, labels: list[str], values: list[float], width: int, height: int):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    dpi = 100
    font = max(8.0, min(13.0, width / 80))
    with _CHART_LOCK:
        figure = Figure(figsize=(width / dpi, height / dpi), dpi=dpi, layout="constrained", facecolor="white")
        FigureCanvasAgg(figure)
        axes = figure.add_subplot()
        shown = [_escape(_shorten(label, 40)) for label in labels]
        if kind == "pie":
            _draw_pie(axes, shown, values, font)
        else:
            _draw_xy(axes, kind, shown, values, font)
        axes.set_title(_escape(_wrap(title, max(24, int(width / (font * 0.75))), 2)), fontsize=font * 1.35,
                       fontweight="bold", pad=font)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=dpi, facecolor="white")
    data = buffer.getvalue()
    return (data, *_png_size(data))


def _draw_xy(axes, kind: str, labels: list[str], values: list[float], font: float) -> None:
    positions = list(range(len(values)))
    many = len(values) > 20
    if kind == "line":
        axes.plot(positions, values, color=_CHART_COLOURS[0], linewidth=2, marker="o" if not many else None)
        if not many:
            for x, y in zip(positions, values):
                axes.annotate(_format_number(y), (x, y), textcoords="offset points", xytext=(0, font * 0.6),
                              ha="center", fontsize=font * 0.8)
        axes.margins(x=0.04, y=0.15)
        if min(values) >= 0 and axes.get_ylim()[0] < 0:
            axes.set_ylim(bottom=0)  # no negative axis under data that has none
    else:
        bars = axes.bar(positions, values, color=_CHART_COLOURS[0], width=0.7)
        if not many:
            axes.bar_label(bars, labels=[_format_number(v) for v in values], padding=2, fontsize=font * 0.8)
        axes.margins(y=0.12)
        if any(v < 0 for v in values):
            axes.axhline(0, color="#555555", linewidth=0.8)
    longest = max((len(label) for label in labels), default=0)
    rotate = len(labels) > 8 or (len(labels) > 4 and longest > 10)
    axes.set_xticks(positions, [_wrap(label, 16, 2) if not rotate else label for label in labels])
    axes.tick_params(axis="x", labelsize=font * (0.7 if many else 0.85),
                     labelrotation=45 if rotate else 0)
    if rotate:
        for tick in axes.get_xticklabels():
            tick.set_horizontalalignment("right")
            tick.set_rotation_mode("anchor")
    axes.tick_params(axis="y", labelsize=font * 0.85)
    axes.yaxis.grid(True, color="#DDDDDD", linewidth=0.8)
    axes.set_axisbelow(True)
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)


def _draw_pie(axes, labels: list[str], values: list[float], font: float) -> None:
    colours = [_CHART_COLOURS[i % len(_CHART_COLOURS)] for i in range(len(values))]
    total = sum(values)
    crowded = len(values) > 8

    def percent(pct: float) -> str:
        return f"{pct:.0f}%" if pct >= 3 else ""

    wedges, _texts, percents = axes.pie(
        values,
        labels=None if crowded else labels,
        colors=colours,
        autopct=percent,
        pctdistance=0.75,
        startangle=90,
        counterclock=False,
        wedgeprops={"linewidth": 1, "edgecolor": "white"},
        textprops={"fontsize": font * 0.85},
    )
    for text in percents:
        text.set_color("white")
    if crowded:
        legend = [f"{label} ({_format_number(v)}, {100 * v / total:.0f}%)" for label, v in zip(labels, values)]
        axes.legend(wedges, legend, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=font * 0.7,
                    frameon=False, ncols=1 if len(values) <= 18 else 2)
    axes.set_aspect("equal")


def _format_number(value: float) -> str:
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    if abs(value) >= 100:
        return f"{value:,.1f}"
    return f"{value:.3g}"


def _escape(text: str) -> str:
    # A '$' would start matplotlib mathtext; user text is always literal.
    return text.replace("$", r"\$")


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _wrap(text: str, width: int, max_lines: int) -> str:
    lines = textwrap.wrap(" ".join(text.split()), width=width) or [""]
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1][: width - 1].rstrip() + "…"
    return "\n".join(lines)


# --- cards (Pillow) ------------------------------------------------------------------------------


def _render_card(prompt: str, title: str | None, width: int, height: int):
    from PIL import Image, ImageDraw, ImageFont

    digest = hashlib.sha256((title or prompt).encode("utf-8")).digest()
    background = _CARD_COLOURS[digest[0] % len(_CARD_COLOURS)]
    accent = tuple(min(255, c + 70) for c in background)
    image = Image.new("RGB", (width, height), background)
    draw = ImageDraw.Draw(image)

    margin = max(24, width // 14)
    band = max(6, height // 60)
    draw.rectangle((0, 0, width, band), fill=accent)
    draw.rectangle((margin, height - margin - band // 2, margin + width // 6, height - margin), fill=accent)
    text_width = width - 2 * margin
    top, bottom = margin + band, height - margin - 2 * band

    heading, body = (title, prompt) if title else (prompt, None)
    heading_size = max(18, width // 16)
    while True:
        heading_font = ImageFont.load_default(size=heading_size)
        heading_lines = _wrap_pixels(draw, heading, heading_font, text_width)
        heading_height = _block_height(heading_lines, heading_size)
        if heading_height <= (bottom - top) * (0.45 if body else 1.0) or heading_size <= 16:
            break
        heading_size -= 2
    room = (bottom - top) * (0.45 if body else 1.0)
    heading_lines = _fit_lines(draw, heading_lines, heading_font, heading_size, room, text_width)
    block = _block_height(heading_lines, heading_size)

    body_lines: list[str] = []
    body_size = max(14, width // 30)
    body_font = ImageFont.load_default(size=body_size)
    if body:
        gap = heading_size // 2
        body_room = bottom - top - block - gap
        body_lines = _fit_lines(
            draw, _wrap_pixels(draw, body, body_font, text_width), body_font, body_size, body_room, text_width
        )
        block += gap + _block_height(body_lines, body_size)

    y = top + max(0, (bottom - top - block) // 2)  # the text block sits in the middle of the card
    for line in heading_lines:
        draw.text((margin, y), line, font=heading_font, fill="white")
        y += int(heading_size * 1.25)
    if body_lines:
        y += heading_size // 2
        for line in body_lines:
            draw.text((margin, y), line, font=body_font, fill=(235, 238, 245))
            y += int(body_size * 1.25)

    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue(), width, height


def _block_height(lines: list[str], size: int) -> int:
    return int(len(lines) * size * 1.25)


def _wrap_pixels(draw, text: str, font, max_width: int) -> list[str]:
    """Greedy word wrap by rendered width; words longer than a line are split."""
    lines: list[str] = []
    for paragraph in text.splitlines() or [""]:
        current = ""
        for word in paragraph.split():
            candidate = f"{current} {word}" if current else word
            if draw.textlength(candidate, font=font) <= max_width:
                current = candidate
                continue
            if current:
                lines.append(current)
            while draw.textlength(word, font=font) > max_width and len(word) > 1:
                cut = len(word) - 1
                while cut > 1 and draw.textlength(word[:cut], font=font) > max_width:
                    cut -= 1
                lines.append(word[:cut])
                word = word[cut:]
            current = word
        if current:
            lines.append(current)
    return lines or [""]


def _fit_lines(draw, lines: list[str], font, size: int, room: float, max_width: int) -> list[str]:
    """Keep the lines that fit in `room` pixels, ending with an ellipsis when text was cut."""
    fit = max(1, int(room // (size * 1.25)))
    if len(lines) <= fit:
        return lines
    kept = lines[:fit]
    last = kept[-1]
    while last and draw.textlength(last + " …", font=font) > max_width:
        last = last[:-1]
    kept[-1] = last.rstrip() + " …"
    return kept
