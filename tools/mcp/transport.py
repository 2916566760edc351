"""The stdio transport for a server child process, owned by the host.

Not the SDK's `stdio_client`, because the host needs what that one keeps to itself: the child's
pid (status, tests), its exit code ("stopped unexpectedly (exit code -9)"), the moment its stdout
ends (death is noticed at once, not at the next call) and its stderr (forwarded to the log; the
last line explains a failed start). Everything else follows the SDK: newline-delimited JSON-RPC,
a minimal inherited environment, the child in its own process group, and on exit: close stdin,
wait, then SIGTERM/SIGKILL the whole group.

On Linux the child is started through `setpriv --pdeathsig KILL`, so it is killed even when the
web process dies without running its exit hooks (SIGKILL, OOM killer).
"""

from __future__ import annotations

import logging
import shutil
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from subprocess import PIPE

import anyio
import mcp_types as types
from anyio.abc import Process
from mcp.client.stdio import get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from .config import ServerConfig
from .lines import STDERR_LINE_LIMIT, LineSplitter

logger = logging.getLogger("aptix.mcp")

EXIT_GRACE_SECONDS = 2.0  # after stdin closes, before SIGTERM (and again before SIGKILL)
STDERR_TAIL_LINES = 20
SETPRIV = shutil.which("setpriv") if sys.platform.startswith("linux") else None


class ChildProcess:
    """What the host knows about a running server child."""

    def __init__(self, server: str, on_stderr: Callable[[str], None] | None = None) -> None:
        self.server = server
        self.on_stderr = on_stderr  # the server's log (logs.py), which outlives this process
        self.process: Process | None = None
        self.stdout_closed = anyio.Event()
        self.died = False  # it exited or closed its stdout before we began stopping it
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    @property
    def returncode(self) -> int | None:
        return self.process.returncode if self.process else None

    async def wait_exit(self, timeout: float) -> int | None:
        """The exit code, once the child has exited (None if it is still running after `timeout`).
        Polls: `process.wait()` would also wait for pipes a grandchild may hold open."""
        if self.process is not None:
            await _exited(self.process, timeout)
        return self.returncode

    def last_stderr_line(self) -> str:
        return next((line for line in reversed(self.stderr_tail) if line.strip()), "")


def child_argv(config: ServerConfig) -> list[str]:
    argv = [config.command, *config.args]
    return [SETPRIV, "--pdeathsig", "KILL", "--", *argv] if SETPRIV else argv


@asynccontextmanager
async def stdio_transport(config: ServerConfig, child: ChildProcess) -> AsyncIterator[tuple]:
    """Spawn the server and yield the (read, write) stream pair an MCP ClientSession runs on."""
    child.process = await anyio.open_process(
        child_argv(config),
        env=get_default_environment() | dict(config.env),
        cwd=config.cwd,
        stdin=PIPE,
        stdout=PIPE,
        stderr=PIPE,
        start_new_session=True,
    )
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_read_stdout, child, read_writer, config.max_message_bytes)
        tg.start_soon(_write_stdin, child.process, write_reader, read_writer)
        tg.start_soon(_read_stderr, child)
        try:
            yield read_stream, write_stream
        finally:
            child.died = child.stdout_closed.is_set() or child.returncode is not None
            read_stream.close()  # unblocks the stdout reader, which then only drains
            write_stream.close()
            with anyio.CancelScope(shield=True):
                await _stop(child.process)
            tg.cancel_scope.cancel()


async def _read_stdout(child: ChildProcess, sink, limit: int) -> None:
    """Messages to the session until stdout ends. Once the session is gone, keep draining: a child
    blocked writing to a full pipe could not notice its stdin closing and exit."""
    assert child.process is not None and child.process.stdout is not None  # spawned with stdout=PIPE
    lines, delivering = LineSplitter(limit), True
    try:
        async for chunk in child.process.stdout:
            for line in lines.feed(chunk):
                message = _parse(line, child.server) if isinstance(line, bytes) else line.reply(child.server)
                if delivering and message is not None:
                    try:
                        await sink.send(message)
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        delivering = False
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        pass  # our own shutdown closed the pipe
    finally:
        sink.close()  # end of stream for the session: in-flight requests fail at once
        child.stdout_closed.set()


def _parse(line: bytes, server: str) -> SessionMessage | Exception | None:
    if not line.strip():
        return None
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        logger.warning(
            "MCP server %r wrote a line that is not JSON-RPC: %.200s",
            server,
            line[:200].decode("utf-8", "replace"),
            extra={"server": server},
        )
        return exc


async def _write_stdin(process: Process, source, read_writer) -> None:
    assert process.stdin is not None  # spawned with stdin=PIPE
    try:
        async with source:
            async for message in source:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                await process.stdin.send(data.encode("utf-8"))
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        # The child stopped reading: end the session's read side so no request waits forever.
        await read_writer.aclose()


async def _read_stderr(child: ChildProcess) -> None:
    assert child.process is not None and child.process.stderr is not None  # spawned with stderr=PIPE
    stderr = child.process.stderr
    lines = LineSplitter(STDERR_LINE_LIMIT)
    with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        async for chunk in stderr:
            for raw in lines.feed(chunk):
                line = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw.summary()
                child.stderr_tail.append(line)
                if child.on_stderr is not None:
                    child.on_stderr(line)
                logger.info("[%s] %s", child.server, line, extra={"server": child.server, "stream": "stderr"})


async def _stop(process: Process) -> None:
    """Close stdin (the MCP way to ask a stdio server to exit), then signal the whole group."""
    # Spawned with stdin, stdout and stderr all PIPE.
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    if not await _exited(process, EXIT_GRACE_SECONDS):
        await terminate_posix_process_tree(process, EXIT_GRACE_SECONDS)
        await _exited(process, EXIT_GRACE_SECONDS)
    for pipe in (process.stdout, process.stderr):
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await pipe.aclose()


async def _exited(process: Process, timeout: float) -> bool:
    with anyio.move_on_after(timeout):
        while process.returncode is None:
            await anyio.sleep(0.01)
    return process.returncode is not None
