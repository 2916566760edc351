"""The admin pages auditors read keep to the Content-Security-Policy: `style-src 'self'` refuses inline
style attributes, so a page that uses them shows unstyled and reports a violation for each one."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from asgiref.sync import sync_to_async
from django.conf import settings
from django.urls import reverse

from tests.helpers import inline_db

pytestmark = inline_db


class _Styles(HTMLParser):
    """The tags of a page that carry a style attribute, and its stylesheets."""

    def __init__(self) -> None:
        super().__init__()
        self.styled: list[str] = []
        self.sheets: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if "style" in values:
            self.styled.append(f"<{tag} style={values['style']!r}>")
        if tag == "link" and values.get("rel") == "stylesheet":
            self.sheets.append(values.get("href") or "")


async def test_the_turn_trace_has_no_inline_style(client, auditor, password, make_session, run_turn, model):
    session = await make_session(execution="agent")
    model.reply("Looking.", tool_calls=[("agent_list_modes", "{}")])
    model.reply("Done.")
    turn = await run_turn(session, "Which modes are there?")
    await sync_to_async(client.login)(username=auditor.username, password=password)
    response = await sync_to_async(client.get)(reverse("admin:agents_turn_change", args=[turn.pk]))
    assert response.status_code == 200
    page = _Styles()
    page.feed(response.content.decode())
    assert "Step 1: " in response.content.decode()  # the trace is on the page
    assert page.styled == []
    assert any(sheet.endswith("css/admin.css") for sheet in page.sheets)  # where its pre-wrap comes from
    # The trace's long lines (a 12,000 px system prompt) wrap by the stylesheet's class.
    assert '<div class="aptix-trace">' in response.content.decode()
    assert '<pre class="aptix-wrap">' in response.content.decode()
    sheet = (settings.BASE_DIR / "static" / "css" / "admin.css").read_text()
    assert re.search(r"\.aptix-trace pre\.aptix-wrap \{[^}]*white-space: pre-wrap;", sheet)
