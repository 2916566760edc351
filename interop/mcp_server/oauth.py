"""OAuth for the MCP server, as the MCP authorization spec describes: when Aptix signs people in with an
identity provider and takes that provider's access tokens for programs (APTIX_OIDC_ISSUER and
APTIX_OIDC_API_AUDIENCE both set), `/mcp/` is an OAuth protected resource.

- Its metadata (RFC 9728, the mcp SDK's ProtectedResourceMetadata) is served without a token at
  `/.well-known/oauth-protected-resource/mcp/` (and the spellings clients try: without the slash, and
  at the root): the resource is `/mcp/` on the origin the client reached, its authorization server
  the provider's issuer, its scopes the ones Aptix asks the provider for (APTIX_OIDC_SCOPES).
- A request without a valid token is answered 401 with
  `WWW-Authenticate: Bearer realm="aptix", resource_metadata="<that URL>"`, which is where an MCP
  client starts its authorization flow (discovery, the provider's login, PKCE).
- The token the client then sends is checked as any of the provider's access tokens on the JSON API
  (identity/access_tokens.py via aptix/bearer.py): its signature, issuer, audience
  (APTIX_OIDC_API_AUDIENCE), expiry, and the account of its subject, who must have signed in once.

Without those settings there is no metadata (404) and Aptix API tokens are the only way in."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from mcp.shared.auth import ProtectedResourceMetadata

METADATA_PATH = "/.well-known/oauth-protected-resource/mcp/"
PATHS = frozenset({METADATA_PATH, METADATA_PATH.rstrip("/"), "/.well-known/oauth-protected-resource"})
ERROR_OFF = "This Aptix takes no OAuth tokens for its MCP server: use an API token (Settings → API tokens)."


def enabled() -> bool:
    """Whether the MCP server takes the identity provider's access tokens (and says so)."""
    return bool(settings.APTIX_OIDC_ISSUER and settings.APTIX_OIDC_API_AUDIENCE)


def metadata(origin: str) -> dict[str, Any]:
    """The protected resource metadata of the MCP server reached at `origin` (scheme://host)."""
    scopes = (settings.OIDC_RP_SCOPES or "").split()
    document = ProtectedResourceMetadata.model_validate(
        {
            "resource": f"{origin}/mcp/",
            "authorization_servers": [settings.APTIX_OIDC_ISSUER],
            "scopes_supported": scopes or None,
            "bearer_methods_supported": ["header"],
            "resource_name": "Aptix",
        }
    )
    return document.model_dump(mode="json", exclude_none=True)


def challenge(origin: str) -> str:
    """The WWW-Authenticate header of a 401 from `/mcp/`: where the metadata is, when there is some."""
    if not enabled():
        return 'Bearer realm="aptix"'
    return f'Bearer realm="aptix", resource_metadata="{origin}{METADATA_PATH}"'
