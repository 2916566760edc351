"""The built-in offline model: the deterministic planner (rules a–g) and its Chat Completions server."""

from __future__ import annotations

import json

import httpx2
import openai
import pytest

from agents.llm.offline import OFFLINE_MODEL_NAME, OfflineModelApp, plan_reply, proposal_text
from agents.llm.offline import data as offline_data
from agents.llm.offline import planner as offline
from agents.web.markdown import render_markdown
from modes.catalog import AgentModeSummary
from tests.helpers.offline import INTERNAL, SQL, body, user

MODES = [
    AgentModeSummary(
        id="a" * 32,
        key="general",
        display_name="General",
        is_default=True,
        description="All-purpose assistance for everyday team questions, writing, summarising and brainstorming.",
        example_utterances=[
            "Summarise this email thread in three bullet points",
            "Brainstorm names for our new internal newsletter",
        ],
    ),
    AgentModeSummary(
        id="b" * 32,
        key="ddr-authoring",
        display_name="DDR Authoring",
        description="Writing and reviewing design decision records (DDRs) such as TUL-007.",
        example_utterances=[
            "Write a design decision record for our new caching layer",
            "Review this DDR and tell me which testing requirements are missing",
        ],
    ),
    AgentModeSummary(
        id="c" * 32,
        key="data-analysis",
        display_name="Data Analysis",
        description="Answering questions about the team's data with read-only SQL queries, clear summaries and charts.",
        example_utterances=[
            "Show me monthly revenue for the last 12 months as a chart",
            "Which customers placed the most orders last quarter?",
        ],
    ),
]

REVENUE_ROWS = [
    {"month": "2024-01", "revenue": 1200.5},
    {"month": "2024-02", "revenue": 1530.0},
    {"month": "2024-03", "revenue": 980.25},
]


def assistant(text: str) -> dict:
    return {"role": "assistant", "content": text}


def with_results(b: dict, reply, *contents: str) -> dict:
    """The body of the next step: the reply's tool calls and one result for each."""
    calls = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in reply.tool_calls
    ]
    results = [
        {"role": "tool", "tool_call_id": c.id, "content": content}
        for c, content in zip(reply.tool_calls, contents, strict=True)
    ]
    return {
        **b,
        "messages": [
            *b["messages"],
            {"role": "assistant", "content": reply.content or None, "tool_calls": calls},
            *results,
        ],
    }


def only_call(reply):
    assert len(reply.tool_calls) == 1, reply
    call = reply.tool_calls[0]
    return call.name, json.loads(call.arguments)


# --- rule a: answering from tool results ------------------------------------------------------------


async def test_a_list_modes_result_becomes_a_markdown_list():
    b = body(user("what modes are there?"))
    reply = await plan_reply(b, modes=MODES)
    listing = json.dumps(
        {
            "modes": [
                {
                    "id": m.id,
                    "key": m.key,
                    "displayName": m.display_name,
                    "description": m.description,
                    "isDefault": m.is_default,
                }
                for m in MODES
            ]
        }
    )
    final = await plan_reply(with_results(b, reply, listing), modes=MODES)
    assert final.tool_calls == []
    for m in MODES:
        assert f"**{m.display_name}** (`{m.key}`) — {m.description}" in final.content


@pytest.mark.parametrize(
    "branch, extra", [(False, None), (True, "I'll continue in a new data-analysis session as you asked.")]
)
async def test_a_mode_change_success_is_confirmed(branch, extra):
    b = body(
        user("Show monthly revenue as a chart"),
        assistant(proposal_text("Data Analysis", "data-analysis")),
        user("3" if branch else "2"),
    )
    reply = await plan_reply(b, modes=MODES)
    result = {
        "success": True,
        "mode": "data-analysis",
        "branch": branch,
        "reason": "r",
        "previousMode": "general",
        "newMode": "data-analysis",
    }
    final = await plan_reply(with_results(b, reply, json.dumps(result)), modes=MODES)
    assert final.tool_calls == []
    assert final.content.startswith("Switched this session to **data-analysis** mode.")
    assert (extra in final.content) if extra else ("new data-analysis session" not in final.content)


@pytest.mark.parametrize(
    "content",
    [
        "ModeChangeTool failed to change the session mode. Unknown or inactive mode 'x'. Valid modes: general.",
        json.dumps({"error": "Unknown or inactive mode 'x'. Valid modes: general."}),
    ],
)
async def test_a_failed_tool_result_is_relayed_plainly(content):
    b = body(user("hi"), assistant(proposal_text("Data Analysis", "data-analysis")), user("2"))
    reply = await plan_reply(b, modes=MODES)
    final = await plan_reply(with_results(b, reply, content), modes=MODES)
    assert final.tool_calls == []
    assert "Unknown or inactive mode 'x'. Valid modes: general." in final.content
    assert "Switched" not in final.content


