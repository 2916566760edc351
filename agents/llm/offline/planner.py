"""The built-in offline model's planner: a deterministic stand-in for a language model.

It serves when no OPENAI_API_KEY / OPENAI_BASE_URL is configured, so the product can be tried and
demonstrated with no model at all. Nothing here is random and nothing touches the network: the
same request body always gives the same reply, tool-call ids included.

`plan_reply(body, modes=None)` reads a Chat Completions request body (`messages`, `tools`) and
decides the next step with a few rules (answer from tool results, list modes, map a choice after a
TUL-007 §4.1 proposal, keep notes, show a code example, propose a better mode, draw a chart, query the
demo database, help);
`OfflineModelApp` (app.py) serves it over the Chat Completions protocol.

This module holds the rules; conversation.py reads the request, modes/proposal.py writes and
recognises the mode proposal, data.py is the demo-database path (rule f), files.py the path over the
session's uploaded files (rule k), knowledge.py the search of a project's documents (rule m), code.py
the code example (rule j), documents.py the DDR draft and its revision (rule l), and tables.py reads tables
in tool results and chart values in the user's message.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re

from modes.proposal import is_proposal, parse_proposal, proposal_text

from ..protocol import PlannedReply, PlannedToolCall, prompt_token_estimate
from .code import code_answer
from .conversation import Conversation, Plan, ToolResult
from .data import TOOL_SEARCH, data_step, describe_mcp_result, is_data_question, is_data_result
from .documents import DOCUMENT_WRITE, describe_document, document_step
from .files import FILES_LIST, FILES_TOOLS, describe_files_result, files_step
from .knowledge import KNOWLEDGE_SEARCH, describe_knowledge_result, found_nothing, knowledge_step
from .tables import chart_args, chart_kind, chart_of, humanise, parse_pairs
from .text import content_text, keywords, parse_json, shorten

logger = logging.getLogger("aptix.offline")

LIST_MODES, CHANGE_MODE, IMAGE_GEN = "agent_list_modes", "agent_change_mode", "image_gen"
MODES_INTRO = "These are the modes you can work in; pick one from the mode badge, or tell me what you want to do:"

_MODES_QUESTION = re.compile(
    r"\b(what|which|list( the| all)?|available|show( me)?( the)?|all( the)?) modes\b|\bmodes (are|do you|can)\b"
    r"|\bmodes\b.*\b(there|available|exist)\b",
    re.I,
)
_DRAW = re.compile(r"\b(draw|chart|plot|graph|picture|image|illustrate|sketch)", re.I)
_ERROR_TEXT = re.compile(r"^\s*(\[?error\]?|failed|exception)\b", re.I)


# --- the planner --------------------------------------------------------------------------------------


async def plan_reply(body: dict, modes: list | None = None) -> PlannedReply:
    """The offline model's next message for a Chat Completions request body.

    `modes` (a list of `AgentModeSummary`) is the active catalog; when None it is loaded from
    `catalog_service` (only if a rule needs it), and a failure to load it counts as "no better mode".
    """
    conv = Conversation.from_body(body if isinstance(body, dict) else {})
    plan = await _plan(conv, modes)
    # Guardrails: only offered tools, and never the same call twice in a turn (answer instead).
    if any(name not in conv.offered or (conv.called(name, args) and not plan.again) for name, args in plan.calls):
        plan = Plan(text=_answer(conv) if conv.results else help_text(conv))
    seed = json.dumps(conv.messages, sort_keys=True, default=str)
    tool_calls = [
        PlannedToolCall(name=name, arguments=json.dumps(args), id=_call_id(seed, index))
        for index, (name, args) in enumerate(plan.calls)
    ]
    return PlannedReply(
        content=plan.text,
        tool_calls=tool_calls,
        prompt_tokens=prompt_token_estimate(conv.messages, body.get("tools") if isinstance(body, dict) else None),
    )


def _call_id(seed: str, index: int) -> str:
    return "call_" + hashlib.sha256(f"{seed}#{index}".encode()).hexdigest()[:24]


async def _plan(conv: Conversation, modes: list | None) -> Plan:
    if conv.noted:  # Aptix asks for the answer now (a limit was reached, or the last reply was empty)
        return Plan(text=_answer(conv) if conv.results else help_text(conv))
    if (loop := _loop_demo(conv)) is not None:  # rule i
        return loop
    if conv.trailing:
        return _after_tools(conv)  # rule a
    if not conv.user_text:
        return Plan(text=help_text(conv))
    if LIST_MODES in conv.offered and _MODES_QUESTION.search(conv.user_text):  # rule b
        # In Ask the call's result is the answer (no model call follows): it comes with the line that
        # introduces it, so the first answer of the tour reads as one, not as a tool's leftover.
        return Plan(
            text=MODES_INTRO if conv.execution == "ask" else "", calls=[(LIST_MODES, {"includeExamples": False})]
        )
    plan = _choice(conv) or _notes(conv) or document_step(conv) or _code(conv)  # c, h, l, j
    plan = plan or knowledge_step(conv) or files_step(conv)  # m, k
    plan = plan or await _propose_mode(conv, modes)  # rule d
    if plan is not None:
        return plan
    data_plan = data_step(conv)
    return _draw(conv, data_plan) or data_plan or Plan(text=help_text(conv))  # rules e, f, g


# rule j: a request for code gets one fixed example, said to be one


def _code(conv: Conversation) -> Plan | None:
    answer = code_answer(conv.user_text)
    return Plan(text=answer) if answer is not None else None


# rule e: draw what the user asks for


def _draw(conv: Conversation, data_plan: Plan | None) -> Plan | None:
    """A chart of the message's own numbers, or a picture; None when a data question should query first."""
    text = conv.user_text
    if IMAGE_GEN not in conv.offered or not _DRAW.search(text):
        return None
    pairs = parse_pairs(text)
    if len(pairs) >= 2:
        return Plan.call(IMAGE_GEN, chart_args(text, pairs, chart_kind(text)))
    if not is_data_question(text):  # a picture of something, not of data
        return Plan.call(IMAGE_GEN, {"prompt": text[:4000], "kind": "card"})
    if data_plan is None:  # a chart of data this turn cannot read: say what it takes, draw no title card
        return Plan(text=need_data_text(conv))
    return None  # "chart revenue by month" (Agent, SQL tools offered) queries first


