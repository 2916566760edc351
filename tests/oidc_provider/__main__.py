"""`python -m tests.oidc_provider <port> <dir>`: a new RS256 key, the database migrated, Aptix's client
registered (redirect URIs on loopback, any port, as RFC 8252 allows) and its public client for MCP
servers (`aptix-mcp`), then serve until killed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .keys import new_private_key

CLIENT_ID = "aptix"
CLIENT_SECRET = "aptix-test-secret"
REDIRECTS = "http://testserver/sign-in/callback/ http://127.0.0.1/sign-in/callback/"
LOGOUT_REDIRECTS = "http://testserver/login/ http://127.0.0.1/login/"
# Aptix as the public client of an OAuth-protected MCP server (PKCE, no secret), for the MCP tests.
MCP_CLIENT_ID = "aptix-mcp"
MCP_REDIRECTS = "http://testserver/mcp/oauth/callback http://127.0.0.1/mcp/oauth/callback"


def main() -> None:
    port, directory = int(sys.argv[1]), Path(sys.argv[2])
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "key.pem").write_text(new_private_key())
    os.environ.update(
        OIDC_PROVIDER_DIR=str(directory),
        OIDC_PROVIDER_PORT=str(port),
        DJANGO_SETTINGS_MODULE="tests.oidc_provider.settings",
    )
    import django

    django.setup()
    from django.core.management import call_command
    from django.core.servers.basehttp import run
    from django.core.wsgi import get_wsgi_application
    from oauth2_provider.models import get_application_model

    call_command("migrate", verbosity=0)
    get_application_model().objects.update_or_create(
        client_id=CLIENT_ID,
        defaults={
            "name": "Aptix",
            "client_secret": CLIENT_SECRET,
            "client_type": "confidential",
            "authorization_grant_type": "authorization-code",
            "redirect_uris": REDIRECTS,
            "post_logout_redirect_uris": LOGOUT_REDIRECTS,
            "algorithm": "RS256",
            "skip_authorization": True,
        },
    )
    get_application_model().objects.update_or_create(
        client_id=MCP_CLIENT_ID,
        defaults={
            "name": "Aptix MCP",
            "client_type": "public",
            "authorization_grant_type": "authorization-code",
            "redirect_uris": MCP_REDIRECTS,
            "algorithm": "RS256",
            "skip_authorization": True,
        },
    )
    run("127.0.0.1", port, get_wsgi_application(), threading=True)


if __name__ == "__main__":
    main()
