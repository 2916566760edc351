"""The kinds of environment variable (aptix/env/ declares each variable with one): how a value
is read, checked and written back.

No Django here: the SQL MCP server reads its limits through these and must start fast. A value that
cannot be used raises SettingError naming the variable and the problem; aptix/settings.py turns it
into ImproperlyConfigured, so a bad value stops the start with that message. Unset and empty mean the
default.
"""

from __future__ import annotations

import base64
import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from typing import Generic, TypeVar
from urllib.parse import urlsplit

T = TypeVar("T")


class SettingError(ValueError):
    """A variable's value cannot be used; the message names the variable and says why."""


@dataclass(frozen=True)
class Section:
    title: str
    about: str  # Markdown for docs/configuration.md: what the section covers and where it is explained


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One variable. `default` is what an unset (or empty) variable means; None where the default is
    worked out elsewhere, and then `default_doc` says what it is."""

    name: str
    default: T
    section: Section
    help: str  # one line of Markdown: what it does
    _: KW_ONLY
    secret: bool = False  # never has a default, left empty in .env.example
    default_doc: str | None = None  # the default in words, where it is not a plain value
    example: str | None = None  # a sample value for the docs when the default is empty
    child_process: str | None = None  # set for a process Aptix starts, not for Aptix: where it is set

    def read(self, environ: Mapping[str, str] | None = None) -> T:
        raw = (os.environ if environ is None else environ).get(self.name)
        if raw is None or raw == "":
            return self.default
        return self.convert(raw)

    def convert(self, raw: str) -> T:
        raise NotImplementedError

    def text(self, value: T) -> str:
        """The value as it would be written in the environment."""
        return "" if value is None else str(value)


@dataclass(frozen=True)
class Text(Setting[str]):
    def convert(self, raw: str) -> str:
        return raw


@dataclass(frozen=True)
class OptionalText(Setting[str | None]):
    def convert(self, raw: str) -> str | None:
        return raw


@dataclass(frozen=True)
class Choice(Setting[str]):
    _: KW_ONLY
    choices: tuple[str, ...] = ()

    def convert(self, raw: str) -> str:
        value = raw.lower()
        if value not in self.choices:
            *first, last = [repr(choice) for choice in self.choices]
            raise SettingError(f"{self.name} must be {', '.join(first)} or {last}, not {value!r}.")
        return value


@dataclass(frozen=True)
class Flag(Setting[bool]):
    def convert(self, raw: str) -> bool:
        lowered = raw.strip().lower()
        if lowered in {"1", "true", "yes", "on"}:
            return True
        if lowered in {"0", "false", "no", "off"}:
            return False
        raise SettingError(f"{self.name} must be true or false, not {raw!r}.")

    def text(self, value: bool) -> str:
        return "true" if value else "false"


@dataclass(frozen=True)
class Integer(Setting[int]):
    _: KW_ONLY
    minimum: int = 0

    def convert(self, raw: str) -> int:
        try:
            number = int(raw)
        except ValueError:
            raise SettingError(f"{self.name} must be an integer, not {raw!r}.") from None
        if not number >= self.minimum:
            raise SettingError(f"{self.name} must be at least {self.minimum}, not {raw}.")
        return number


@dataclass(frozen=True)
class Number(Setting[float]):
    _: KW_ONLY
    minimum: float = 0.0

    def convert(self, raw: str) -> float:
        try:
            number = float(raw)
        except ValueError:
            raise SettingError(f"{self.name} must be a number, not {raw!r}.") from None
        if not number >= self.minimum:  # also refuses NaN
            raise SettingError(f"{self.name} must be at least {self.minimum}, not {raw}.")
        return number

    def text(self, value: float) -> str:
        return f"{value:g}"


@dataclass(frozen=True)
class PositiveInteger(Setting[int]):
    """The SQL MCP server's limits: surrounding spaces ignored, a positive integer, at least
    `minimum` (in `unit`)."""

    _: KW_ONLY
    minimum: int = 1
    unit: str = ""

    def convert(self, raw: str) -> int:
        stripped = raw.strip()
        if not stripped:
            return self.default
        try:
            value = int(stripped)
        except ValueError:
            value = 0
        if value < 1:
            raise SettingError(f"{self.name} must be a positive integer, not {stripped!r}")
        if value < self.minimum:
            raise SettingError(f"{self.name} must be at least {self.minimum} ({self.unit}), not {value}")
        return value


@dataclass(frozen=True)
class Items(Setting[list[str]]):
    """Comma-separated; spaces around items and empty items are dropped."""

    def convert(self, raw: str) -> list[str]:
        return split_items(raw)

    def text(self, value: list[str]) -> str:
        return ",".join(value)


@dataclass(frozen=True)
class FernetKeys(Setting[list[str] | None]):
    """Comma-separated Fernet keys (what `cryptography`'s `Fernet.generate_key()` prints: 32 bytes in
    URL-safe base64), newest first: the first encrypts, every one decrypts, so a key is rotated by
    putting a new one in front. Checked here without `cryptography` (this module must import fast)."""

    def convert(self, raw: str) -> list[str] | None:
        keys = split_items(raw)
        for position, key in enumerate(keys, start=1):
            try:
                decoded = base64.urlsafe_b64decode(key.encode("ascii"))
            except (ValueError, UnicodeEncodeError):
                decoded = b""
            if len(decoded) != 32:
                # Never the key itself in the message: it is a secret.
                raise SettingError(
                    f"{self.name}: key {position} is not a Fernet key (32 bytes in URL-safe base64, as "
                    "`python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'` "
                    "prints one)."
                )
        return keys or None

    def text(self, value: list[str] | None) -> str:
        return ",".join(value or [])


LOOPBACK_NAMES = {"localhost"}


def is_loopback(host: str | None) -> bool:
    """Whether `host` (a URL's host name, brackets stripped) names this machine."""
    if not host:
        return False
    if host.lower() in LOOPBACK_NAMES or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class IssuerUrl(Setting[str | None]):
    """An OpenID Connect issuer: an https:// URL, or http:// on loopback only (development and tests),
    since tokens and the client secret travel to it. A trailing slash is kept: the issuer must match
    the provider's `iss` exactly."""

    def convert(self, raw: str) -> str | None:
        value = raw.strip()
        parts = urlsplit(value)
        if parts.scheme not in {"https", "http"} or not parts.hostname:
            raise SettingError(f"{self.name} must be an https:// URL, not {value!r}.")
        if parts.query or parts.fragment:
            raise SettingError(f"{self.name} must have no query or fragment, not {value!r}.")
        if parts.scheme == "http" and not is_loopback(parts.hostname):
            raise SettingError(
                f"{self.name} must be an https:// URL: http:// is allowed only on loopback (127.0.0.1, ::1, "
                f"localhost), for development and tests; not {value!r}."
            )
        return value


def origin_of(url: str) -> str:
    """scheme://host[:port] of a URL."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def split_items(raw: str) -> list[str]:
    return [item.strip() for item in raw.split(",") if item.strip()]


RATE = re.compile(r"[1-9]\d*/([1-9]\d*)?[smhd]")


@dataclass(frozen=True)
class Rate(Setting[str | None]):
    """A django-ratelimit rate such as `30/m` or `100/5m` (s, m, h, d); `off` or `0` turns it off (None)."""

    def convert(self, raw: str) -> str | None:
        value = raw.strip().lower()
        if value in {"0", "off"}:
            return None
        if not RATE.fullmatch(value):
            raise SettingError(f"{self.name} must be a rate such as 30/m, 100/5m or 1000/h, or off; not {value!r}.")
        return value

    def text(self, value: str | None) -> str:
        return "off" if value is None else value


LockoutParameters = list[str | list[str]]
LOCKOUT_FIELDS = {"username": "username", "ip": "ip_address"}


@dataclass(frozen=True)
class LockoutBy(Setting[LockoutParameters]):
    """Comma-separated alternatives, each `username`, `ip` or `username+ip`: what a failure count is
    kept for (django-axes' AXES_LOCKOUT_PARAMETERS)."""

    def convert(self, raw: str) -> LockoutParameters:
        parameters: LockoutParameters = []
        for group in split_items(raw):
            names = [part.strip() for part in group.split("+")]
            if not names or any(part not in LOCKOUT_FIELDS for part in names):
                raise SettingError(f"{self.name}: {group!r} is not username, ip or username+ip.")
            combined = [LOCKOUT_FIELDS[part] for part in dict.fromkeys(names)]
            parameters.append(combined[0] if len(combined) == 1 else combined)
        return parameters

    def text(self, value: LockoutParameters) -> str:
        names = {field: name for name, field in LOCKOUT_FIELDS.items()}
        groups = [[part] if isinstance(part, str) else part for part in value]
        return ",".join("+".join(names[field] for field in group) for group in groups)
