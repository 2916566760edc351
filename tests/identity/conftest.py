"""Aptix configured for the test provider (in this process: the test client signs in through it)."""

from __future__ import annotations

import pytest

from identity.provider import forget
from tests.helpers.oidc import CLIENT_ID, CLIENT_SECRET


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