@pytest.mark.parametrize(
    "said", ["The user denied this tool call; do not try it again in this turn.", "The user declined the mode change."]
)
async def test_a_call_the_user_denied_is_said_so_not_relayed_as_a_failure(said):
    b = body(user("hi"), assistant(proposal_text("Data Analysis", "data-analysis")), user("2"))
    reply = await plan_reply(b, modes=MODES)
    final = await plan_reply(with_results(b, reply, json.dumps({"error": said})), modes=MODES)
    assert final.content == "You denied `agent_change_mode`, so it did not run."


async def test_a_image_result_is_shown_as_a_markdown_image():
    b = body(user("draw a bar chart: apples 3, pears 5"))
    reply = await plan_reply(b, modes=MODES)
    result = json.dumps({"url": "/media/images/abc.png", "alt": "Fruit", "kind": "bar"})
    final = await plan_reply(with_results(b, reply, result), modes=MODES)
    assert final.tool_calls == []
    assert "![Fruit](/media/images/abc.png)" in final.content


async def test_a_mcp_text_result_is_summarised_and_other_results_say_done():
    b = body(user("what time is it?"), tools=["time__get_current_time"], execution="agent")
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "time__get_current_time", "arguments": "{}"}},
            {"id": "call_2", "type": "function", "function": {"name": "client_lookup", "arguments": "{}"}},
        ],
    }
    b["messages"] += [
        call,
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": json.dumps({"timezone": "UTC", "datetime": "2024-05-01T10:00:00Z"}),
        },
        {"role": "tool", "tool_call_id": "call_2", "content": "42 widgets"},
    ]
    final = await plan_reply(b, modes=MODES)
    assert final.tool_calls == []
    assert "datetime: 2024-05-01T10:00:00Z" in final.content
    assert "Done. 42 widgets" in final.content


async def test_a_list_of_notes_keeps_its_lines_in_the_answer():
    """ "show my notes": the notes ran together in one paragraph ("- a - b")."""
    b = body(user("show my notes"), tools=["notes__list_notes"], execution="agent")
    call = {"id": "call_1", "type": "function", "function": {"name": "notes__list_notes", "arguments": "{}"}}
    notes = "- 2026-11-25 10:00 call the supplier\n- 2026-11-25 11:00 book the room\nthird, not a list item"
    b["messages"] += [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": notes},
    ]
    final = await plan_reply(b, modes=MODES)
    html = str(render_markdown(final.content))
    assert html.count("<li>") == 3, html
    assert "<li>2026-11-25 10:00 call the supplier</li>" in html and "<li>third, not a list item</li>" in html


async def test_a_small_table_from_mcp_is_charted_once_then_answered():
    b = body(user("revenue please"), tools=[*INTERNAL, "sql__query"], mode="data-analysis", execution="agent")
    b["messages"] += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "q", "type": "function", "function": {"name": "sql__query", "arguments": '{"sql": "SELECT 1"}'}}
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "q",
            "content": "| month | revenue |\n|---|---|\n| 2024-01 | 10 |\n| 2024-02 | 14 |",
        },
    ]
    reply = await plan_reply(b, modes=MODES)
    name, args = only_call(reply)
    assert name == "image_gen"
    assert (args["kind"], args["labels"], args["values"]) == ("bar", ["2024-01", "2024-02"], [10, 14])
    final = await plan_reply(
        with_results(b, reply, json.dumps({"url": "/m/c.png", "alt": "Revenue by month", "kind": "bar"})), modes=MODES
    )
    assert final.tool_calls == []
    assert "![Revenue by month](/m/c.png)" in final.content
    assert "| 2024-02 | 14 |" in final.content  # the data behind the chart


async def test_a_same_call_twice_in_a_turn_gives_an_answer_instead():
    # The list_tables result would normally lead to a query, but that exact query already ran.
    b = body(user("revenue by month"), tools=[*SQL], execution="agent")
    sql = offline_data.sql_for("revenue by month")
    b["messages"] += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "q",
                    "type": "function",
                    "function": {"name": "sql__query", "arguments": json.dumps({"sql": sql})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "q", "content": "[]"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "t", "type": "function", "function": {"name": "sql__list_tables", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "t", "content": '["customers", "orders", "products"]'},
    ]
    final = await plan_reply(b, modes=MODES)
    assert final.tool_calls == []
    assert "`customers`" in final.content


