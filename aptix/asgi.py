import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "aptix.settings")
# Django first, so the app registry is ready before consumers and routing import models.
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ChannelNameRouter, ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from agents.routing import websocket_urlpatterns  # noqa: E402
from agents.runs import RUN_CHANNEL, RunWorkerConsumer  # noqa: E402
from tools.mcp.host import start_mcp_host  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
        # `manage.py runworker aptix-runs` (with REDIS_URL): turns dispatched by web processes.
        "channel": ChannelNameRouter({RUN_CHANNEL: RunWorkerConsumer.as_asgi()}),
    }
)

# Daphne has no ASGI lifespan, so the MCP servers start here, in every process that imports the
# application (Daphne, `runworker`), in the background on the MCP host's own thread.
start_mcp_host()
