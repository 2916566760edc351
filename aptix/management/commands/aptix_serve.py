"""`manage.py aptix_serve [-b HOST] [-p PORT] [-- daphne options]`: Daphne serving aptix.asgi, with
the start-up hooks (the MCP host, the orphan sweep) run as soon as the server runs, not on its first
request.

Plain `daphne aptix.asgi:application` runs them on the first scope (aptix/startup.py), so after a
crash the turns the dead process held stay `running` until somebody visits; this command ends them
at once. (Daphne's websocket message limit stays its default, 1 MiB: Autobahn applies it to what
the server sends as well, and a rendered event can be larger than a client's largest frame; the
consumer closes a socket whose client sends more than APTIX_WS_MAX_MESSAGE.) Websocket messages are
compressed (permessage-deflate) for clients that offer it, as browsers do, unless
APTIX_WS_COMPRESSION=false.
"""

from __future__ import annotations

import argparse
import logging
import socket
from typing import Any, cast

from autobahn.websocket.compress import PerMessageDeflateOffer, PerMessageDeflateOfferAccept
from daphne.cli import CommandLineInterface
from daphne.server import Server
from django.conf import settings
from django.core.management.base import BaseCommand

from aptix.apps_origin import serve_apps_on

APPLICATION = "aptix.asgi:application"
# Seconds a websocket's opening handshake may take, the application's accept included. Daphne's
# command line uses its `--websocket_connect_timeout` (default 5) for both, and Autobahn drops a
# handshake past it with no HTTP answer at all: a socket whose accept waits behind a busy process
# (fifty tabs reconnecting after a restart, a deploy's migration locking a table) was cut, and the
# browser's reconnect added to the load that cut it. 20 is what Daphne's own Server defaults to;
# `-- --websocket_connect_timeout N` still sets it.
WS_CONNECT_TIMEOUT = 20
logger = logging.getLogger("aptix.startup")


class StartingServer(Server):
    """Daphne's server, which runs the application's start-up hooks when its reactor starts."""

    def __init__(self, application: Any, **kwargs: Any) -> None:
        kwargs["ready_callable"] = self._schedule_hooks
        super().__init__(application, **kwargs)

    def _schedule_hooks(self) -> None:
        from twisted.internet import reactor

        if settings.APTIX_WS_COMPRESSION:  # the factory exists once Daphne listens, before any socket
            self.ws_factory.setProtocolOptions(perMessageCompressionAccept=accept_deflate)
        from files.body_limit import limit_bodies

        limit_bodies(self.http_factory)  # a body over the upload limit: 413 while it is still arriving

        from aptix.asgi import application

        # On the reactor's asyncio loop once it runs: the hooks need a running loop (the sweep is a
        # task on it). Not callWhenRunning: the asyncio reactor fires that before its loop runs.
        cast(Any, reactor).callLater(0, _run_hooks, application)  # zope interfaces confuse mypy


def accept_deflate(offers: list[Any]) -> PerMessageDeflateOfferAccept | None:
    """Accept a browser's permessage-deflate offer (RFC 7692), keeping the compression context
    between messages: a live stream is many small fragments that repeat the same markup, which
    compress to a fraction only against what went before. The cost is one zlib stream per socket;
    `mem_level` 5 keeps it near 40 KB instead of ~260 KB. Django masks its CSRF token anew on every
    render, which is what stops BREACH-style guessing through compressed sizes."""
    for offer in offers:
        if isinstance(offer, PerMessageDeflateOffer):
            return PerMessageDeflateOfferAccept(offer, mem_level=5)
    return None


def _apps_endpoint(bind: str, port: int) -> list[str]:
    """Daphne's option to listen on `port` + 1 too, where MCP Apps are framed from, when that port is
    free (Daphne stops altogether when one of its endpoints cannot listen): else no apps, said once."""
    apps_port = port + 1
    if not 0 < port < 65535 or not _free(bind, apps_port):
        logger.warning(
            "MCP Apps are not served: port %s is not free (set APTIX_MCP_APPS_ORIGIN to serve them elsewhere)",
            apps_port,
            extra={"event": "startup.apps_not_served"},
        )
        return []
    serve_apps_on(bind, port)
    interface = bind.replace(":", "\\:")  # an IPv6 address, escaped for Twisted
    return ["-e", f"tcp:port={apps_port}:interface={interface}"]


def _free(bind: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    with socket.socket(family) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Twisted listens
        try:
            probe.bind((bind, port))
        except OSError:
            return False
    return True


def _run_hooks(application: Any) -> None:
    try:
        application.run_hooks()
    except Exception:  # Twisted would keep it in its own log, which nobody reads
        logger.exception("A start-up hook failed", extra={"event": "startup.failed"})
        raise


class Command(BaseCommand):
    help = "Serve Aptix with Daphne; start the MCP servers and the orphan sweep at once."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("-b", "--bind", default="127.0.0.1", help="address to listen on")
        parser.add_argument("-p", "--port", type=int, default=8000, help="port to listen on")
        parser.add_argument("daphne", nargs=argparse.REMAINDER, help="after --: more options for Daphne")

    def handle(self, *args: Any, **options: Any) -> None:
        # The deployment checks that read other services (the identity provider's discovery): a serving
        # process refuses to start without them, other commands (migrate) do not need them.
        self.check(tags=["identity"], include_deployment_checks=True)
        extra = [a for a in options["daphne"] if a != "--"]
        if not any(a.startswith("--websocket_connect_timeout") for a in extra):
            extra = ["--websocket_connect_timeout", str(WS_CONNECT_TIMEOUT), *extra]
        if not settings.APTIX_MCP_APPS_ORIGIN:  # MCP Apps framed from the next port (aptix/apps_origin.py)
            extra = [*_apps_endpoint(options["bind"], options["port"]), *extra]
        cli = CommandLineInterface()
        cli.server_class = StartingServer
        cli.run(["-b", options["bind"], "-p", str(options["port"]), *extra, APPLICATION])
