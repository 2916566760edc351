"""The automations follow their turns at once when the process that ran one says it stopped
(agents.turns.run_stopped); the scheduler's tick (scheduler.py) follows them too, for what no
signal tells (a process killed mid-run, a turn cancelled while it waited)."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from agents.turns import run_stopped

from .models import AutomationRun
from .runs import run_follow


@receiver(run_stopped, dispatch_uid="automations.run_stopped")
def follow_stopped_turn(sender: Any, turn: Any, **kwargs: Any) -> None:
    run = AutomationRun.objects.filter(turn_id=turn.pk).select_related("automation", "automation__owner").first()
    if run is not None and not run.is_final:
        run_follow(run)
