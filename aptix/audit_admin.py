"""The admin of an audit trail: rows the application writes and nobody edits or deletes, superusers
included (mode history, the catalog's events, answer feedback, usage). Reading them is the model's
view permission; exporting them is each admin's own permission."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest


class AuditTrailAdminMixin:
    """No add, change or delete in the admin for anyone."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
