"""Encryption at rest of users' credentials: Fernet (AES-128-CBC with HMAC-SHA256) with the keys of
APTIX_SECRETS_KEY through `cryptography`'s MultiFernet, so keys rotate: the first key encrypts, every
key decrypts, and `reseal` re-encrypts a value with the first.

The keys come from the environment only (aptix/env/runs.py): a copy of the database, a backup or a
dump, holds ciphertext without the means to read it. What is sealed is a JSON object; nothing here
logs a value, and the errors never quote one."""

from __future__ import annotations

import functools
import json
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

MISSING_KEY = (
    "APTIX_SECRETS_KEY is not set: users' MCP credentials (an mcp.json entry with \"auth\" or ${user:NAME}) are "
    "stored encrypted with it. Generate one with "
    "`python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'` and set it in "
    "the environment of every web and worker process (docs/mcp.md#per-user-credentials)."
)


class SecretsKeyMissing(ImproperlyConfigured):
    """Per-user credentials are used without APTIX_SECRETS_KEY."""


class SealBroken(ValueError):
    """A sealed value no key of APTIX_SECRETS_KEY opens (a key dropped too early, or tampering)."""


def configured() -> bool:
    return bool(settings.APTIX_SECRETS_KEY)


@functools.lru_cache(maxsize=4)
def _cipher(keys: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(key) for key in keys])


def cipher() -> MultiFernet:
    keys = tuple(settings.APTIX_SECRETS_KEY)
    if not keys:
        raise SecretsKeyMissing(MISSING_KEY)
    return _cipher(keys)


def seal(value: dict[str, Any]) -> str:
    """`value` as JSON, encrypted with the first key: ASCII text for a TextField."""
    return cipher().encrypt(json.dumps(value, separators=(",", ":")).encode("utf-8")).decode("ascii")


def unseal(sealed: str) -> dict[str, Any]:
    try:
        value = json.loads(cipher().decrypt(sealed.encode("ascii")))
    except InvalidToken:
        raise SealBroken("no key of APTIX_SECRETS_KEY opens this credential") from None
    if not isinstance(value, dict):
        raise SealBroken("this credential is not an object")
    return value


def reseal(sealed: str) -> str:
    """The same value encrypted with the first key (after a rotation)."""
    try:
        return cipher().rotate(sealed.encode("ascii")).decode("ascii")
    except InvalidToken:
        raise SealBroken("no key of APTIX_SECRETS_KEY opens this credential") from None