# --- rule b: modes question -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["What modes are there?", "which modes can I use", "list modes", "Show me the available modes"]
)
async def test_b_modes_question_calls_list_modes(text):
    reply = await plan_reply(body(user(text)), modes=MODES)
    assert only_call(reply) == ("agent_list_modes", {"includeExamples": False})
    # In Ask the result is the answer: the line that introduces it comes with the call.
    assert reply.content == offline.MODES_INTRO
    agent = await plan_reply(body(user(text), execution="agent"), modes=MODES)
    assert only_call(agent) == ("agent_list_modes", {"includeExamples": False}) and agent.content == ""


async def test_b_not_offered_means_no_call():
    reply = await plan_reply(body(user("what modes are there?"), tools=["agent_change_mode"]), modes=MODES)
    assert reply.tool_calls == []


# --- rule c: the user's choice after a proposal -----------------------------------------------------


def after_proposal(choice: str) -> dict:
    return body(
        user("Show me monthly revenue as a chart"),
        assistant(proposal_text("Data Analysis", "data-analysis")),
        user(choice),
    )


@pytest.mark.parametrize(
    "choice, branch",
    [
        ("2", False),
        ("2)", False),
        ("option 2", False),
        ("switch", False),
        ("3", True),
        ("3)", True),
        ("option 3", True),
        ("new session", True),
    ],
)
async def test_c_choice_2_and_3_call_change_mode(choice, branch):
    reply = await plan_reply(after_proposal(choice), modes=MODES)
    name, args = only_call(reply)
    assert name == "agent_change_mode"
    assert args["mode"] == "data-analysis" and args["branch"] is branch
    assert "Show me monthly revenue as a chart" in args["reason"]
    assert set(args) == {"mode", "branch", "reason"}


@pytest.mark.parametrize("choice", ["1", "1)", "option 1", "stay", "Stay."])
async def test_c_choice_1_stays_without_a_tool_call(choice):
    reply = await plan_reply(after_proposal(choice), modes=MODES)
    assert reply.tool_calls == []
    assert "stay in the current mode" in reply.content and "`general`" in reply.content


async def test_c_declined_mode_is_not_proposed_again():
    b = after_proposal("1")
    b["messages"] += [assistant("Okay."), user("Which customers placed the most orders, monthly revenue?")]
    reply = await plan_reply(b, modes=MODES)
    assert "better served" not in reply.content


# --- rule d: proposing a better mode ----------------------------------------------------------------


async def test_d_better_mode_is_proposed_with_the_three_options():
    reply = await plan_reply(body(user("Show me monthly revenue per customer as a chart")), modes=MODES)
    assert reply.tool_calls == []
    assert reply.content == (
        "It seems like what you are asking for would be better served by **Data Analysis** (`data-analysis`) mode.\n"
        "Would you like to:\n1) Stay in the current mode,\n2) Switch this session to **Data Analysis**, or\n"
        "3) Switch to **Data Analysis** and start a new session for this work?"
    )


async def test_d_no_proposal_in_the_best_mode_or_below_the_threshold():
    in_mode = await plan_reply(body(user("Show me monthly revenue as a chart"), mode="data-analysis"), modes=MODES)
    assert "better served" not in in_mode.content
    weak = await plan_reply(body(user("revenue?")), modes=MODES)  # one shared keyword only
    assert "better served" not in weak.content


async def test_d_catalog_failure_means_no_proposal(monkeypatch):
    from modes import catalog

    async def broken():
        raise RuntimeError("database is down")

    monkeypatch.setattr(catalog.catalog_service, "get_all_modes", broken)
    reply = await plan_reply(body(user("Show me monthly revenue as a chart")))
    assert "better served" not in reply.content


# --- rule e: drawing --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, kind, labels, values, title",
    [
        ("draw a bar chart: apples 3, pears 5", "bar", ["apples", "pears"], [3, 5], "Apples and pears"),
        ("plot the trend Q1=10 Q2=14 Q3=9.5", "line", ["Q1", "Q2", "Q3"], [10, 14, 9.5], "The trend"),
        ("make a pie chart of votes: yes 7, no 2", "pie", ["yes", "no"], [7, 2], "Votes"),
        ("chart north 1 south 2 east 3 west 4", "bar", ["north", "south", "east", "west"], [1, 2, 3, 4], "Chart"),
    ],
)
async def test_e_chart_from_the_message(text, kind, labels, values, title):
    name, args = only_call(await plan_reply(body(user(text)), modes=MODES))
    assert name == "image_gen"
    assert (args["kind"], args["labels"], args["values"], args["title"]) == (kind, labels, values, title)
    assert args["prompt"]


