"""Signing in with the company's identity provider (OpenID Connect): discovery, the ID token's checks,
accounts keyed by the provider's `sub`, and teams, roles and staff groups from its group claims."""
