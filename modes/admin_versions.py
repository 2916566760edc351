"""The catalog admin's versions (modes/versions.py): the list on a mode's page, compare any two side by
side, review (approve / reject with a comment, seeing the diff against the published version), publish,
restore and "Try it". Each is its own view; the permission checks are the services' (the API shares
them) on top of the admin's own view / change permissions.

"Try it" opens a session, which lives in agents: `try_draft` is a hook agents/admin.py fills in
(modes never imports agents)."""

from __future__ import annotations

import difflib
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from .models import AgentMode, ModeVersion
from .versioning import FIELD_NAMES, LIST_FIELDS, VERSIONED_FIELDS, item_text, snapshot_diff
from .versions import (
    PERM_PUBLISH,
    UNPUBLISHED,
    published_version,
    review_required,
    version_approve,
    version_get,
    version_publish,
    version_reject,
    versions_of,
)

ACTIONS = ("publish", "approve", "reject", "review", "try")


def prompt_table(old: str, new: str, old_label: str, new_label: str) -> str:
    """The prompt as a side-by-side line diff (difflib's HTML table; it escapes the text). Long lines wrap
    in their cell (static/css/admin.css), not at a column count that overflows a narrow page."""
    table = difflib.HtmlDiff().make_table(
        (old or "").splitlines(), (new or "").splitlines(), old_label, new_label, context=False
    )
    # difflib keeps spaces as &nbsp;, so a long line could only break mid-word: the cells keep spaces
    # with `white-space: pre-wrap` instead, and wrap between words.
    return table.replace("&nbsp;", " ")


def compare_rows(old: ModeVersion, new: ModeVersion) -> list[dict[str, Any]]:
    """Every versioned field of two versions side by side; lists item by item (kept / added / removed)."""
    changed = {change["field"]: change for change in snapshot_diff(old.snapshot, new.snapshot)}
    rows = []
    for field in VERSIONED_FIELDS:
        if field == "system_prompt":
            continue
        left, right = old.snapshot.get(field), new.snapshot.get(field)
        row: dict[str, Any] = {"name": FIELD_NAMES.get(field, field), "changed": field in changed}
        if field in LIST_FIELDS:
            left_items, right_items = list(left or []), list(right or [])
            # (item, removed) and (item, added); a check shows as one line of JSON
            row["left"] = [(item_text(item), item not in right_items) for item in left_items]
            row["right"] = [(item_text(item), item not in left_items) for item in right_items]
            row["is_list"] = True
        else:
            row["left"], row["right"] = left, right
        rows.append(row)
    return rows


