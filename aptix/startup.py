"""Start-up hooks for the processes that serve the ASGI application, and only those.

Daphne has no ASGI lifespan, and `manage.py runworker` none either, so neither tells the app that
it starts serving. `RunOnFirstScope` wraps the application (aptix/asgi.py) and runs its hooks once,
when the first scope of the process arrives (the first HTTP request or websocket in Daphne, the
first channel message in runworker, a lifespan scope where a server sends one), before it hands that
scope on. Importing aptix.asgi therefore starts nothing: migrate, shell, tests and anything else
that merely imports the application never run the hooks, and nothing runs twice.

A hook is a callable without arguments that returns quickly (start background work, do not wait
for it). Hooks run in order on the serving thread; an exception propagates to the server, which
logs it and fails that first scope; the hooks are not run again.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Hook = Callable[[], object]


class RunOnFirstScope:
    """An ASGI application that runs `hooks` once, on its first scope, then serves `app`."""

    def __init__(self, app: AsgiApp, hooks: Iterable[Hook]) -> None:
        self.app = app
        self.hooks = tuple(hooks)
        self._started = False
        self._lock = threading.Lock()

    @property
    def started(self) -> bool:
        """Whether the hooks have run (or are running) in this process."""
        return self._started

    def run_hooks(self) -> None:
        """Run the hooks unless they have run already. Thread-safe; the first caller runs them."""
        with self._lock:
            if self._started:
                return
            self._started = True
            for hook in self.hooks:
                hook()
            # What start-up made (modules, settings, templates, URL maps) lives as long as the process:
            # out of the collector's generations, full collections no longer walk it, which shortens
            # the pauses a busy stream would feel (a 261 ms one was seen with 100 streams).
            gc.collect()  # garbage first: what is frozen is never collected
            gc.freeze()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._started:
            self.run_hooks()
        await self.app(scope, receive, send)