def need_data_text(conv: Conversation) -> str:
    """The answer to a chart of data when no data tools are offered: how to get one."""
    if conv.execution == "agent":
        where = (
            "the database tools aren't available in this turn (this mode's tool policy or the *Tools* "
            "panel leaves out the `sql` server)"
        )
        how = "switch to a mode that offers them, such as Data Analysis, or turn them on in *Tools*"
    else:
        where = "this turn runs in **Ask**, which offers no database tools"
        how = "switch the header to **Agent** (in a mode that offers the `sql` tools, such as Data Analysis)"
    return (
        f"I can't chart that yet: the numbers are in the database, and {where}. To chart it from the "
        f"data, {how} and ask again. Or give me the numbers, e.g. *\"draw a bar chart: Jan 120, Feb 135, "
        'Mar 150"*, and I\'ll chart them now.'
    )


# rule i: the looping demo. "Keep checking the modes" makes this model call agent_list_modes again and
# again, as real models sometimes do: Aptix gives it the earlier result, stops the loop after
# APTIX_MAX_REPEATS, and asks once more, without tools, for the answer.

_LOOP = re.compile(r"\bkeep (checking|calling|listing)\b", re.I)


def _loop_demo(conv: Conversation) -> Plan | None:
    if LIST_MODES not in conv.offered or not _LOOP.search(conv.user_text) or conv.execution != "agent":
        return None
    plan = Plan.call(LIST_MODES, {"includeExamples": False})
    plan.again = True
    return plan


# rule h: notes (the demo notes MCP server: add_note writes, so the user approves it first)

_ADD_NOTE = re.compile(
    r"^\s*(?:please\s+)?(?:(?:add|take|make|write)\s+(?:a\s+)?note\b(?:\s+that)?\s*[:,-]?|note\s*:|note\s+that\b)"
    r"\s*(.+)$",
    re.I | re.S,
)
_LIST_NOTES = re.compile(r"\b(show|list|read|what are)\b.*\bnotes\b", re.I)


def _notes(conv: Conversation) -> Plan | None:
    add, read = conv.mcp_tool("add_note"), conv.mcp_tool("list_notes")
    if read and _LIST_NOTES.search(conv.user_text):
        return Plan.call(read, {})
    found = _ADD_NOTE.match(conv.user_text)
    if add and found and found.group(1).strip():
        return Plan.call(add, {"text": shorten(found.group(1).strip(), 2000)})
    return None


# rule c: the user's choice after a TUL-007 §4.1 proposal


