"""An MCP server whose tools ask the user (elicitation), for the elicitation tests: over stdio, or over
streamable HTTP with `ask_server.py --http <fd>` (serving on the listening socket inherited as file
descriptor <fd>). On a 2026-07-28 connection a tool asks by answering the call with an
`InputRequiredResult` and reads the answer when the client calls again (multi round-trip). One tool
fails with URLElicitationRequired (-32042) until the user has been sent to its page."""

from __future__ import annotations

import socket
import sys

import mcp_types as types
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import UrlElicitationRequiredError
from mcp_types import ToolAnnotations

server = MCPServer("ask")

PROFILE = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "minLength": 1},
        "age": {"type": "integer", "title": "Age", "minimum": 0},
        "subscribe": {"type": "boolean", "title": "Subscribe"},
        "colour": {"type": "string", "title": "Colour", "enum": ["red", "green"], "enumNames": ["Red", "Green"]},
    },
    "required": ["name"],
}


def _asked(ctx: Context, request: types.ElicitRequest) -> types.ElicitResult | types.InputRequiredResult:
    responses = ctx.input_responses or {}
    answer = responses.get("ask")
    if answer is None:
        return types.InputRequiredResult(input_requests={"ask": request}, request_state="asked")
    return answer if isinstance(answer, types.ElicitResult) else types.ElicitResult.model_validate(answer)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))  # runs without an approval first
def profile(ctx: Context) -> str | types.InputRequiredResult:
    """Ask the user for a profile (a form), then say what was answered."""
    request = types.ElicitRequest(
        params=types.ElicitRequestFormParams(message="Tell me about you", requested_schema=PROFILE)
    )
    got = _asked(ctx, request)
    if isinstance(got, types.InputRequiredResult):
        return got
    return f"{got.action} {got.content}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def sign_in(ctx: Context) -> str | types.InputRequiredResult:
    """Send the user to a page (URL mode), then say what was answered."""
    request = types.ElicitRequest(
        params=types.ElicitRequestURLParams(
            message="Sign in at the bank", url="https://bank.example/authorize", elicitation_id="e-1"
        )
    )
    got = _asked(ctx, request)
    if isinstance(got, types.InputRequiredResult):
        return got
    return f"{got.action} {got.content}"


LINKED: set[str] = set()  # accounts whose page the user was sent to once already


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def link_account(account: str) -> str:
    """Use an account the user must first link on a page: the first call for an account fails with
    URLElicitationRequired (-32042) naming the page; the next one works (the user went there). The
    account "never" is never linked."""
    if account == "never" or account not in LINKED:
        LINKED.add(account)
        page = types.ElicitRequestURLParams(
            message=f"Link your {account} account first",
            url=f"https://bank.example/link/{account}",
            elicitation_id=f"link-{account}",
        )
        raise UrlElicitationRequiredError([page])
    return f"Account {account} linked and used."


if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        listener = socket.socket(fileno=int(sys.argv[2]))
        config = uvicorn.Config(server.streamable_http_app(), log_level="warning", lifespan="on")
        uvicorn.Server(config).run(sockets=[listener])
    else:
        server.run()
