"""A user's preferences (the settings page): read with defaults, and update."""

from __future__ import annotations

from .models import UserPreferences


def preferences_get(*, user) -> UserPreferences:
    """The user's preferences; an unsaved row with the defaults when they never saved any."""
    found = UserPreferences.objects.filter(user=user).first()
    return found or UserPreferences(user=user)


def preferences_update(
    *,
    user,
    default_mode: str,
    default_execution: str,
    theme: str,
    notify_turns: bool,
    notify_inbox: bool | None = None,
) -> UserPreferences:
    """Save the user's preferences. `default_mode` is a mode key the caller checked against the
    catalog (modes come after aptix in the import order), or "" for the catalog's default."""
    preferences = preferences_get(user=user)
    preferences.default_mode = default_mode
    preferences.default_execution = default_execution
    preferences.theme = theme
    preferences.notify_turns = notify_turns
    if notify_inbox is not None:  # None: unchanged (callers that predate the inbox)
        preferences.notify_inbox = notify_inbox
    preferences.full_clean()
    preferences.save()
    return preferences


def preferences_set_notify_inbox(*, user, on: bool) -> UserPreferences:
    """The inbox page's "Notify me in this browser": only that preference changes."""
    preferences = preferences_get(user=user)
    preferences.notify_inbox = on
    preferences.full_clean()
    preferences.save()
    return preferences
