"""The offline model asked for a chart of data: without the SQL tools it says what it needs (switch to
Agent, or give it the numbers) instead of drawing a title card; with them it queries first; a picture
that is not of data is still drawn."""

from __future__ import annotations

import pytest

from agents.llm.offline import plan_reply
from tests.helpers.offline import SQL, body, user


@pytest.mark.parametrize(
    ("execution", "tools", "says"),
    [
        ("ask", ["agent_change_mode", "agent_list_modes", "image_gen"], "switch the header to **Agent**"),
        ("agent", ["agent_change_mode", "image_gen"], "the database tools aren't available"),
    ],
)
async def test_a_chart_of_data_without_data_tools_says_what_it_needs(execution, tools, says):
    b = body(user("Chart revenue by month for our orders data"), tools=tools, mode="data-analysis", execution=execution)
    reply = await plan_reply(b, modes=[])
    assert reply.tool_calls == []  # no title card of the request
    assert says in reply.content and "give me the numbers" in reply.content


async def test_a_chart_of_data_with_the_sql_tools_still_queries_and_pictures_are_still_drawn():
    agent = body(user("Chart revenue by month"), tools=["image_gen", *SQL], mode="data-analysis", execution="agent")
    assert [c.name for c in (await plan_reply(agent, modes=[])).tool_calls] == ["sql__list_tables"]
    picture = body(user("Draw a picture of a lighthouse"), mode="data-analysis")
    assert [c.name for c in (await plan_reply(picture, modes=[])).tool_calls] == ["image_gen"]
