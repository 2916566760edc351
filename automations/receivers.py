"""The automations follow their turns at once when the process that ran one says it stopped
(agents.turns.run_stopped); the scheduler's tick (scheduler.py) follows them too, for what no
signal tells (a process killed mid-run, a turn cancelled while it waited). An owner who leaves the
team or is deactivated has their automations stopped at once, saying why."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from agents.turns import run_stopped
from aptix.models import Membership

from .models import AutomationRun
from .runs import automations_stop_for, run_follow


@receiver(run_stopped, dispatch_uid="automations.run_stopped")
def follow_stopped_turn(sender: Any, turn: Any, **kwargs: Any) -> None:
    run = AutomationRun.objects.filter(turn_id=turn.pk).select_related("automation", "automation__owner").first()
    if run is not None and not run.is_final:
        run_follow(run)


@receiver(post_delete, sender=Membership, dispatch_uid="automations-owner-left-team")
def stop_automations_of_leaver(sender: Any, instance: Membership, **kwargs: Any) -> None:
    """A member who leaves a team: their automations in it stop, saying why."""
    automations_stop_for(user=instance.user_id, team=instance.team_id)


@receiver(post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="automations-owner-deactivated")
def stop_automations_of_inactive_user(sender: Any, instance: Any, **kwargs: Any) -> None:
    if not instance.is_active:
        automations_stop_for(user=instance.pk)
