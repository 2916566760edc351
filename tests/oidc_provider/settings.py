"""Settings of the test provider: its state (SQLite database, keys) lives in OIDC_PROVIDER_DIR."""

from __future__ import annotations

import os
from pathlib import Path

DIR = Path(os.environ["OIDC_PROVIDER_DIR"])
PORT = int(os.environ["OIDC_PROVIDER_PORT"])
ISSUER = f"http://127.0.0.1:{PORT}/o"
API_AUDIENCE = "aptix-api"

SECRET_KEY = "test-provider-only"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "tests.oidc_provider.metadata_documents.middleware",
]
ROOT_URLCONF = "tests.oidc_provider.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [Path(__file__).parent / "templates"],
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    }
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(DIR / "provider.sqlite3")}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
LOGIN_URL = "/accounts/login/"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Cookies are per host, not per port: Aptix on another loopback port must keep its own.
SESSION_COOKIE_NAME = "provider_sessionid"
CSRF_COOKIE_NAME = "provider_csrftoken"

OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_ISS_ENDPOINT": ISSUER,
    "OIDC_RSA_PRIVATE_KEY": (DIR / "key.pem").read_text(),
    "OIDC_RP_INITIATED_LOGOUT_ENABLED": True,
    "OIDC_RP_INITIATED_LOGOUT_ALWAYS_PROMPT": False,
    "PKCE_REQUIRED": True,
    "SCOPES": {"openid": "OpenID Connect", "email": "E-mail", "profile": "Profile"},
    "OAUTH2_VALIDATOR_CLASS": "tests.oidc_provider.validator.Validator",
    "ACCESS_TOKEN_GENERATOR": "tests.oidc_provider.validator.jwt_access_token",
}
