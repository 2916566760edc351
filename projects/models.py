"""A project: a team's shared context that many sessions draw on (docs/workspace.md#projects).

Written only by projects/services.py. Files, documents and knowledge come in later slices: they hang
off `Project` by foreign key, so nothing here needs to change for them."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models.functions import Lower

from aptix.ids import new_hex_id


class Project(models.Model):
    id = models.CharField(primary_key=True, max_length=32, default=new_hex_id, editable=False)
    team = models.ForeignKey("aptix.Team", on_delete=models.CASCADE, related_name="projects")
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    # Added to every request of the project's sessions, after the mode's prompt (agents/run/pipeline.py).
    instructions = models.TextField(blank=True)
    # The mode a new session in the project starts in when its caller names none; blank: the team's default.
    default_mode = models.CharField(max_length=64, blank=True)
    # True: every member of the team is a member of the project; False: only `members` (each in the team).
    whole_team = models.BooleanField(default=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="projects")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    archived_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = [Lower("name")]
        constraints = [
            models.UniqueConstraint("team", Lower("name"), name="project_name_unique_per_team"),
        ]

    def __str__(self) -> str:
        return self.name


class ProjectAudit(models.Model):
    """Who created or deleted a project, or changed its members, when: append-only (projects/services.py
    writes it, the admin shows it to auditors). Copies the project's id and name so it outlives it."""

    class Action(models.TextChoices):
        CREATED = "created"
        DELETED = "deleted"
        MEMBER_ADDED = "member_added"
        MEMBER_REMOVED = "member_removed"

    action = models.CharField(max_length=16, choices=Action.choices)
    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    actor_name = models.CharField(max_length=150, blank=True)
    project_id = models.CharField(max_length=32, db_index=True)
    project_name = models.CharField(max_length=120)
    # What changed: the member's username, or "whole team" when the project went to (or left) the whole team.
    detail = models.CharField(max_length=255, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name = "project audit entry"
        verbose_name_plural = "project audit"

    def __str__(self) -> str:
        return f"{self.action} {self.project_name}"
