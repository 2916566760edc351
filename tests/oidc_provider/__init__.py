"""A real OpenID Connect provider for the sign-in tests: a small Django project on django-oauth-toolkit
with OIDC on, RS256 keys generated at its start, users with groups in their claims, and RP-initiated
logout. It runs as its own process (`python -m tests.oidc_provider <port> <dir>`, started by
tests/helpers/oidc.py); nothing here imports Aptix. Test-only endpoints under /test/ change users'
groups and rotate the signing key."""
