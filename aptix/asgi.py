"""The ASGI application: `daphne aptix.asgi:application`, and `manage.py runworker` (ASGI_APPLICATION).

Importing this module has no side effect beyond loading Django. `router` is the Channels router;
`application` wraps it in RunOnFirstScope (aptix/startup.py), which runs the start-up hooks once,
when this process serves its first scope: Daphne has no ASGI lifespan, so that is the moment a
process turns out to be a server (Daphne: the first request or websocket; runworker: the first
channel message). The one hook starts the MCP host (tools/mcp/host.py), whose servers come up in
the background on its own thread; APTIX_MCP_AUTOSTART=false turns it off. migrate, shell and the
tests import this module without starting anything.
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "aptix.settings")
# Django first, so the app registry is ready before consumers and routing import models.
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ChannelNameRouter, ProtocolTypeRouter, URLRouter  # noqa: E402

from agents.run.runners import RUN_CHANNEL, RunWorkerConsumer, start_runs  # noqa: E402
from agents.web.routing import websocket_urlpatterns  # noqa: E402
from aptix.origins import SameOriginValidator  # noqa: E402
from aptix.startup import RunOnFirstScope  # noqa: E402
from tools.mcp.host import start_mcp_host  # noqa: E402

router = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
        # `manage.py runworker aptix-runs` (with REDIS_URL): turns dispatched by web processes.
        "channel": ChannelNameRouter({RUN_CHANNEL: RunWorkerConsumer.as_asgi()}),
    }
)

# Start-up hooks: run once, on the first scope this process serves (see the docstring).
application = RunOnFirstScope(router, hooks=[start_mcp_host, start_runs])
