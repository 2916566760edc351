"""Reading settings from the environment: a value that cannot be used stops the start with
ImproperlyConfigured naming the variable (aptix/settings.py)."""

from __future__ import annotations

import os
from typing import overload

from django.core.exceptions import ImproperlyConfigured


@overload
def env_str(name: str) -> str | None: ...
@overload
def env_str(name: str, default: str) -> str: ...
@overload
def env_str(name: str, default: str | None) -> str | None: ...
def env_str(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    return value if value not in (None, "") else default


def env_bool(name: str, default: bool = False) -> bool:
    value = env_str(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, not {value!r}.")


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    return _env_number(name, default, minimum, int, "an integer")


def env_float(name: str, default: float, *, minimum: float = 0.0) -> float:
    return _env_number(name, default, minimum, float, "a number")


def _env_number(name, default, minimum, parse, kind):
    value = env_str(name)
    if value is None:
        return default
    try:
        number = parse(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be {kind}, not {value!r}.") from None
    if not number >= minimum:  # also refuses NaN
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, not {value}.")
    return number


def env_list(name: str, default: list[str]) -> list[str]:
    value = env_str(name)
    if value is None:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]
