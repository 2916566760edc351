"""The agent tool contract (IAgentTool of the records) and its value types."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypedDict, runtime_checkable

if TYPE_CHECKING:
    from tools.mcp.elicitation import Asker, Resume
    from tools.mcp.tasks import TaskWatch


@dataclass(frozen=True)
class InvokeResult:
    """Outcome of a tool call: a result string on success, an error message otherwise."""

    successful: bool
    result: str | None = None
    error_message: str | None = None
    # passages the result quotes, as (label, link): the answer lists them under "Sources" when its
    # model cited none of them itself (agents/run/answers.py with_sources)
    citations: tuple[tuple[str, str], ...] = ()
    # An interactive view the user is shown with the result (an MCP App: tools/mcp/apps.py), kept with
    # the tool's result for the conversation's card; None for every other tool.
    view: dict[str, Any] | None = None

    @classmethod
    def create(cls, result: str) -> InvokeResult:
        return cls(successful=True, result=result)

    @classmethod
    def from_error(cls, message: str) -> InvokeResult:
        return cls(successful=False, error_message=message)

    def content_for_model(self) -> str:
        """What goes back to the model as the tool message."""
        if self.successful:
            return self.result or ""
        return json.dumps({"error": self.error_message or "The tool failed."})


@dataclass(frozen=True)
class ToolContext:
    """Who and where a tool runs for. Tools take identity only from here, never from arguments."""

    session_id: str | None
    org: Any  # the team: an object with at least id and name
    user: Any  # the user: an object with at least id and username
    turn_id: str | None = None
    tool_call_id: str | None = None
    # The projects whose documents knowledge_search may search (the run's: projects/knowledge_scope.py).
    knowledge_projects: tuple[str, ...] = ()


@dataclass(frozen=True)
class CallContext(ToolContext):
    """One tool call's context, as its caller (a turn's run, a test) hands it to the tool's `execute`:
    ToolContext's who and where, and what an MCP tool's call needs beyond them. The MCP entry passes
    it whole down to its server's connection (tools/mcp/: host → user pool → supervisor →
    connection); nothing reaches a callee any other way.

    asker   who answers a question the server asks during the call (elicitation.py Asker), or None:
            nobody, the question is answered "cancel"
    watch   who hears of the call's task, when the server runs it as one (tasks.py TaskWatch), or None
    resume  the answer a call paused on a question is sent again with (elicitation.py Resume), or None
    keep    the result as the server sent it is kept too (InvokeResult.view): its MCP App is shown it
    """

    asker: Asker | None = None
    watch: TaskWatch | None = None
    resume: Resume | None = None
    keep: bool = False

    @property
    def user_id(self) -> int | None:
        """The user the call acts for: a server that acts as each user serves it over their connection."""
        return getattr(self.user, "id", None)

    @classmethod
    def of(cls, context: ToolContext | None, **mcp: Any) -> CallContext:
        """`context` (None: nobody's) with the MCP parts given as keywords (asker, watch, resume)."""
        if context is None:
            return cls(session_id=None, org=None, user=None, **mcp)
        fields = {
            name: getattr(context, name)
            for name in ("session_id", "org", "user", "turn_id", "tool_call_id", "knowledge_projects")
        }
        if isinstance(context, CallContext):
            fields.update(asker=context.asker, watch=context.watch, resume=context.resume, keep=context.keep)
        return cls(**{**fields, **mcp})


@dataclass(frozen=True)
class ToolDependencies:
    """What the composition root (agents/run/toolbox.py) hands an internal tool when it builds the
    tools of a turn. A tool that needs any of it defines `from_dependencies(deps)`; one that needs
    nothing is built with no arguments. So a new internal tool is its module plus one line in
    `tools.registry.INTERNAL_TOOLS`."""

    logger: Any
    session_manager: Any = None
    catalog: Any = None
    image_remote: Any = None
    documents: Any = None  # a session's documents (agents/documents/services.py DocumentStore)


@runtime_checkable
class AgentTool(Protocol):
    """IAgentTool. A tool class declares its identity as class attributes and a static schema, so the
    registry can check the contract without building it (TUL-010 §3.1). The internal tools
    (tools/builtin) inherit it; an MCP entry (tools/mcp/entry.py) meets it by its shape.

    How a successful result is shown beyond text is part of a tool's contract too, declared by the
    tool itself with the methods of `ShowsImage` and `SummarisesResult` below: the page and the run
    ask the registry (tools/registry.py `result_image`, `result_markdown`), never a tool's name.
    So is what a tool needs of the run: `ChangesMode`, `WritesDocument`, `FindsTools` and
    `BuiltPerTurn` below, and `ALWAYS_OFFERED = True` for a tool no mode policy, toggle or tool budget
    removes (TUL-007 §3.1: the mode change; tools/registry.py `always_offered`). The run (agents/run)
    never names a tool."""

    TOOL_NAME: ClassVar[str]  # matches ^[a-zA-Z0-9_-]{1,64}$
    TOOL_USAGE_METADATA: ClassVar[str]  # non-empty guidance for the LLM
    is_tool_fully_executed_on_server: bool

    @staticmethod
    def get_schema() -> dict: ...

    async def execute(self, arguments_json: str | None, context: ToolContext | None) -> InvokeResult:
        """Run the tool. A turn's run passes a CallContext (a ToolContext with the call's MCP parts)."""
        ...


class ResultImage(TypedDict):
    url: str  # served by this site (tools/media.py)
    alt: str


@runtime_checkable
class ShowsImage(Protocol):
    """A tool whose successful result is an image on this site: its card and the export show it."""

    @staticmethod
    def result_image(result: str) -> ResultImage | None:
        """The image `result` (the tool's result text) points to, or None."""
        ...


@runtime_checkable
class SummarisesResult(Protocol):
    """A tool whose successful result an Ask answer (no follow-up model call) shows as Markdown of its
    own rather than as the raw result in a code block. A tool whose result is by itself what the user asked for (a mode
    changed, an image) also sets `RESULT_IS_ANSWER = True`: shown without a model's text, other
    results come under a label saying the model wrote no answer (agents/run/answers.py)."""

    @staticmethod
    def result_markdown(result: str) -> str | None:
        """`result` (the tool's result text) as Markdown, or None to show it raw."""
        ...


class ModeChanged(TypedDict):
    """What a successful result of a tool that changes the session's mode says changed."""

    previousMode: str | None
    newMode: str
    reason: str
    branch: bool


@runtime_checkable
class ChangesMode(Protocol):
    """A tool whose successful result means the session's mode changed (the tool persisted it): the
    run's mode follows for the rest of the turn and a `mode.changed` event says so."""

    @staticmethod
    def mode_changed(result: str) -> ModeChanged | None:
        """The change `result` reports, or None if it reports none."""
        ...


class DocumentWritten(TypedDict, total=False):
    """What a successful result of a tool that writes a session's document says it wrote."""

    documentId: str
    title: str
    version: int
    summary: str  # what the call said changed (absent when it said nothing)


@runtime_checkable
class WritesDocument(Protocol):
    """A tool whose successful result is a new version of a session's document: the run shows it on
    the timeline and the open panels follow it (a `document.updated` event)."""

    @staticmethod
    def document_written(arguments: str, result: str) -> DocumentWritten | None:
        """The version a call with `arguments` wrote, from its `result`; None if it wrote none."""
        ...


@dataclass(frozen=True)
class ToolSummary:
    """A tool as a search lists it: its request name, its MCP server ("" for an internal tool) and the
    first line of its description."""

    name: str
    server: str
    description: str

    def as_json(self) -> dict[str, str]:
        return {"name": self.name, "server": self.server, "description": self.description}


@dataclass(frozen=True)
class TurnTools:
    """What a tool built for each turn learns of its turn (BuiltPerTurn): the allowed tools the request
    does not carry yet (`on_demand`), the turn's MCP servers that list resources, and how many tools
    one search returns."""

    on_demand: tuple[ToolSummary, ...] = ()
    resource_servers: tuple[str, ...] = ()
    search_results: int = 8


@runtime_checkable
class BuiltPerTurn(Protocol):
    """A tool whose instance is its turn's, built by the run from the turn's TurnTools rather than once
    per process (tools/registry.py PER_TURN_TOOLS), and offered only when `offered` says the turn
    needs it."""

    @staticmethod
    def offered(turn: TurnTools) -> bool:
        """Whether a turn with these tools offers this one."""
        ...

    @classmethod
    def for_turn(cls, turn: TurnTools) -> Any:
        """This turn's instance."""
        ...


@runtime_checkable
class FindsTools(Protocol):
    """A tool whose successful result names tools to offer from the run's next step on (and, for the
    session's later turns, tools worth offering first)."""

    @staticmethod
    def found_names(result: str) -> list[str]:
        """The tool names `result` found (none for an error or an empty search)."""
        ...


def json_result(result: str) -> dict[str, Any] | None:
    """A result text that is a JSON object, or None (for the methods above)."""
    try:
        data = json.loads(result)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def function_schema(name: str, description: str, properties: dict, required: list[str] | None = None) -> dict:
    """An OpenAI function tool schema that refuses unknown arguments."""
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        parameters["required"] = list(required)
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}
