"""The files' variables: uploads (size, quota) and what ingestion and a query over the uploaded tables may
use (files/). Read through the package: `env.X`."""

from __future__ import annotations

from aptix.envtypes import Choice, Integer, Number

from .sections import FILES

# --- Files ----------------------------------------------------------------------------------------
APTIX_UPLOAD_MAX_BYTES = Integer("APTIX_UPLOAD_MAX_BYTES", 50 << 20, FILES, "bytes per uploaded file", minimum=1)
APTIX_UPLOAD_USER_QUOTA = Integer("APTIX_UPLOAD_USER_QUOTA", 1 << 30, FILES, "bytes of files one user keeps", minimum=1)
APTIX_FILES_QUERY_TIMEOUT = Number("APTIX_FILES_QUERY_TIMEOUT", 10.0, FILES, "seconds per `files_query`", minimum=0.01)
APTIX_FILES_QUERY_MEMORY_MB = Integer(
    "APTIX_FILES_QUERY_MEMORY_MB", 512, FILES, "MiB DuckDB may use per `files_query`", minimum=64
)
APTIX_FILES_QUERY_THREADS = Integer(
    "APTIX_FILES_QUERY_THREADS", 2, FILES, "threads per `files_query` and table upload", minimum=1
)
APTIX_FILES_INGEST_MEMORY_MB = Integer(
    "APTIX_FILES_INGEST_MEMORY_MB", 100, FILES, "MiB DuckDB may use to ingest one uploaded table", minimum=32
)
APTIX_FILES_MAX_ROWS = Integer("APTIX_FILES_MAX_ROWS", 10_000_000, FILES, "rows per uploaded table", minimum=1)
APTIX_FILES_MAX_COLUMNS = Integer("APTIX_FILES_MAX_COLUMNS", 1000, FILES, "columns per uploaded table", minimum=1)
APTIX_FILES_MAX_UNZIPPED = Integer(
    "APTIX_FILES_MAX_UNZIPPED", 256 << 20, FILES, "bytes an XLSX or DOCX may decompress to (zip bombs)", minimum=1
)
APTIX_FILES_INGEST_CHILD_MEMORY_MB = Integer(
    "APTIX_FILES_INGEST_CHILD_MEMORY_MB",
    0,
    FILES,
    "MiB of address space the process that reads one upload may map (past it the upload is refused with 422)",
    minimum=0,
    default_doc="1024 above `APTIX_FILES_INGEST_MEMORY_MB` (Python, DuckDB and the readers' own needs)",
)
APTIX_FILES_INGEST_TIMEOUT = Number(
    "APTIX_FILES_INGEST_TIMEOUT", 120.0, FILES, "seconds the process that reads one upload may run", minimum=0.1
)
APTIX_KNOWLEDGE_RANKING = Choice(
    "APTIX_KNOWLEDGE_RANKING",
    "bm25s",
    FILES,
    "how knowledge search ranks a project's passages by their words: `bm25s` (BM25, an index per project kept "
    "in each web process); `postgres`: PostgreSQL's full-text search (ts_rank_cd, nothing held in the process, "
    "slower on large projects; on SQLite `bm25s` all the same)",
    choices=("bm25s", "postgres"),
)
