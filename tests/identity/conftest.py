"""Aptix configured for the test provider (in this process: the test client signs in through it)."""

from __future__ import annotations

from tests.helpers.oidc import provider_settings, signing_in  # noqa: F401 - fixtures of the sign-in tests