async def test_e_card_without_numbers_and_nothing_when_not_offered():
    name, args = only_call(await plan_reply(body(user("Draw a picture of a lighthouse")), modes=MODES))
    assert (name, args) == ("image_gen", {"prompt": "Draw a picture of a lighthouse", "kind": "card"})
    reply = await plan_reply(body(user("Draw a picture of a lighthouse"), tools=["agent_change_mode"]), modes=MODES)
    assert reply.tool_calls == []


# --- rule f: data questions in Agent execution ------------------------------------------------------


async def test_f_data_question_lists_tables_queries_charts_and_answers():
    b = body(user("Chart revenue by month"), tools=[*INTERNAL, *SQL], mode="data-analysis", execution="agent")
    step1 = await plan_reply(b, modes=MODES)
    assert only_call(step1) == ("sql__list_tables", {})
    b = with_results(b, step1, json.dumps(["customers", "orders", "products"]))
    step2 = await plan_reply(b, modes=MODES)
    assert only_call(step2) == ("sql__query", {"sql": offline_data.REVENUE_BY_MONTH_SQL})
    b = with_results(b, step2, json.dumps(REVENUE_ROWS))
    step3 = await plan_reply(b, modes=MODES)
    name, args = only_call(step3)
    assert name == "image_gen" and args["kind"] == "bar"
    assert args["labels"] == ["2024-01", "2024-02", "2024-03"] and args["values"] == [1200.5, 1530.0, 980.25]
    b = with_results(b, step3, json.dumps({"url": "/media/images/r.png", "alt": "Revenue by month", "kind": "bar"}))
    final = await plan_reply(b, modes=MODES)
    assert final.tool_calls == []
    assert "![Revenue by month](/media/images/r.png)" in final.content
    assert "2024-02" in final.content and offline_data.REVENUE_BY_MONTH_SQL in final.content


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("top customers by revenue", "JOIN customers"),
        ("top products", "JOIN products"),
        ("sales by category", "p.category"),
        ("how many orders per country", "c.country"),
        ("total sales", "strftime('%Y-%m', ordered_at) AS month"),
    ],
)
async def test_f_keyword_sql(text, fragment):
    sql = offline_data.sql_for(text)
    assert fragment in sql and sql.upper().startswith("SELECT")


async def test_f_not_in_ask_execution_and_query_without_list_tables():
    ask = await plan_reply(body(user("revenue by month"), tools=[*INTERNAL, *SQL], mode="data-analysis"), modes=MODES)
    assert ask.tool_calls == []
    agent = await plan_reply(
        body(user("top customers"), tools=["sql__query"], mode="data-analysis", execution="agent"), modes=MODES
    )
    name, args = only_call(agent)
    assert name == "sql__query" and "JOIN customers" in args["sql"]


# --- rule g: help ------------------------------------------------------------------------------------


async def test_g_help_explains_the_offline_model_and_configuration():
    reply = await plan_reply(body(user("hello there")), modes=MODES)
    assert reply.tool_calls == []
    for text in (
        "built-in offline model",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "APTIX_LLM_MODEL",
        "Ollama",
        "list the available modes",
        "draw charts",
        "query the demo database",
    ):
        assert text in reply.content


# --- guardrails and determinism ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "what modes are there?",
        "draw a bar chart: apples 3, pears 5",
        "revenue by month",
        "2",
        "Show me monthly revenue as a chart",
    ],
)
async def test_never_calls_a_tool_that_is_not_offered(text):
    b = body(assistant(proposal_text("Data Analysis", "data-analysis")), user(text), tools=[], execution="agent")
    reply = await plan_reply(b, modes=MODES)
    assert reply.tool_calls == []
    assert reply.content


async def test_same_body_gives_the_same_reply_and_ids():
    b = body(user("Chart revenue by month"), tools=[*INTERNAL, *SQL], mode="data-analysis", execution="agent")
    first, second = await plan_reply(b, modes=MODES), await plan_reply(json.loads(json.dumps(b)), modes=MODES)
    assert first == second
    assert first.tool_calls[0].id.startswith("call_")
    other = await plan_reply(
        body(user("Chart orders by country"), tools=[*INTERNAL, *SQL], mode="data-analysis", execution="agent"),
        modes=MODES,
    )
    assert other.tool_calls[0].id != first.tool_calls[0].id
    assert first.prompt_tokens == offline.prompt_token_estimate(b["messages"], b["tools"])


