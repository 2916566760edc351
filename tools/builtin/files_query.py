"""files_query: one read-only SELECT over the session's tables, run in the sandbox (files/sandbox.py);
the result in the markdown table format of tools/tables.py, capped in rows and by the result budget,
with the row count."""

from __future__ import annotations

import asyncio
import re
from typing import ClassVar

from asgiref.sync import sync_to_async

from files.project_files import session_deleted_project_tables
from files.sandbox import QueryRefused, QueryResult, run_query, session_tables

from ..base import AgentTool, InvokeResult, ToolContext, function_schema
from ..tables import markdown_table
from .files_support import ArgumentsError, arguments, budget, files_for

MAX_ROWS = 200
ERROR_SQL = 'files_query requires "sql": one SELECT statement over the session\'s tables.'
MISSING_TABLE = re.compile(r"Table with name (\S+) does not exist")
ERROR_NO_TABLES = "None of this session's files is a table. Read documents with files_read."


class FilesQueryTool(AgentTool):
    TOOL_NAME: ClassVar[str] = "files_query"
    TOOL_USAGE_METADATA: ClassVar[str] = (
        "Answer questions about the attached tables with files_query: one read-only SELECT (DuckDB SQL) over the "
        "table names files_list gives. Aggregate in SQL (sum, count, GROUP BY, ORDER BY … LIMIT) rather than "
        "fetching rows; quote column names that are not plain words with double quotes."
    )
    NEEDS_SESSION_FILES: ClassVar[bool] = True
    is_tool_fully_executed_on_server = True

    @staticmethod
    def result_markdown(result: str) -> str | None:
        """An Ask answer shows the table as it is (it is Markdown already)."""
        return result

    @staticmethod
    def get_schema() -> dict:
        return function_schema(
            FilesQueryTool.TOOL_NAME,
            "Runs one read-only SQL SELECT (or WITH … SELECT; DuckDB dialect) over the tables of the files attached "
            "to this session and returns the rows as a markdown table with the row count.",
            {"sql": {"type": "string", "description": "One SELECT statement over the session's tables."}},
            required=["sql"],
        )

    async def execute(self, arguments_json: str | None, context: ToolContext | None) -> InvokeResult:
        try:
            sql = arguments(arguments_json, '{"sql": "SELECT count(*) FROM sales"}').get("sql")
        except ArgumentsError as exc:
            return InvokeResult.from_error(str(exc))
        if not isinstance(sql, str) or not sql.strip():
            return InvokeResult.from_error(ERROR_SQL)
        files = await files_for(context)
        if isinstance(files, InvokeResult):
            return files
        tables = session_tables(files)
        try:
            # With no table left, the query still runs (over none): a table it names that went with a
            # deleted project file is then named in the error.
            result = await asyncio.to_thread(run_query, tables, sql, max_rows=MAX_ROWS)
        except QueryRefused as exc:
            gone = await sync_to_async(deleted_table_error)(context, str(exc))
            return InvokeResult.from_error(gone or (str(exc) if tables else ERROR_NO_TABLES))
        if not tables:
            return InvokeResult.from_error(ERROR_NO_TABLES)
        return InvokeResult.create(result_text(result, budget()))


def deleted_table_error(context: ToolContext | None, refusal: str) -> str | None:
    """When the query failed on a missing table that was in a file of the session's project since
    deleted: the error names the file, so the model tells the user it is gone rather than guess."""
    missing = MISSING_TABLE.search(refusal)
    if missing is None:
        return None
    gone = session_deleted_project_tables(
        getattr(context, "session_id", None) or "", getattr(getattr(context, "user", None), "id", None)
    )
    upload = gone.get(missing.group(1))
    if upload is None:
        return None
    return (
        f"The table {missing.group(1)} was in “{upload.name}”, a file of the session's project that was deleted "
        f"on {upload.deleted_at:%Y-%m-%d %H:%M} UTC: its data is gone. Tell the user; files_list gives the "
        "tables there are."
    )


def result_text(result: QueryResult, limit: int) -> str:
    """The rows as a markdown table within `limit` characters, and a footer with the row count."""
    total = f"more than {result.total:,}" if result.more else f"{result.total:,}"
    noun = "row" if result.total == 1 and not result.more else "rows"
    rows = result.rows
    text = markdown_table(result.columns, rows)
    while len(text) > limit and rows:
        rows = rows[: len(rows) * 9 // 10]
        text = markdown_table(result.columns, rows)
    if len(rows) == result.total and not result.more:
        return f"{text}\n\n{total} {noun}"
    why = "the row cap" if len(rows) == len(result.rows) else "the result size limit"
    return f"{text}\n\nshowing the first {len(rows):,} of {total} {noun} ({why}); aggregate or filter to see the rest"