def parse_choice(text: str) -> int | None:
    """1 (stay), 2 (switch this session), 3 (switch and start a new session) or None."""
    tokens = re.sub(r"[^a-z0-9 ]+", " ", text.lower()).split()
    t = " ".join(w for w in tokens if w not in {"option", "choice", "number", "please", "i", "choose", "pick", "ok"})
    if digit := re.fullmatch(r"([123])( .*)?", t):  # "2", "2) switch this session", "option 3"
        return int(digit.group(1))
    if t in {"1", "one", "stay", "stay here", "keep", "no", "stay in the current mode", "current mode", "first"}:
        return 1
    if t in {"3", "three", "new session", "branch", "third"} or (t.startswith("switch") and "new session" in t):
        return 3
    if t in {"2", "two", "switch", "yes", "second", "switch this session", "switch session"} or t.startswith(
        "switch this session"
    ):
        return 2
    return None


def _choice(conv: Conversation) -> Plan | None:
    proposed = parse_proposal(conv.previous_assistant)
    choice = parse_choice(conv.user_text)
    if proposed is None or choice is None:
        return None
    display, key = proposed
    if choice == 1:
        where = f" (`{conv.mode}`)" if conv.mode else ""
        return Plan(
            text=f"Okay, we'll stay in the current mode{where}. I'll keep going here: tell me what you need next."
        )
    if CHANGE_MODE not in conv.offered:
        return Plan(text=f"I can't change the mode from here. Pick **{display}** in the session's mode menu.")
    request = shorten(conv.previous_user or "this work", 120)
    reason = f"The user asked \"{request}\", which fits {display} mode better; the user chose option {choice}."
    return Plan.call(CHANGE_MODE, {"mode": key, "branch": choice == 3, "reason": reason})


# rule d: propose a better mode


def score_modes(text: str, modes: list) -> dict[str, int]:
    """Shared meaningful words between `text` and each mode's example utterances + description."""
    words = keywords(text)
    scores: dict[str, int] = {}
    for mode in modes:
        corpus = " ".join([*(getattr(mode, "example_utterances", None) or []), getattr(mode, "description", "") or ""])
        scores[mode.key] = len(words & keywords(corpus))
    return scores


def _declined(conv: Conversation) -> set[str]:
    """Modes the user already turned down (chose "stay") in this conversation: don't nag."""
    declined: set[str] = set()
    proposal = None
    for message in conv.messages:
        content = content_text(message.get("content"))
        if message.get("role") == "assistant" and is_proposal(content):
            proposal = parse_proposal(content)
        elif message.get("role") == "user" and proposal is not None:
            if parse_choice(content) == 1:
                declined.add(proposal[1])
            proposal = None
    return declined


async def _propose_mode(conv: Conversation, modes: list | None) -> Plan | None:
    if modes is None:
        try:
            from modes.catalog import ALL_TEAMS, catalog_service, catalog_team

            team = catalog_team.get()  # the running turn's team: propose only what it may use
            modes = await (
                catalog_service.get_all_modes() if team is ALL_TEAMS else catalog_service.get_modes_for_team(team)
            )
        except Exception:  # noqa: BLE001 - no catalog means no proposal, never a failed reply
            return None
    try:
        scores = score_modes(conv.user_text, modes or [])
    except Exception:  # noqa: BLE001 - a malformed summary is "no match" too
        return None
    current = scores.get(conv.mode or "", 0)
    declined = _declined(conv)
    best = None
    for mode in modes or []:
        if mode.key == conv.mode or mode.key in declined:
            continue
        score = scores[mode.key]
        if score >= 2 and score > current and (best is None or score > scores[best.key]):
            best = mode
    if best is None:
        return None
    return Plan(text=proposal_text(best.display_name, best.key))


# rule a: after tool results


def _after_tools(conv: Conversation) -> Plan:
    searched = any(r.name.endswith("__list_tables") or r.name == TOOL_SEARCH for r in conv.trailing)
    if searched and (step := data_step(conv)):  # tables listed, or the database tools found: query
        return step
    if any(r.name == FILES_LIST for r in conv.trailing) and (step := files_step(conv)):  # files listed: read
        return step
    searched_knowledge = [r for r in conv.trailing if r.name == KNOWLEDGE_SEARCH]
    if searched_knowledge and found_nothing(searched_knowledge[-1]) and (step := files_step(conv) or data_step(conv)):
        return step  # nothing in the project's documents: the session's files or the database may answer
    if IMAGE_GEN in conv.offered and not conv.called(IMAGE_GEN):
        for result in conv.trailing:
            if is_data_result(result) and tool_error(result) is None and (chart := chart_of(result.content)):
                labels, values, label_col, value_col = chart
                title = f"{humanise(value_col).capitalize()} by {humanise(label_col)}"
                kind = "line" if re.search(r"\b(line|trend)", conv.user_text, re.I) else "bar"
                return Plan.call(
                    IMAGE_GEN,
                    {
                        "prompt": f"{title} ({conv.user_text})"[:4000],
                        "kind": kind,
                        "title": title,
                        "labels": labels,
                        "values": values,
                    },
                )
    return Plan(text=_answer(conv))