# --- the ASGI server ---------------------------------------------------------------------------------


def http_client(app=None) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=app or OfflineModelApp(modes=MODES)), base_url="http://offline/v1"
    )


async def test_server_models_non_stream_and_bad_json():
    async with http_client() as client:
        models = (await client.get("/v1/models")).json()
        assert [m["id"] for m in models["data"]] == [OFFLINE_MODEL_NAME]
        response = await client.post("/v1/chat/completions", json=body(user("hello")))
        assert response.status_code == 200
        data = response.json()
        assert data["model"] == OFFLINE_MODEL_NAME and data["choices"][0]["finish_reason"] == "stop"
        assert "offline model" in data["choices"][0]["message"]["content"]
        assert data["usage"]["prompt_tokens"] > 0
        bad = await client.post(
            "/v1/chat/completions", content=b"{not json", headers={"content-type": "application/json"}
        )
        assert bad.status_code == 400
        assert bad.json()["error"]["type"] == "invalid_request_error"


async def test_end_to_end_through_the_openai_sdk_streaming_a_tool_call():
    async with httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=OfflineModelApp()), base_url="http://offline/v1"
    ) as http:
        client = openai.AsyncOpenAI(api_key="offline", base_url="http://offline/v1", http_client=http, max_retries=0)
        b = body(user("What modes are there?"))
        stream = await client.chat.completions.create(
            model=OFFLINE_MODEL_NAME,
            messages=b["messages"],
            tools=b["tools"],
            stream=True,
            stream_options={"include_usage": True},
        )
        calls: dict[int, dict] = {}
        finish, usage = None, None
        async for chunk in stream:
            usage = chunk.usage or usage
            for choice in chunk.choices:
                for part in choice.delta.tool_calls or []:
                    slot = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                    slot["id"] = part.id or slot["id"]
                    slot["name"] += (part.function.name or "") if part.function else ""
                    slot["arguments"] += (part.function.arguments or "") if part.function else ""
                finish = choice.finish_reason or finish
    expected = await plan_reply(b)
    assert finish == "tool_calls"
    assert calls == {
        0: {"id": expected.tool_calls[0].id, "name": "agent_list_modes", "arguments": '{"includeExamples": false}'}
    }
    assert usage is not None and usage.prompt_tokens == expected.prompt_tokens


def test_an_escaped_pipe_stays_inside_its_cell():
    from agents.llm.offline.tables import parse_table

    assert parse_table("| name | n |\n|---|---|\n| a \\| b | 1 |\n| c | 2 |") == (
        ["name", "n"],
        [["a | b", "1"], ["c", "2"]],
    )


@pytest.mark.parametrize(
    "text",
    ["write a short Python function that checks for a palindrome", "Can you give me code to parse a CSV file?"],
)
async def test_a_request_for_code_gets_a_highlighted_example_said_to_be_fixed(text):
    """The tour's "ask for code" step with the offline model: it answered with its help text."""
    reply = await plan_reply(body(user(text)), modes=[])
    assert reply.tool_calls == []
    assert "can't write code to your request" in reply.content
    html = render_markdown(reply.content)
    assert '<span class="code-lang">Python</span>' in html and 'aria-label="Copy code"' in html  # framed, copyable
    assert '<code class="language-python"><span class="k">def</span> <span class="nf">is_palindrome</span>' in html


async def test_notes_and_charts_are_not_code_requests():
    reply = await plan_reply(body(user("draw a bar chart: Jan 120, Feb 135, Mar 150")), modes=[])
    assert "can't write code" not in reply.content


@pytest.mark.parametrize(
    "text",
    ["def f():\n    x = 1\n    return x", "  leading", "a  b   c\n\n  d ", "", "one"],
)
def test_streamed_pieces_join_back_to_the_text_exactly(text):
    """The offline and scripted models stream a reply in word pieces: indentation was lost (a run of
    spaces after a piece's end collapsed to nothing), so the code example showed `return` one space in."""
    from agents.llm.protocol import split_text

    assert "".join(split_text(text)) == text
    assert len(split_text("def f():\n    x = 1\n    return x")) > 1  # still streamed in pieces


async def test_the_code_example_keeps_its_indentation_through_the_stream():
    client = openai.AsyncOpenAI(api_key="x", base_url="http://offline/v1", http_client=http_client())
    stream = await client.chat.completions.create(
        model=OFFLINE_MODEL_NAME, messages=[user("write a Python function")], stream=True
    )
    text = "".join([chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices])
    assert "\n    letters = [c.lower()" in text and "\n    return letters" in text
