"""The backend a database URL names: SQLite (sqlite.py) or PostgreSQL (postgres.py, and with it
psycopg, imported only for a PostgreSQL URL)."""

from __future__ import annotations

from .base import Backend, ConfigError
from .sqlite import SqliteBackend, sqlite_path


def open_backend(url: str, *, timeout_ms: int, max_bytes: int) -> Backend:
    """Connect to the database a URL names; ConfigError when that cannot work (or is not safe)."""
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    if scheme == "sqlite":
        return SqliteBackend(sqlite_path(url), timeout_ms, max_bytes)
    if scheme in ("postgresql", "postgres"):
        from .postgres import PostgresBackend  # psycopg only when needed

        return PostgresBackend(url, timeout_ms, max_bytes)
    shown = f"scheme {scheme!r}" if scheme else "(not a URL)"
    raise ConfigError(
        f"unsupported database URL {shown}: use sqlite:///path/to/file.sqlite3 or postgresql://user@host/dbname"
    )
