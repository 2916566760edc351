"""The catalog tests' pages in the admin (/admin/agents/catalogtestrun/): the runs, newest first; *Run
tests* (which catalog — published, with the drafts, or both compared — which kind and model); a run's
page with its progress (reloading itself while it goes), accuracy, each mode's precision and recall,
the confusion matrix, every case and check, and for a comparison what changed; *Stop* and *Delete*.
For curators (the permission to change or to publish agent modes); nobody edits a run."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from ..llm.catalog import models_config
from ..models import CatalogTestRun
from .cases import STAY
from .execute import test_run_launch_soon
from .runs import (
    main_catalog,
    may_test,
    test_run_create,
    test_run_delete,
    test_run_expire,
    test_run_get,
    test_run_json,
    test_run_stop,
)

RELOAD_SECONDS = 2  # how often a run's page reloads itself while the run goes on


class RunForm(forms.Form):
    catalog = forms.ChoiceField(choices=CatalogTestRun.Catalog.choices, initial="published")
    kind = forms.ChoiceField(choices=CatalogTestRun.Kind.choices, initial="routing")
    model = forms.ChoiceField(required=False, help_text="The model the cases run on; empty: each mode's own.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        keys = list(models_config().models)
        self.fields["model"].choices = [("", "Each mode's own model"), *((key, key) for key in keys)]  # type: ignore[attr-defined]


def matrix_table(matrix: dict[str, dict[str, int]]) -> dict[str, Any]:
    """The confusion matrix as rows (expected) and columns (got), `stay` and the default mode first,
    each cell with its count and whether it is on the diagonal."""
    keys = sorted({*matrix, *(got for row in matrix.values() for got in row)}, key=lambda k: (k != STAY, k))
    rows = [
        {"expected": key, "cells": [{"count": matrix.get(key, {}).get(got, 0), "right": key == got} for got in keys]}
        for key in keys
        if key in matrix
    ]
    return {"columns": keys, "rows": rows}


def percent(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.0f}%"


@admin.register(CatalogTestRun)
class CatalogTestRunAdmin(admin.ModelAdmin):
    list_display = [
        "created_at",
        "kind",
        "catalog",
        "model_label",
        "status",
        "progress",
        "accuracy_shown",
        "checks_failed",
        "started_by",
    ]
    list_filter = ["status", "kind", "catalog"]
    list_select_related = ["started_by"]

    def has_module_permission(self, request: HttpRequest) -> bool:
        return may_test(request.user)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return may_test(request.user)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return may_test(request.user)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return may_test(request.user) and (obj is None or test_run_expire(obj).is_finished)

    @admin.display(description="model")
    def model_label(self, run: CatalogTestRun) -> str:
        return run.model or "each mode's"

    @admin.display(description="progress")
    def progress(self, run: CatalogTestRun) -> str:
        return f"{run.done}/{run.total}"

    @admin.display(description="accuracy")
    def accuracy_shown(self, run: CatalogTestRun) -> str:
        return percent(run.accuracy)

    def get_urls(self):
        wrap = self.admin_site.admin_view
        mine = [path("<path:object_id>/stop/", wrap(self.stop_view), name="agents_catalogtestrun_stop")]
        return mine + super().get_urls()

    def add_view(self, request: HttpRequest, form_url: str = "", extra_context: Any = None) -> HttpResponse:
        if not may_test(request.user):
            raise PermissionDenied
        form = RunForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            try:
                run = test_run_create(user=request.user, **form.cleaned_data)
            except ValidationError as exc:
                for field, errors in exc.message_dict.items():
                    form.add_error(field if field in form.fields else None, errors)
            else:
                test_run_launch_soon(run.pk)  # else this process's taker starts it within seconds
                return redirect(reverse("admin:agents_catalogtestrun_change", args=[run.pk]))
        context = {
            **self.admin_site.each_context(request),
            "opts": CatalogTestRun._meta,
            "title": "Test the catalog",
            "form": form,
        }
        return TemplateResponse(request, "admin/agents/catalogtestrun/start.html", context)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        try:
            run = test_run_get(user=request.user, run_id=object_id)
        except ValidationError:
            raise PermissionDenied from None
        body = test_run_json(run)
        published = body.get("published") or {}
        context = {
            **self.admin_site.each_context(request),
            "opts": CatalogTestRun._meta,
            "title": f"Catalog test: {run.get_kind_display().lower()}, {run.get_catalog_display().lower()}",
            "run": run,
            "body": body,
            "main": main_catalog(run),
            "accuracy": percent(body["accuracy"]),
            "published_accuracy": percent(published.get("accuracy")) if published else None,
            "matrix": matrix_table(body["matrix"]),
            "modes": [(key, percent(m.get("precision")), percent(m.get("recall"))) for key, m in body["modes"].items()],
            "reload": None if run.is_finished else RELOAD_SECONDS,
            "can_delete": self.has_delete_permission(request, run),
        }
        return TemplateResponse(request, "admin/agents/catalogtestrun/detail.html", context)

    def stop_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        try:
            run = test_run_get(user=request.user, run_id=object_id)
        except ValidationError:
            raise PermissionDenied from None
        test_run_stop(user=request.user, run=run)
        self.message_user(request, "The run stops: the cases under way are cancelled.", messages.SUCCESS)
        return redirect(reverse("admin:agents_catalogtestrun_change", args=[run.pk]))

    def delete_model(self, request: HttpRequest, obj: CatalogTestRun) -> None:
        test_run_delete(user=request.user, run=obj)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for run in queryset:
            if test_run_expire(run).is_finished:
                test_run_delete(user=request.user, run=run)
