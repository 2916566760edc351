"""The provider's start-up check: with APTIX_OIDC_ISSUER set, its discovery document must be readable
and name the same issuer and https:// endpoints, or the process does not start (a system check error
saying what is wrong), instead of failing at the first sign-in.

It reads the provider over the network, so it is a deployment check: the serving processes run it as
they start (aptix_serve, aptix_worker) and so does `manage.py check --deploy`, while `migrate` and the
other commands do not — a database upgrade must not wait for the identity provider to be up."""

from __future__ import annotations

from typing import Any

from django.core.checks import Error, register

from .provider import ProviderError, configured, provider


@register("identity", deploy=True)
def provider_discovered(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    if not configured():
        return []
    try:
        provider(fresh=True)
    except ProviderError as exc:
        return [Error(str(exc), hint="Check APTIX_OIDC_ISSUER and that the provider is reachable.", id="identity.E001")]
    return []