def _answer(conv: Conversation) -> str:
    parts: list[str] = []
    trailing = conv.trailing or conv.results[-1:]
    if any(r.name == IMAGE_GEN for r in trailing):  # the DB → chart path: show the data behind the chart
        earlier = [r for r in conv.results if r not in trailing and is_data_result(r)]
        parts += [_describe(r) for r in earlier[-1:] if tool_error(r) is None]
    parts += [_describe(r) for r in trailing]
    return "\n\n".join(p for p in parts if p) or "Done."


def tool_error(result: ToolResult) -> str | None:
    """The error a tool reported, or None when it succeeded."""
    data = parse_json(result.content)
    if isinstance(data, dict):
        error = data.get("error")
        if error:
            return str(error.get("message") or error) if isinstance(error, dict) else str(error)
        if data.get("success") is False or data.get("isError") is True or data.get("is_error") is True:
            return str(data.get("message") or data.get("content") or result.content)
    text = result.content.strip()
    if _ERROR_TEXT.match(text):
        return re.sub(r"^\s*\[?error\]?\s*[:\-]?\s*", "", text, flags=re.I) or text
    expected = {LIST_MODES: "modes", CHANGE_MODE: "success", IMAGE_GEN: "url"}.get(result.name)
    if expected and not (isinstance(data, dict) and data.get(expected) not in (None, False, "")):
        return text or f"{result.name} returned nothing."  # internal tools report errors as plain text
    return None


def _describe(result: ToolResult) -> str:
    error = tool_error(result)
    if error is not None and re.search(r"\buser (denied|declined)\b", error, re.I):  # the approvals' word: no failure
        return f"You denied `{result.name}`, so it did not run."
    if error is not None:
        return f"Sorry, `{result.name}` failed: {error}"
    data = parse_json(result.content)
    if result.name == LIST_MODES:
        lines = [
            f"- **{m.get('displayName') or m.get('key')}** (`{m.get('key')}`) — {m.get('description') or ''}".rstrip(
                " —"
            )
            for m in data["modes"]
            if isinstance(m, dict)
        ]
        return "Here are the available modes:\n\n" + "\n".join(lines)
    if result.name == CHANGE_MODE:
        new = data.get("newMode") or data.get("mode")
        text = f"Switched this session to **{new}** mode."
        return text + (f" I'll continue in a new {new} session as you asked." if data.get("branch") else "")
    if result.name == IMAGE_GEN:
        alt = str(data.get("alt") or result.arguments.get("title") or "image").replace("]", ")").replace("[", "(")
        what = "chart" if data.get("kind") in ("bar", "line", "pie") else "image"
        return f"Here is the {what} you asked for:\n\n![{alt}]({data['url']})"
    if result.name in FILES_TOOLS:
        return describe_files_result(result)
    if result.name == KNOWLEDGE_SEARCH:
        return describe_knowledge_result(result)
    if result.name == DOCUMENT_WRITE and isinstance(data, dict):
        return describe_document(data)
    if "__" in result.name:
        return describe_mcp_result(result)
    return "Done. " + shorten(result.content.strip(), 500)


# rule g


def help_text(conv: Conversation) -> str:
    can = []
    if LIST_MODES in conv.offered:
        can.append("list the available modes (ask *\"what modes are there?\"*)")
    can.append("propose a better mode when your request fits one, and switch after you agree")
    if IMAGE_GEN in conv.offered:
        can.append("draw charts (try *\"draw a bar chart: apples 3, pears 5\"*)")
    if conv.mcp_tool("add_note"):
        can.append("keep notes (try *\"note: call the supplier on Monday\"*; you approve each write)")
    if FILES_LIST in conv.offered:
        can.append("answer questions about this session's files (try *\"which region grew fastest?\"*)")
    if conv.execution == "agent" and conv.mcp_tool("query"):
        can.append("query the demo database (try *\"revenue by month\"* or *\"top customers\"*)")
    else:
        can.append("in Agent execution, query the demo database in a mode that offers the SQL tools")
    return (
        "I'm Aptix's **built-in offline model**: a deterministic stand-in that runs when no language "
        "model is configured, so I can't hold a real conversation. Here I can:\n\n"
        + "\n".join(f"- {item}" for item in can)
        + "\n\nTo use a real model, set `OPENAI_API_KEY` (and `OPENAI_BASE_URL` for a compatible server "
        "such as Ollama or vLLM) and `APTIX_LLM_MODEL`, then restart Aptix."
    )
