"""Local renderers for image_gen: matplotlib charts (bar, line, pie), Pillow title cards, and PNG
normalisation of what a remote provider returns.

Charts use matplotlib's Agg backend through `matplotlib.figure.Figure` (never pyplot, which keeps
global state and is not thread-safe) and are drawn one at a time under `_CHART_LOCK`. Every
renderer returns `(png_bytes, width, height)`; matplotlib and Pillow are imported lazily.
"""

from __future__ import annotations

import hashlib
import io
import textwrap
import threading
from typing import Any

# Card backgrounds: dark enough for white text; chosen from the prompt so a card is reproducible.
_CARD_COLOURS = ((31, 58, 96), (22, 92, 87), (88, 44, 110), (122, 46, 52), (46, 64, 40), (52, 52, 64))
_CHART_COLOURS = ("#3B6EA5", "#E07A3F", "#4E9F6E", "#C2464F", "#7D5BA6", "#8C6D46", "#D17AB5", "#6B7B8C")

# matplotlib's Figure API avoids pyplot's global state; its shared caches (fonts, mathtext) are still
# process-wide, so charts are drawn one at a time. A chart takes a fraction of a second.
_CHART_LOCK = threading.Lock()


def _png_size(data: bytes) -> tuple[int, int]:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return image.size


def normalise_png(raw: Any) -> tuple[bytes, int, int]:
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


def render_chart(kind: str, title: str, labels: list[str], values: list[float], width: int, height: int):  # noqa: PLR0917 - a chart is these six things, called in one place
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
        axes.set_title(
            _escape(_wrap(title, max(24, int(width / (font * 0.75))), 2)),
            fontsize=font * 1.35,
            fontweight="bold",
            pad=font,
        )
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
            for x, y in zip(positions, values, strict=True):
                axes.annotate(
                    _format_number(y),
                    (x, y),
                    textcoords="offset points",
                    xytext=(0, font * 0.6),
                    ha="center",
                    fontsize=font * 0.8,
                )
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
    axes.tick_params(axis="x", labelsize=font * (0.7 if many else 0.85), labelrotation=45 if rotate else 0)
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
        legend = [
            f"{label} ({_format_number(v)}, {100 * v / total:.0f}%)" for label, v in zip(labels, values, strict=True)
        ]
        axes.legend(
            wedges,
            legend,
            loc="center left",
            bbox_to_anchor=(1.0, 0.5),
            fontsize=font * 0.7,
            frameon=False,
            ncols=1 if len(values) <= 18 else 2,
        )
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


def render_card(prompt: str, title: str | None, width: int, height: int):
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
            rest = word
            while draw.textlength(rest, font=font) > max_width and len(rest) > 1:
                cut = len(rest) - 1
                while cut > 1 and draw.textlength(rest[:cut], font=font) > max_width:
                    cut -= 1
                lines.append(rest[:cut])
                rest = rest[cut:]
            current = rest
        if current:
            lines.append(current)
    return lines or [""]


def _fit_lines(draw, lines: list[str], font, size: int, room: float, max_width: int) -> list[str]:  # noqa: PLR0917 - private helper, one caller
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
