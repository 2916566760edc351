"""The real OpenID Connect provider of the sign-in tests (tests/oidc_provider/) as a process on a free
loopback port, and the ways tests drive it: its users and their groups, a key rotation, a sign-in
through its login form (in-process for Aptix: the test client posts the button and receives the
callback; `requests` plays the browser at the provider), and ID tokens of the tests' own making."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import jwt
import pytest
import requests
from django.conf import settings
from jwcrypto.jwk import JWK

from identity.provider import forget

ROOT = Path(settings.BASE_DIR)
CLIENT_ID = "aptix"
CLIENT_SECRET = "aptix-test-secret"
API_AUDIENCE = "aptix-api"
PASSWORD = "provider-password"
START_TIMEOUT = 60.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class OidcProvider:
    directory: Path
    port: int = 0
    process: subprocess.Popen | None = None
    subjects: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def issuer(self) -> str:
        return f"{self.url}/o"

    def start(self) -> OidcProvider:
        self.port = free_port()
        log = (self.directory / "provider.log").open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.oidc_provider", str(self.port), str(self.directory)],
            cwd=ROOT,
            env={k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the test provider exited: {(self.directory / 'provider.log').read_text()}")
            with contextlib.suppress(requests.RequestException):
                if requests.get(f"{self.issuer}/.well-known/openid-configuration", timeout=2).ok:
                    return self
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("the test provider did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()

    def aptix_env(self, **extra: str) -> dict[str, str]:
        """The environment of an Aptix process signing in with this provider."""
        return {
            "APTIX_OIDC_ISSUER": self.issuer,
            "APTIX_OIDC_CLIENT_ID": CLIENT_ID,
            "APTIX_OIDC_CLIENT_SECRET": CLIENT_SECRET,
            "APTIX_OIDC_NAME": "Test IdP",
            **extra,
        }

    def user(self, username: str, *, groups: list[str] = (), **fields: Any) -> str:  # type: ignore[assignment]
        """Create or change a user at the provider; their `sub`."""
        body = {"username": username, "password": PASSWORD, "groups": list(groups), **fields}
        response = requests.post(f"{self.url}/test/user/", json=body, timeout=10)
        response.raise_for_status()
        self.subjects[username] = response.json()["sub"]
        return self.subjects[username]

    def metadata_documents(self, *, on: bool = True) -> list[str]:
        """Take client ID metadata documents (tests/oidc_provider/metadata_documents.py), or stop; the
        URLs of the documents fetched so far."""
        response = requests.post(f"{self.url}/test/metadata-documents/", json={"on": on}, timeout=10)
        response.raise_for_status()
        return list(response.json()["fetched"])

    def rotate(self, *, keep_old: bool) -> dict[str, str]:
        response = requests.post(f"{self.url}/test/rotate/", json={"keep_old": keep_old}, timeout=10)
        response.raise_for_status()
        return response.json()

    def key_pem(self) -> str:
        return requests.get(f"{self.url}/test/key/", timeout=10).json()["pem"]

    def sign_token(self, claims: dict[str, Any], *, pem: str | None = None) -> str:
        """A JWT signed with the provider's current key (or `pem`), with the key's ID as the provider names it."""
        pem = pem or self.key_pem()
        kid = JWK.from_pem(pem.encode()).thumbprint()
        return jwt.encode(claims, pem, algorithm="RS256", headers={"kid": kid})

    def id_claims(self, username: str, *, nonce: str, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "aud": CLIENT_ID,
            "sub": self.subjects[username],
            "iat": now,
            "exp": now + 300,
            "nonce": nonce,
            "email": f"{username}@example.com",
        }
        return {**claims, **overrides}

    def authorize(self, authorize_url: str, username: str, *, browser: requests.Session | None = None) -> str:
        """Play the browser at the provider: its login form, then the authorization; the URL it sends
        the browser back to (Aptix's callback with code and state)."""
        browser = browser or requests.Session()
        response = browser.get(authorize_url, allow_redirects=False, timeout=10)
        if response.status_code == 302 and "/accounts/login/" in response.headers["Location"]:
            login_url = urljoin(self.url, response.headers["Location"])
            page = browser.get(login_url, timeout=10)
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
            assert token, page.text
            nxt = parse_qs(urlsplit(login_url).query)["next"][0]
            response = browser.post(
                login_url,
                data={"username": username, "password": PASSWORD, "next": nxt, "csrfmiddlewaretoken": token[1]},
                headers={"Referer": login_url},
                allow_redirects=False,
                timeout=10,
            )
            assert response.status_code == 302, response.text
            response = browser.get(urljoin(self.url, response.headers["Location"]), allow_redirects=False, timeout=10)
        assert response.status_code == 302, response.text
        return response.headers["Location"]


def start_sign_in(client: Any) -> tuple[str, dict[str, str]]:
    """Press Aptix's button in the test client: the provider's authorization URL and its parameters."""
    response = client.post("/sign-in/start/")
    assert response.status_code == 302, response.content
    location = response["Location"]
    return location, {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def sign_in(client: Any, provider: OidcProvider, username: str) -> Any:
    """The whole sign-in: Aptix's button, the provider's login form, Aptix's callback. The callback's response."""
    authorize_url, _ = start_sign_in(client)
    callback = provider.authorize(authorize_url, username)
    parts = urlsplit(callback)
    assert parts.path == "/sign-in/callback/", callback
    return client.get(f"{parts.path}?{parts.query}")


# Fixtures (imported by the conftest of the tests that sign in through the provider).
@pytest.fixture
def provider_settings(settings):
    """Aptix's settings as APTIX_OIDC_* make them, pointing at `issuer` (no provider process needed)."""

    def configure(issuer: str, **extra):
        settings.APTIX_OIDC_ISSUER = issuer
        settings.OIDC_RP_CLIENT_ID = CLIENT_ID
        settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
        settings.APTIX_OIDC_NAME = "Test IdP"
        settings.AUTHENTICATION_BACKENDS = [*settings.AUTHENTICATION_BACKENDS, "identity.backend.ProviderBackend"]
        for name, value in extra.items():
            setattr(settings, name, value)
        forget()
        return settings

    yield configure
    forget()


@pytest.fixture
def signing_in(provider_settings, oidc_provider):
    """Aptix signing in with the real test provider; the provider."""
    provider_settings(oidc_provider.issuer)
    return oidc_provider