class VersionsAdminMixin:
    """Mixed into AgentModeAdmin (whose change_form_template lists the versions)."""

    def get_urls(self):
        wrap = self.admin_site.admin_view  # type: ignore[attr-defined]
        mine = [
            path("<path:object_id>/versions/compare/", wrap(self.compare_view), name="modes_agentmode_compare"),
            path(
                "<path:object_id>/versions/<int:number>/<str:action>/",
                wrap(self.version_action_view),
                name="modes_agentmode_version",
            ),
        ]
        return mine + super().get_urls()  # type: ignore[misc]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        mode = self.get_object(request, object_id)  # type: ignore[attr-defined]
        extra = dict(extra_context or {})
        if mode is not None and self.has_view_or_change_permission(request, mode):  # type: ignore[attr-defined]
            versions = versions_of(mode)
            extra.update(
                mode_versions=versions,
                # (version, its draft's last comparison or None): the warning beside Publish
                mode_version_rows=[
                    (version, self.draft_tests(mode, version) if version.state in UNPUBLISHED else None)
                    for version in versions
                ],
                can_publish=request.user.has_perm(PERM_PUBLISH),
                can_change=self.has_change_permission(request, mode),  # type: ignore[attr-defined]
                review_on=review_required(),
            )
        return super().change_view(request, object_id, form_url, extra)  # type: ignore[misc]

    def draft_tests(self, mode: AgentMode, version: ModeVersion) -> dict[str, Any] | None:
        """The last comparison of the catalog with this draft against the published one (its accuracy
        and checks), for the publish and review pages: the catalog tests live above modes, which
        overrides this (agents/admin.py); None: no comparison ran."""
        return None

    def can_test(self, request: HttpRequest) -> bool:
        """Whether the user may start a comparison from the review page (overridden in agents/admin.py)."""
        return False

    def _mode(self, request: HttpRequest, object_id: str) -> AgentMode:
        mode = self.get_object(request, object_id)  # type: ignore[attr-defined]
        if mode is None or not self.has_view_or_change_permission(request, mode):  # type: ignore[attr-defined]
            raise PermissionDenied
        return mode

    def _version(self, mode: AgentMode, number: Any) -> ModeVersion:
        try:
            return version_get(mode, int(number))
        except (ValidationError, TypeError, ValueError):
            raise PermissionDenied from None

    def compare_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        mode = self._mode(request, object_id)
        versions = versions_of(mode)
        published = published_version(mode) or versions[-1]
        old = self._version(mode, request.GET.get("a") or published.number)
        new = self._version(mode, request.GET.get("b") or versions[0].number)
        context = {
            **self.admin_site.each_context(request),  # type: ignore[attr-defined]
            "opts": AgentMode._meta,
            "title": f"{mode.display_name}: version {old.number} and version {new.number}",
            "mode": mode,
            "old": old,
            "new": new,
            "versions": versions,
            "prompt_table": prompt_table(
                old.snapshot.get("system_prompt", ""),
                new.snapshot.get("system_prompt", ""),
                f"version {old.number}",
                f"version {new.number}",
            ),
            "rows": compare_rows(old, new),
        }
        return TemplateResponse(request, "admin/modes/agentmode/compare.html", context)

    def version_action_view(self, request: HttpRequest, object_id: str, number: int, action: str) -> HttpResponse:
        mode = self._mode(request, object_id)
        if action not in ACTIONS or not self.has_change_permission(request, mode):  # type: ignore[attr-defined]
            raise PermissionDenied
        version = self._version(mode, number)
        if action == "review":
            return self._review_page(request, mode, version)
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        back = reverse("admin:modes_agentmode_change", args=[mode.pk])
        if action == "try":
            if version.state not in UNPUBLISHED:  # a published or superseded version is not a draft
                self.message_user(  # type: ignore[attr-defined]
                    request, f"Version {version.number} is not a draft: nothing to try.", messages.ERROR
                )
                return redirect(back)
            return self.try_draft(request, version)
        comment = request.POST.get("comment", "").strip()
        try:
            if action == "publish":
                done = version_publish(version=version, by=request.user)
                text = (
                    f"Version {version.number} restored as version {done.number}."
                    if done.restored_from
                    else f"Version {done.number} is published."
                )
            elif action == "approve":
                done = version_approve(version=version, by=request.user, comment=comment)
                text = f"Version {done.number} is approved; it can be published."
            else:
                done = version_reject(version=version, by=request.user, comment=comment)
                text = f"Version {done.number} is rejected."
        except ValidationError as exc:
            self.message_user(request, " ".join(exc.messages), messages.ERROR)  # type: ignore[attr-defined]
            return redirect(back)
        self.message_user(request, text, messages.SUCCESS)  # type: ignore[attr-defined]
        return redirect(back)

    def _review_page(self, request: HttpRequest, mode: AgentMode, version: ModeVersion) -> HttpResponse:
        published = published_version(mode) or version
        context = {
            **self.admin_site.each_context(request),  # type: ignore[attr-defined]
            "opts": AgentMode._meta,
            "title": f"Review version {version.number} of {mode.display_name}",
            "mode": mode,
            "old": published,
            "new": version,
            "review": True,
            "review_on": review_required(),  # approving is for two-person review only
            "own": version.author_id == request.user.pk,
            "can_publish": request.user.has_perm(PERM_PUBLISH),
            "prompt_table": prompt_table(
                published.snapshot.get("system_prompt", ""),
                version.snapshot.get("system_prompt", ""),
                f"published (version {published.number})",
                f"version {version.number}",
            ),
            "rows": compare_rows(published, version),
            "draft": version.state in UNPUBLISHED,
            "publishable": version.state in UNPUBLISHED
            and (not review_required() or version.state == ModeVersion.State.APPROVED),
            "last_test": self.draft_tests(mode, version) if version.state in UNPUBLISHED else None,
            "can_test": self.can_test(request),
        }
        return TemplateResponse(request, "admin/modes/agentmode/compare.html", context)

    def try_draft(self, request: HttpRequest, version: ModeVersion) -> HttpResponse:
        """Open a session running on the version's fields (agents/admin.py: sessions live in agents)."""
        raise PermissionDenied
