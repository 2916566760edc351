"""Tables: CSV/TSV (delimiter, header and types sniffed by DuckDB; encodings other than UTF-8
transcoded first), JSON/JSONL and Parquet read by DuckDB, XLSX by python-calamine (each sheet a
table). Each table file becomes its own DuckDB database, tables `t0`, `t1`, …, written once here and
only ever read afterwards (files/sandbox.py attaches it read-only)."""

from __future__ import annotations

import codecs
import csv
import re
from pathlib import Path, PurePath
from typing import Any

import duckdb
from django.conf import settings

from ..errors import unreadable
from ..sniff import Sniffed
from .common import check_unzipped_size, first_line
from .ingested import Ingested
from .sheets import check_sheets

__all__ = ["connect_for_ingest", "first_line", "ingest_table", "sql_name"]

PREVIEW_ROWS = 5
PREVIEW_COLUMNS = 8
PREVIEW_CELL_CHARS = 80
# SQL keywords a table name must not be, or every query would have to quote it.
RESERVED = {
    "all",
    "and",
    "as",
    "by",
    "case",
    "create",
    "else",
    "end",
    "from",
    "group",
    "having",
    "in",
    "is",
    "join",
    "limit",
    "not",
    "null",
    "on",
    "or",
    "order",
    "select",
    "table",
    "then",
    "union",
    "when",
    "where",
    "with",
}
NUMERIC_TYPES = ("DOUBLE", "FLOAT", "DECIMAL", "REAL")
# Said in a semicolon-separated file's description (files_list, the API): how its numbers were read.
DECIMALS = {
    ",": "numbers read with a decimal comma (1,5 is one and a half)",
    ".": "numbers read with a decimal point (1.5 is one and a half)",
}
UTF8 = {"utf-8", "utf_8", "utf-8-sig", "utf_8_sig", "ascii"}


def ingest_table(path: str, sniffed: Sniffed, name: str, workdir: Path) -> Ingested:
    database = workdir / "tables.duckdb"
    connection = connect_for_ingest(database, workdir)
    try:
        stem = sql_name(PurePath(name).stem)
        if sniffed.format == "xlsx":
            sources = _load_workbook(connection, path, stem, workdir)
        else:
            decimal = _load_one(connection, path, sniffed, workdir)
            sources = [("t0", stem)]
        tables = [_describe(connection, source, table_name) for source, table_name in sources]
        if sniffed.format != "xlsx" and decimal is not None:
            tables[0]["decimal"] = DECIMALS[decimal]
        preview = _preview(connection, sources[0][0]) if sources else {}
        connection.execute("CHECKPOINT")
    except duckdb.Error as exc:
        raise unreadable(f"The table could not be read: {first_line(exc)}") from None
    finally:
        connection.close()
    if not tables:
        raise unreadable("The workbook has no sheet with data.")
    return Ingested(data_path=database, data_suffix="tables.duckdb", tables=tables, preview=preview)


