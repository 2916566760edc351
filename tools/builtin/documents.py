"""document_write and document_read: drafts (a DDR, a workflow) kept beside the conversation, every
version kept. They act only in the session of their context and keep every version, so they run
without an approval (agents/approvals.py: internal tools run). The store comes by injection
(ToolDependencies.documents, built in agents/run/toolbox.py): tools never import agents."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from ..arguments import ToolArgumentError, json_object_arguments
from ..base import (
    AgentTool,
    DocumentWritten,
    InvokeResult,
    ToolContext,
    ToolDependencies,
    function_schema,
    json_result,
)

ERROR_INVALID_JSON = "{tool} requires the arguments to be a JSON object."
ERROR_NO_SESSION = "{tool} works only inside a session."
ERROR_TEXT = "{tool} requires {name!r} to be a non-empty string."
ERROR_OPTIONAL_TEXT = "{tool} requires {name!r} to be a string when given."
ERROR_VERSION = "document_read requires 'version' to be a whole number from 1 when given."
ERROR_FAILED = "{tool} failed; try again."
LOG_TAG = "DocumentTool.Failed"


def _text(args: dict[str, Any], name: str, tool: str, *, required: bool) -> str | None:
    value = args.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        template = ERROR_TEXT if required else ERROR_OPTIONAL_TEXT
        raise ToolArgumentError(template.format(tool=tool, name=name))
    return value


class _DocumentTool(AgentTool):
    TOOL_NAME: ClassVar[str] = ""
    is_tool_fully_executed_on_server = True

    @classmethod
    def from_dependencies(cls, deps: ToolDependencies) -> Any:
        return cls(deps.documents, deps.logger)

    def __init__(self, store: Any, logger: Any) -> None:
        if store is None:
            raise ValueError(f"{type(self).__name__} requires a document store (got None).")
        self._store = store
        self._logger = logger

    def _args(self, arguments_json: str | None, context: ToolContext | None) -> tuple[dict[str, Any], str]:
        session_id = getattr(context, "session_id", None)
        if not session_id:
            raise ToolArgumentError(ERROR_NO_SESSION.format(tool=self.TOOL_NAME))
        invalid = ERROR_INVALID_JSON.format(tool=self.TOOL_NAME)
        return json_object_arguments(arguments_json or "{}", invalid), session_id

    async def execute(self, arguments_json: str | None, context: ToolContext | None) -> InvokeResult:
        try:
            args, session_id = self._args(arguments_json, context)
            return await self._run(args, session_id, context)
        except ToolArgumentError as exc:
            return InvokeResult.from_error(str(exc))
        except ValueError as exc:  # the store's DocumentError: too long, no such document
            return InvokeResult.from_error(str(exc))
        except Exception as exc:  # noqa: BLE001 - the model gets a message, the admin log the cause
            if self._logger is not None:
                self._logger.add_exception(exc, LOG_TAG, tool=self.TOOL_NAME)
            return InvokeResult.from_error(ERROR_FAILED.format(tool=self.TOOL_NAME))

    async def _run(self, args: dict[str, Any], session_id: str, context: ToolContext | None) -> InvokeResult:
        raise NotImplementedError


class DocumentWriteTool(_DocumentTool):
    TOOL_NAME: ClassVar[str] = "document_write"
    TOOL_USAGE_METADATA: ClassVar[str] = (
        "Keeps a draft the user asked for (a DDR, a workflow, a spec) as a document beside the chat, in "
        "Markdown. Write the whole text each time; pass documentId to revise a document (a new version; "
        "earlier ones are kept) and a short summary of what changed. The current version of each document "
        "is in your context, with the user's own edits: work on that. Reply with a short note, not the text."
    )
    SCHEMA_DESCRIPTION: ClassVar[str] = "Writes a new version of a document of this session (Markdown)."
    RESULT_IS_ANSWER: ClassVar[bool] = True  # an Ask answer may be this result alone (tools/base.py)

    @staticmethod
    def result_markdown(result: str) -> str | None:
        """An Ask answer says which document and version it wrote."""
        data = json_result(result)
        if data is None or "documentId" not in data:
            return None
        return f"Document **{data.get('title')}** v{data.get('version')} saved: it is in the panel beside the chat."

    @staticmethod
    def document_written(arguments: str, result: str) -> DocumentWritten | None:
        """The version a successful call wrote (tools/base.py WritesDocument), with the summary it gave."""
        data = json_result(result)
        if data is None:
            return None
        written: DocumentWritten = {
            "documentId": str(data.get("documentId", "")),
            "title": str(data.get("title", "")),
            "version": int(data.get("version", 0)),
        }
        call = json_result(arguments or "{}") or {}
        if isinstance(summary := call.get("summary"), str) and summary.strip():
            written["summary"] = summary.strip()[:500]
        return written

    @staticmethod
    def get_schema() -> dict:
        return function_schema(
            DocumentWriteTool.TOOL_NAME,
            DocumentWriteTool.SCHEMA_DESCRIPTION,
            {
                "title": {"type": "string", "description": "The document's title."},
                "content": {"type": "string", "description": "The whole document, in Markdown."},
                "documentId": {"type": "string", "description": "The document to revise; omit for a new one."},
                "summary": {"type": "string", "description": "What changed in this version, in a few words."},
            },
            ["title", "content"],
        )

    async def _run(self, args: dict[str, Any], session_id: str, context: ToolContext | None) -> InvokeResult:
        title = _text(args, "title", self.TOOL_NAME, required=True) or ""
        content = _text(args, "content", self.TOOL_NAME, required=True) or ""
        document_id = _text(args, "documentId", self.TOOL_NAME, required=False)
        summary = _text(args, "summary", self.TOOL_NAME, required=False) or ""
        version = await self._store.write(
            session_id=session_id,
            title=title,
            content=content,
            document_id=document_id or None,
            summary=summary,
            turn_id=getattr(context, "turn_id", None),
        )
        result = {"documentId": version.document_id, "version": version.number, "title": version.title}
        return InvokeResult.create(json.dumps(result))


class DocumentReadTool(_DocumentTool):
    TOOL_NAME: ClassVar[str] = "document_read"
    TOOL_USAGE_METADATA: ClassVar[str] = (
        "Reads a document of this session whole: use it when your context shows only a document's outline, "
        "or for an earlier version (versions count from 1)."
    )
    SCHEMA_DESCRIPTION: ClassVar[str] = "Reads a document of this session (the current or a given version)."

    @staticmethod
    def get_schema() -> dict:
        return function_schema(
            DocumentReadTool.TOOL_NAME,
            DocumentReadTool.SCHEMA_DESCRIPTION,
            {
                "documentId": {"type": "string", "description": "The document to read."},
                "version": {"type": "integer", "description": "A version number from 1; omit for the current one."},
            },
            ["documentId"],
        )

    async def _run(self, args: dict[str, Any], session_id: str, context: ToolContext | None) -> InvokeResult:
        document_id = _text(args, "documentId", self.TOOL_NAME, required=True) or ""
        version = args.get("version")
        if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 1):
            return InvokeResult.from_error(ERROR_VERSION)
        row = await self._store.read(session_id=session_id, document_id=document_id, version=version)
        result = {
            "documentId": row.document_id,
            "version": row.number,
            "title": row.title,
            "content": row.content,
        }
        return InvokeResult.create(json.dumps(result))
