"""The automations' pages and the inbox (mounted at the site's root by aptix/urls.py)."""

from django.urls import path

from . import views

urlpatterns = [
    path("automations/", views.automation_list, name="automations"),
    path("automations/new/", views.automation_new, name="automation-new"),
    path("automations/<str:automation_id>/", views.automation_detail, name="automation-detail"),
    path("automations/<str:automation_id>/edit/", views.automation_edit, name="automation-edit"),
    path("automations/<str:automation_id>/run/", views.automation_run_now, name="automation-run-now"),
    path("automations/<str:automation_id>/pause/", views.automation_toggle, name="automation-toggle"),
    path("automations/<str:automation_id>/delete/", views.automation_remove, name="automation-delete"),
    path("inbox/", views.inbox_page, name="inbox"),
    path("inbox/bell/", views.inbox_bell, name="inbox-bell"),
    path("inbox/notify/", views.inbox_notify, name="inbox-notify"),
    path("inbox/<int:item_id>/decide/", views.inbox_decide, name="inbox-decide"),
    path("inbox/<int:item_id>/dismiss/", views.inbox_dismiss, name="inbox-dismiss"),
]
