"""APTIX_EMAIL_URL → Django's e-mail settings (read by aptix/settings.py; no Django here).

`smtp://user:password@host:587` sends with STARTTLS, `smtps://user:password@host:465` over TLS from the
start, `smtp+plain://host:25` without encryption (a relay on the same host); unset, messages are written
to the process's output (Django's console backend), which is what development wants. The user and
password are URL-quoted where they hold `@`, `:` or `/`.
"""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import unquote, urlsplit

CONSOLE = "django.core.mail.backends.console.EmailBackend"
SMTP = "django.core.mail.backends.smtp.EmailBackend"
PORTS = {"smtp": 587, "smtps": 465, "smtp+plain": 25}


class EmailSettings(NamedTuple):
    backend: str
    host: str = "localhost"
    port: int = 25
    user: str = ""
    password: str = ""
    use_tls: bool = False
    use_ssl: bool = False


def email_settings(url: str | None) -> EmailSettings:
    """The settings of an APTIX_EMAIL_URL; ValueError naming what is wrong with it."""
    if not url:
        return EmailSettings(backend=CONSOLE)
    parts = urlsplit(url)
    if parts.scheme not in PORTS or not parts.hostname:
        raise ValueError("APTIX_EMAIL_URL must be smtp://, smtps:// or smtp+plain:// with a host, e.g. smtp://host:587")
    return EmailSettings(
        backend=SMTP,
        host=parts.hostname,
        port=parts.port or PORTS[parts.scheme],
        user=unquote(parts.username or ""),
        password=unquote(parts.password or ""),
        use_tls=parts.scheme == "smtp",
        use_ssl=parts.scheme == "smtps",
    )
