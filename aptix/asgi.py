"""The ASGI application: `manage.py aptix_serve` / `daphne aptix.asgi:application` (ASGI_APPLICATION).

Importing this module has no side effect beyond loading Django. `router` is the Channels router;
`application` wraps it in RunOnFirstScope (aptix/startup.py), which runs the start-up hooks once,
when this process serves its first scope: Daphne has no ASGI lifespan, so that is the moment a
plain `daphne` process turns out to be a server. `manage.py aptix_serve` and `aptix_worker` run the
hooks as soon as they start. The hooks start the MCP host (tools/mcp/host.py), whose servers come up
in the background on its own thread, the runner's orphan sweep and the catalog tests' taker (queued
runs: agents/catalog_tests/execute.py) and the automations' clock (automations/scheduler.py: in the
workers only, with Redis); APTIX_MCP_AUTOSTART=false turns
the MCP host off. migrate, shell and the tests import this module without starting anything.
HTTP requests to /mcp/ go to Aptix's own MCP server (interop/mcp_server), the agent card and /a2a/ to
its A2A agent (interop/a2a), every other path to Django.
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "aptix.settings")
# Django first, so the app registry is ready before consumers and routing import models.
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from agents.catalog_tests.execute import start_catalog_tests  # noqa: E402
from agents.run.runners import start_runs  # noqa: E402
from agents.web.routing import websocket_urlpatterns  # noqa: E402
from aptix.origins import SameOriginValidator  # noqa: E402
from aptix.startup import RunOnFirstScope  # noqa: E402
from aptix.tracing import TracingMiddleware, configure  # noqa: E402
from automations.scheduler import start_automations  # noqa: E402
from files.knowledge import start_knowledge_indexer  # noqa: E402
from interop.a2a import A2aMount  # noqa: E402
from interop.mcp_server import McpMount  # noqa: E402
from tools.mcp import start_mcp_host  # noqa: E402

router = ProtocolTypeRouter(
    {
        # /mcp/: the MCP server (interop/mcp_server: bearer token first); /.well-known/agent-card.json and
        # /a2a/: the A2A agent (interop/a2a: the card public, the endpoint bearer token first); every other
        # path: Django.
        "http": A2aMount(McpMount(django_asgi_app)),
        "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)

configure("web")  # traces, when OTEL_EXPORTER_OTLP_ENDPOINT is set (aptix/tracing.py); else nothing
# Start-up hooks: run once, on the first scope this process serves (see the docstring).
application = RunOnFirstScope(
    TracingMiddleware(router),
    hooks=[start_mcp_host, start_runs, start_catalog_tests, start_knowledge_indexer, start_automations],
)
