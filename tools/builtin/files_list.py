"""files_list: the session's uploaded files for the model, then its project's (marked `"project": true`):
id, name, kind, size; each table's SQL name, columns (name, type) and rows; each document's pages.
Read-only."""

from __future__ import annotations

import json
from typing import ClassVar

from files.services import table_describe

from ..base import AgentTool, InvokeResult, ToolContext, function_schema
from .files_support import ArgumentsError, arguments, files_for


class FilesListTool(AgentTool):
    TOOL_NAME: ClassVar[str] = "files_list"
    TOOL_USAGE_METADATA: ClassVar[str] = (
        "The user attached files to this session. Call files_list first to learn their tables (names, columns, "
        "row counts) and documents (pages); then query tables with files_query and read documents with files_read."
    )
    NEEDS_SESSION_FILES: ClassVar[bool] = True  # offered only when the session has files (tools/registry.py)
    is_tool_fully_executed_on_server = True

    @staticmethod
    def get_schema() -> dict:
        return function_schema(
            FilesListTool.TOOL_NAME,
            "Lists the files attached to this session and its project's files (marked project: true): tables "
            "with their columns and row counts, documents with their pages, images.",
            {},
        )

    async def execute(self, arguments_json: str | None, context: ToolContext | None) -> InvokeResult:
        try:
            arguments(arguments_json, "{}")
        except ArgumentsError as exc:
            return InvokeResult.from_error(str(exc))
        files = await files_for(context)
        if isinstance(files, InvokeResult):
            return files
        listed = []
        for upload in files:
            entry: dict = {"fileId": upload.pk, "name": upload.name, "kind": upload.kind, "size": upload.size}
            if getattr(upload, "from_project", False):
                entry["project"] = True  # the session's project's file, shared by all its sessions
            if upload.kind == "table":
                entry["tables"] = [table_describe(t) for t in upload.tables]
            elif upload.kind == "document":
                entry["pages"], entry["pageUnit"] = upload.pages, upload.page_unit
            listed.append(entry)
        return InvokeResult.create(json.dumps({"files": listed}, ensure_ascii=False))