def connect_for_ingest(database: Path, workdir: Path) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection to write one file's tables, within APTIX_FILES_INGEST_MEMORY_MB (spilling
    to `workdir`: a web process takes uploads) and the query threads, with no extension installed or
    loaded on the way."""
    return duckdb.connect(
        str(database),
        config={
            "threads": settings.APTIX_FILES_QUERY_THREADS,
            "memory_limit": f"{settings.APTIX_FILES_INGEST_MEMORY_MB}MB",
            "temp_directory": str(workdir / "spill"),
            "preserve_insertion_order": True,
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
        },
    )


def _load_one(connection: duckdb.DuckDBPyConnection, path: str, sniffed: Sniffed, workdir: Path) -> str | None:
    """Load the file as table t0; the decimal separator chosen for a semicolon-separated file."""
    if sniffed.format in ("csv", "tsv"):
        source = _utf8(path, sniffed.encoding, workdir)
        decimal = _decimal_separator(connection, source)
        options = f"header = true, decimal_separator = '{decimal or '.'}'"
        _check_width(connection, f"SELECT * FROM read_csv(?, {options})", source)
        connection.execute(f"CREATE TABLE t0 AS SELECT * FROM read_csv(?, {options})", [source])
        return decimal
    elif sniffed.format in ("json", "jsonl"):
        style = "newline_delimited" if sniffed.format == "jsonl" else "auto"
        source = _utf8(path, sniffed.encoding, workdir)
        _check_width(connection, f"SELECT * FROM read_json(?, format = '{style}')", source)
        connection.execute(f"CREATE TABLE t0 AS SELECT * FROM read_json(?, format = '{style}')", [source])
    else:  # parquet
        _check_width(connection, "SELECT * FROM read_parquet(?)", path)
        connection.execute("CREATE TABLE t0 AS SELECT * FROM read_parquet(?)", [path])
    return None


def _decimal_separator(connection: duckdb.DuckDBPyConnection, source: str) -> str | None:
    """ "." or ",": a comma-separated file writes 1.5; a semicolon-separated one may write 1,5 (a
    European export) or 1.5 (many tools), so both are tried and the one that types more columns as
    numbers wins (a tie keeps the comma, the locale's usual choice)."""
    delimiter = connection.execute("SELECT Delimiter FROM sniff_csv(?)", [source]).fetchone()
    if not delimiter or delimiter[0] != ";":
        return None  # the decimal point, the only choice
    numeric = {}
    for decimal in (",", "."):
        described = connection.execute(
            f"DESCRIBE SELECT * FROM read_csv(?, header = true, decimal_separator = '{decimal}')", [source]
        ).fetchall()
        numeric[decimal] = sum(1 for row in described if str(row[1]).startswith(NUMERIC_TYPES))
    return "." if numeric["."] > numeric[","] else ","


def _check_width(connection: duckdb.DuckDBPyConnection, select: str, source: str) -> None:
    """Refuse an absurdly wide table before loading a row of it."""
    width = len(connection.execute(f"DESCRIBE {select}", [source]).fetchall())
    if width > settings.APTIX_FILES_MAX_COLUMNS:
        raise unreadable(f"The table has {width} columns; at most {settings.APTIX_FILES_MAX_COLUMNS} are accepted.")


def _utf8(path: str, encoding: str | None, workdir: Path) -> str:
    """`path` itself when it is UTF-8, else a UTF-8 copy made chunk by chunk."""
    if encoding is None or encoding.lower().replace("-", "_") in {e.replace("-", "_") for e in UTF8}:
        return path
    target = workdir / "utf8.txt"
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    with open(path, "rb") as source, open(target, "w", encoding="utf-8", newline="") as out:
        while chunk := source.read(1 << 20):
            out.write(decoder.decode(chunk))
        out.write(decoder.decode(b"", final=True))
    return str(target)


def _load_workbook(connection: duckdb.DuckDBPyConnection, path: str, stem: str, workdir: Path) -> list[tuple[str, str]]:
    """Each sheet with data as table t<i>, through a CSV so DuckDB types its columns."""
    from python_calamine import CalamineWorkbook

    check_unzipped_size(path)
    check_sheets(path)  # each sheet's size from its XML, before calamine holds any sheet in memory
    try:
        workbook = CalamineWorkbook.from_path(path)
        sheet_names = workbook.sheet_names
    except Exception as exc:  # noqa: BLE001 - calamine raises its own types for any unreadable workbook
        raise unreadable(f"The workbook could not be read: {first_line(exc)}") from None
    sources: list[tuple[str, str]] = []
    for sheet_name in sheet_names:
        try:
            sheet = workbook.get_sheet_by_name(sheet_name)
        except Exception as exc:  # noqa: BLE001 - a missing part, bad XML, a reference that is no cell
            raise unreadable(f"Sheet “{sheet_name}” could not be read: {first_line(exc)}") from None
        if sheet.width > settings.APTIX_FILES_MAX_COLUMNS:
            raise unreadable(
                f"Sheet “{sheet_name}” has {sheet.width} columns; at most {settings.APTIX_FILES_MAX_COLUMNS} "
                "are accepted."
            )
        if sheet.height > settings.APTIX_FILES_MAX_ROWS + 1:
            raise unreadable(
                f"Sheet “{sheet_name}” has {sheet.height} rows; at most {settings.APTIX_FILES_MAX_ROWS} are accepted."
            )
        csv_path = workdir / f"sheet{len(sources)}.csv"
        written = 0
        with open(csv_path, "w", encoding="utf-8", newline="") as out:
            writer = csv.writer(out)
            for row in sheet.iter_rows():
                if any(value not in ("", None) for value in row):
                    writer.writerow([_sheet_cell(value) for value in row])
                    written += 1
        if written < 1:
            continue
        source = f"t{len(sources)}"
        connection.execute(f"CREATE TABLE {source} AS SELECT * FROM read_csv(?, header = true)", [str(csv_path)])
        csv_path.unlink()
        sources.append((source, sql_name(f"{stem}_{sheet_name}")))
    return sources


def _sheet_cell(value: Any) -> Any:
    """A sheet's value as CSV text: Excel keeps every number as a float, so whole ones are written
    as integers (a column of them is then typed as one)."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1 << 53:
        return int(value)
    return value


def _describe(connection: duckdb.DuckDBPyConnection, source: str, table_name: str) -> dict[str, Any]:
    columns = [{"name": row[0], "type": row[1]} for row in connection.execute(f"DESCRIBE {source}").fetchall()]
    count = connection.execute(f"SELECT count(*) FROM {source}").fetchone()
    rows = int(count[0]) if count else 0
    if rows > settings.APTIX_FILES_MAX_ROWS:
        raise unreadable(f"The table has {rows} rows; at most {settings.APTIX_FILES_MAX_ROWS} are accepted.")
    if len(columns) > settings.APTIX_FILES_MAX_COLUMNS:
        raise unreadable(
            f"The table has {len(columns)} columns; at most {settings.APTIX_FILES_MAX_COLUMNS} are accepted."
        )
    return {"name": table_name, "columns": columns, "rows": rows, "source": source}


def _preview(connection: duckdb.DuckDBPyConnection, source: str) -> dict[str, Any]:
    cursor = connection.execute(f"SELECT * FROM {source} LIMIT {PREVIEW_ROWS}")
    columns = [d[0] for d in cursor.description][:PREVIEW_COLUMNS]
    rows = [[_preview_cell(v) for v in row[:PREVIEW_COLUMNS]] for row in cursor.fetchall()]
    return {"columns": columns, "rows": rows}


def _preview_cell(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value)
    return text if len(text) <= PREVIEW_CELL_CHARS else text[: PREVIEW_CELL_CHARS - 1] + "…"


def sql_name(text: str) -> str:
    """A table name a model can write unquoted: lower case, letters, digits and underscores, not
    starting with a digit, at most 48 characters."""
    name = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:48].strip("_")
    if not name:
        return "data"
    if name in RESERVED:
        return f"{name}_data"
    return f"t_{name}" if name[0].isdigit() else name
