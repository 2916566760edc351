"""The live stream's limits, rate limits, the login lockout and sign-in (see aptix/env/__init__.py)."""

from __future__ import annotations

from aptix.envtypes import Flag, Integer, IssuerUrl, LockoutBy, Number, OptionalText, Rate, Text

from .sections import LIMITS, SIGN_IN, STREAM

# --- Live stream ----------------------------------------------------------------------------------
APTIX_WS_MAX_PER_USER = Integer(
    "APTIX_WS_MAX_PER_USER", 20, STREAM, "live-stream sockets one process holds per user", minimum=1
)
APTIX_WS_MAX_PER_SESSION = Integer(
    "APTIX_WS_MAX_PER_SESSION", 8, STREAM, "live-stream sockets one process holds per session", minimum=1
)
APTIX_WS_REPLAY_MAX = Integer(
    "APTIX_WS_REPLAY_MAX",
    400,
    STREAM,
    "events a reconnecting page may have replayed; a page further behind is told to reload",
    minimum=1,
)
APTIX_WS_MAX_MESSAGE = Integer(
    "APTIX_WS_MAX_MESSAGE",
    4096,
    STREAM,
    "bytes of the largest frame a client may send on the (one-way) stream",
    minimum=128,
)
APTIX_WS_RECHECK = Number(
    "APTIX_WS_RECHECK",
    60.0,
    STREAM,
    "seconds between a socket's checks that its user may still read the session",
    minimum=0.01,
)
APTIX_WS_CATCHUP = Number(
    "APTIX_WS_CATCHUP",
    5.0,
    STREAM,
    "seconds a running turn may be quiet on a socket before the socket looks up its events in the database (an "
    "event the channel layer lost, a turn's end above all, still arrives)",
    minimum=0.01,
)
APTIX_WS_COMPRESSION = Flag(
    "APTIX_WS_COMPRESSION",
    True,
    STREAM,
    "compress websocket messages (permessage-deflate, with the context kept between messages) for clients that "
    "offer it, as browsers do; `manage.py aptix_serve` only",
)
APTIX_SESSION_PAGE_TURNS = Integer(
    "APTIX_SESSION_PAGE_TURNS",
    20,
    STREAM,
    "turns the session page draws at first; earlier ones load as you scroll up (*Load earlier turns*)",
    minimum=1,
)

# --- Rate limits and login lockout ----------------------------------------------------------------
APTIX_LOGIN_FAILURE_LIMIT = Integer(
    "APTIX_LOGIN_FAILURE_LIMIT", 5, LIMITS, "wrong passwords before a login is locked out; `0` turns the lockout off"
)
APTIX_LOGIN_ADDRESS_LIMIT = Integer(
    "APTIX_LOGIN_ADDRESS_LIMIT",
    50,
    LIMITS,
    "wrong passwords from one address, whatever the usernames, before logins from that address are "
    "refused for the cool-off (password spraying); users elsewhere are not affected; `0` turns it off",
)
APTIX_LOGIN_COOLOFF_MINUTES = Number(
    "APTIX_LOGIN_COOLOFF_MINUTES",
    15.0,
    LIMITS,
    "how long a lockout lasts; each attempt during it starts it again",
    minimum=0.1,
)
APTIX_LOGIN_LOCKOUT_BY = LockoutBy(
    "APTIX_LOGIN_LOCKOUT_BY",
    [["username", "ip_address"]],
    LIMITS,
    "what failures are counted for: `username+ip`, `ip`, `username`, or several, comma-separated",
)
APTIX_RATE_TURNS = Rate(
    "APTIX_RATE_TURNS", "30/m", LIMITS, "new messages and new conversations per user (web and API together)"
)
APTIX_RATE_API = Rate("APTIX_RATE_API", "120/m", LIMITS, "JSON API requests per token")
APTIX_RATE_BAD_TOKENS = Rate(
    "APTIX_RATE_BAD_TOKENS",
    "20/m",
    LIMITS,
    "requests with a missing or invalid bearer token per client address; past it, all of that address's bearer "
    "requests wait",
)
APTIX_RATE_INVITES = Rate(
    "APTIX_RATE_INVITES", "20/h", LIMITS, "requests to invitation links (`/invite/…`) per client address"
)
APTIX_RATE_SHARE_LINKS = Rate(
    "APTIX_RATE_SHARE_LINKS", "60/m", LIMITS, "requests to share links (`/s/…`) per client address"
)
APTIX_TRUSTED_PROXIES = Integer(
    "APTIX_TRUSTED_PROXIES",
    0,
    LIMITS,
    "proxies in front of Aptix that append to `X-Forwarded-For`; the client address is read from there only when "
    "set (0: none, the connection's address is the client's)",
)

# --- Sign-in --------------------------------------------------------------------------------------
APTIX_OIDC_ISSUER = IssuerUrl(
    "APTIX_OIDC_ISSUER",
    None,
    SIGN_IN,
    "the provider's issuer; https:// (http:// on loopback only), its discovery document read at start-up",
    default_doc="unset (local accounts only)",
    example="https://keycloak.example.com/realms/staff",
)
APTIX_OIDC_CLIENT_ID = OptionalText("APTIX_OIDC_CLIENT_ID", None, SIGN_IN, "Aptix's client ID at the provider")
APTIX_OIDC_CLIENT_SECRET = OptionalText("APTIX_OIDC_CLIENT_SECRET", None, SIGN_IN, "its client secret", secret=True)
APTIX_OIDC_NAME = Text("APTIX_OIDC_NAME", "SSO", SIGN_IN, "the provider's name on the button: Sign in with …")
APTIX_OIDC_SCOPES = Text("APTIX_OIDC_SCOPES", "openid email profile", SIGN_IN, "scopes asked of the provider")
APTIX_OIDC_GROUPS_CLAIM = Text("APTIX_OIDC_GROUPS_CLAIM", "groups", SIGN_IN, "the claim the group rules map")
APTIX_OIDC_API_AUDIENCE = OptionalText(
    "APTIX_OIDC_API_AUDIENCE",
    None,
    SIGN_IN,
    "`/api/v1/`, the MCP server and the A2A agent also take the provider's JWT access tokens for it; the MCP "
    "server then publishes OAuth protected resource metadata naming the provider (docs/serving-agents.md)",
)
APTIX_OIDC_LINK_BY_EMAIL = Flag(
    "APTIX_OIDC_LINK_BY_EMAIL",
    False,
    SIGN_IN,
    "an admin's link with an empty subject is claimed by the first sign-in whose e-mail matches and whose "
    "`email_verified` claim is true; `false`: accounts are linked by the provider's subject only",
)
APTIX_PUBLIC_LINKS = Flag(
    "APTIX_PUBLIC_LINKS",
    False,
    SIGN_IN,
    "whether authors may make public read-only links to a session, opened without signing in; `false` "
    "also refuses the public links made while it was on",
)
APTIX_LOCAL_LOGIN = Flag(
    "APTIX_LOCAL_LOGIN", True, SIGN_IN, "password sign-in; `false`: superusers only, at `/login/local/`"
)
