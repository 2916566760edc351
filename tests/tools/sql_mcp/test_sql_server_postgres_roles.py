"""Which PostgreSQL roles the SQL MCP server runs as (finding 8 of the security run; run under
bin/with-postgres).

A READ ONLY transaction does not stop a superuser from writing through dblink_exec, running programs
(COPY … TO PROGRAM), writing files (COPY … TO '/file'), reading them (pg_read_file), terminating
other backends or reloading the configuration: with a superuser DSN all six worked through the
"read-only" server. Now the server refuses to start for such a role, naming what it found; the role
docs/mcp.md describes starts, and each of the six is refused by its privileges.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from psycopg import sql as pgsql

from tests.tools.sql_mcp.helpers import ADMIN_URL, NEEDS_POSTGRES, REPO_DIR, SqlServer, pg_url, text, tool_error
from tools.sql_mcp import server as sql_server
from tools.sql_mcp.postgres import READER_HINT

pytestmark = [
    pytest.mark.serial,  # one demo database and cluster-wide roles: not shared with a parallel worker
    *NEEDS_POSTGRES,
]


def readme_role_sql() -> str:
    """The SQL that docs/mcp.md gives for a read-only role: the first sql block of the SQL server section."""
    readme = (REPO_DIR / "docs" / "mcp.md").read_text()
    section = readme[readme.index("\n## The SQL MCP server\n") :]
    return section[section.index("```sql\n") + len("```sql\n") :].split("```", 1)[0]


@dataclass(frozen=True)
class Cluster:
    database: str
    admin: psycopg.Connection  # the superuser, connected to the database
    superuser: str
    roles: list[str]  # created by the tests, dropped at the end

    def role(self, *grants: str) -> tuple[str, str]:
        """A new role made as docs/mcp.md says, then given `grants` ({role}, {superuser}): name, URL."""
        role, password = f"aptix_reader_{secrets.token_hex(4)}", secrets.token_urlsafe(16)
        self.roles.append(role)
        made = re.sub(r"\baptix_reader\b", role, readme_role_sql()).replace("'change-me'", f"'{password}'")
        self.admin.execute(re.sub(r"\bDATABASE shop\b", f"DATABASE {self.database}", made).encode())
        for grant in grants:
            self.admin.execute(grant.format(role=role, superuser=self.superuser).encode())
        return role, pg_url(ADMIN_URL, dbname=self.database, user=role, password=password)

    @property
    def superuser_url(self) -> str:
        return pg_url(ADMIN_URL, dbname=self.database)


@pytest.fixture(scope="module")
def cluster():
    """A throwaway database with dblink and postgres_fdw installed, and a table to protect."""
    name = f"aptix_mcp_roles_{secrets.token_hex(4)}"
    with psycopg.connect(ADMIN_URL, autocommit=True) as server:
        server.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(name)))
    admin = psycopg.connect(pg_url(ADMIN_URL, dbname=name), autocommit=True)
    made = Cluster(name, admin, admin.execute("SELECT current_user").fetchone()[0], [])
    try:
        admin.execute("CREATE EXTENSION dblink; CREATE EXTENSION postgres_fdw")
        admin.execute("CREATE TABLE orders (id int); INSERT INTO orders VALUES (1), (2)")
        yield made
    finally:
        admin.close()
        with psycopg.connect(ADMIN_URL, autocommit=True) as server:
            server.execute(pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(pgsql.Identifier(name)))
            for role in made.roles:
                server.execute(pgsql.SQL("DROP ROLE IF EXISTS {}").format(pgsql.Identifier(role)))


def _serve(url: str) -> subprocess.CompletedProcess:
    """The server as mcp.json starts it, with nothing on stdin: it exits at once if it starts at all."""
    return subprocess.run(
        [sys.executable, "-m", "tools.mcp.sql_server", url],
        cwd=REPO_DIR,
        env={"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO_DIR)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_superuser_is_refused_at_start(cluster):
    done = _serve(cluster.superuser_url)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"sql_server: refusing to run as PostgreSQL role {cluster.superuser!r}: it is a superuser. {READER_HINT}\n"
    )
    mcp_doc = (REPO_DIR / "docs" / "mcp.md").read_text()
    assert '"A read-only role"' in done.stderr and "\n### A read-only role\n" in mcp_doc


REFUSED = [
    ("GRANT pg_read_server_files TO {role}", "it is a member of pg_read_server_files"),
    ("GRANT pg_write_server_files TO {role}", "it is a member of pg_write_server_files"),
    ("GRANT pg_execute_server_program TO {role}", "it is a member of pg_execute_server_program"),
    ("GRANT pg_signal_backend TO {role}", "it is a member of pg_signal_backend"),
    ("GRANT {superuser} TO {role}", "it is a member of the superuser role {superuser}"),
    (
        "GRANT EXECUTE ON FUNCTION dblink_exec(text, text) TO {role}",
        "it may execute dblink_exec (dblink/postgres_fdw connections are not read-only)",
    ),
    (
        "GRANT EXECUTE ON FUNCTION postgres_fdw_disconnect_all() TO {role}",
        "it may execute postgres_fdw_disconnect_all (dblink/postgres_fdw connections are not read-only)",
    ),
]


@pytest.mark.parametrize(("grant", "found"), REFUSED, ids=[grant.split(" TO ")[0] for grant, _ in REFUSED])
def test_a_role_that_reaches_outside_the_database_is_refused(cluster, grant, found, capsys):
    role, url = cluster.role(grant)
    assert sql_server.main([url]) == 1  # in this process: the check is the same, and no start-up to wait for
    err = capsys.readouterr().err
    assert err.startswith(f"sql_server: refusing to run as PostgreSQL role {role!r}: ")
    assert found.format(superuser=cluster.superuser) in err and err.endswith(f". {READER_HINT}\n")


def test_everything_that_was_found_is_named(cluster, capsys):
    role, url = cluster.role(
        "GRANT pg_signal_backend, pg_read_server_files TO {role}",
        "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO {role}",
    )
    (names,) = cluster.admin.execute(
        "SELECT count(DISTINCT proname) FROM pg_proc WHERE proname LIKE 'dblink%' OR proname LIKE 'postgres\\_fdw%'"
    ).fetchone()
    assert sql_server.main([url]) == 1
    assert capsys.readouterr().err == (
        f"sql_server: refusing to run as PostgreSQL role {role!r}: it is a member of pg_read_server_files, "
        "pg_signal_backend; it may execute dblink, dblink_build_sql_delete, dblink_build_sql_insert and "
        f"{names - 3} more (dblink/postgres_fdw connections are not read-only). {READER_HINT}\n"
    )


@pytest.mark.asyncio
async def test_the_readme_role_serves_and_every_attack_is_refused(cluster):
    _, url = cluster.role()
    victim = psycopg.connect(cluster.superuser_url, autocommit=True)
    # Where the database server's own user could write them, had COPY run.
    tag = secrets.token_hex(4)
    program_ran, file_written = Path(f"/tmp/aptix-program-{tag}"), Path(f"/tmp/aptix-copy-{tag}.csv")
    attacks = {  # the six attacks of the finding, and what refuses each now
        f"SELECT dblink_exec('{cluster.superuser_url}', 'DELETE FROM orders')": "permission denied for function dblink",
        f"COPY (SELECT 1) TO PROGRAM 'touch {program_ran}'": "pg_execute_server_program",
        f"COPY (SELECT 1) TO '{file_written}'": "pg_write_server_files",
        "SELECT pg_read_file('/etc/passwd')": "permission denied for function pg_read_file",
        f"SELECT pg_terminate_backend({victim.info.backend_pid})": "terminate",
        "SELECT pg_reload_conf()": "permission denied for function pg_reload_conf",
    }
    server = SqlServer(url)
    session = await server.start()
    try:
        assert text(await session.call_tool("query", {"sql": "SELECT count(*) AS n FROM orders"})).endswith("1 row")
        for sql_text, message in attacks.items():
            assert message in tool_error(await session.call_tool("query", {"sql": sql_text})), sql_text
    finally:
        await server.stop()
    assert cluster.admin.execute("SELECT count(*) FROM orders").fetchone()[0] == 2
    assert victim.execute("SELECT 1").fetchone() == (1,)  # still connected
    victim.close()
    assert not program_ran.exists() and not file_written.exists()


@pytest.mark.asyncio
async def test_a_role_granted_a_dangerous_role_later_is_refused_on_reconnect(cluster):
    role, url = cluster.role()
    server = SqlServer(url)
    session = await server.start()
    try:
        cluster.admin.execute(pgsql.SQL("GRANT pg_read_server_files TO {}").format(pgsql.Identifier(role)))
        await session.call_tool("query", {"sql": "COPY orders TO STDOUT"})  # drops the connection
        refused = tool_error(await session.call_tool("query", {"sql": "SELECT pg_read_file('/etc/hostname')"}))
    finally:
        await server.stop()
    assert refused == (
        f"refusing to run as PostgreSQL role {role!r}: it is a member of pg_read_server_files. {READER_HINT}"
    )
