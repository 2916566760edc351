"""A deactivated user's credentials go at once: a leaver's tokens must not outlive their account
(an admin unticking "active", the provider's sign-in rules, a script's `save()`)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models.signals import post_save
from django.dispatch import receiver

from .store import credentials_remove_for_user


@receiver(post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="connections-deactivated-user")
def remove_credentials_of_inactive_user(sender: Any, instance: Any, **kwargs: Any) -> None:
    if not instance.is_active:
        credentials_remove_for_user(instance)
