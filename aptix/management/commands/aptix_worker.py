"""`manage.py aptix_worker`: a worker process of a multi-process deployment (REDIS_URL set). It runs
turns from the run queue (agents/run/worker.py) until SIGTERM/SIGINT, then gives its running turns
`--grace` seconds to end."""

from __future__ import annotations

import argparse
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from agents.run.worker import serve_forever
from aptix.tracing import configure


class Command(BaseCommand):
    help = "Run turns from the run queue (needs REDIS_URL)."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--grace", type=float, default=None, help="seconds running turns get to end on SIGTERM (APTIX_WORKER_GRACE)"
        )
        parser.add_argument(
            "--health-port",
            type=int,
            default=None,
            help="serve /healthz, /readyz and /metrics on this port (APTIX_WORKER_HEALTH_HOST, loopback by default); "
            "they fail when the worker's event loop is stuck",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        # The deployment checks that read other services (the identity provider's discovery): a serving
        # process refuses to start without them, other commands (migrate) do not need them.
        self.check(tags=["identity"], include_deployment_checks=True)
        if not settings.REDIS_URL:
            raise CommandError("aptix_worker needs REDIS_URL: without it every web process runs its own turns.")
        configure("worker")  # traces, when OTEL_EXPORTER_OTLP_ENDPOINT is set (first: aptix.asgi's is then a no-op)
        from aptix.asgi import application  # the serving process's start-up hooks: MCP host, orphan sweep

        serve_forever(options["grace"], start_up=application.run_hooks, health_port=options["health_port"])
