"""A whole Agent turn over an uploaded table: the session has a file, so its mode's files tools are
offered; the scripted model calls files_list and files_query and gets the right figure back."""

from __future__ import annotations

import json

from asgiref.sync import sync_to_async

from files.services import file_upload
from tests.helpers import inline_db
from tests.helpers.events import events_of
from tests.helpers.files import csv_plain, media, uploaded  # noqa: F401 - media: autouse fixture

pytestmark = inline_db
GROWTH = (
    "SELECT region, sum(sales) FILTER (quarter = 'Q2') - sum(sales) FILTER (quarter = 'Q1') AS growth "
    "FROM sales GROUP BY region ORDER BY growth DESC LIMIT 1"
)


async def test_an_agent_turn_queries_the_uploaded_table_and_gets_the_figure(make_session, run_turn, model, alice):
    session = await make_session(execution="agent", mode="data-analysis")
    await sync_to_async(file_upload)(owner=alice, uploaded=uploaded("sales.csv", csv_plain()), session=session)
    model.reply("", tool_calls=[("files_list", {})])
    model.reply("", tool_calls=[("files_query", {"sql": GROWTH})])
    model.reply("East grew fastest: +70 from Q1 to Q2.")
    turn = await run_turn(session, "Which region grew fastest?")
    assert turn.status == "completed" and turn.answer.startswith("East grew fastest")
    offered = [t["function"]["name"] for t in model.requests[0]["tools"]]
    assert {"files_list", "files_query", "files_read"} <= set(offered)
    listed, queried = [m["content"] for m in model.last_messages if m["role"] == "tool"]
    assert json.loads(listed)["files"][0]["tables"][0]["name"] == "sales"
    assert queried == "| region | growth |\n|---|---|\n| East | 70.0 |\n\n1 row"
    results = await events_of(turn, "tool.result")
    assert [r["name"] for r in results] == ["files_list", "files_query"]


async def test_a_session_without_files_is_not_offered_the_files_tools(make_session, run_turn, model):
    session = await make_session(execution="agent", mode="data-analysis")
    model.reply("No files here.")
    await run_turn(session, "Which region grew fastest?")
    offered = {t["function"]["name"] for t in model.requests[0].get("tools", [])}
    assert offered and not offered & {"files_list", "files_query", "files_read"}
