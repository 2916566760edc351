from django.urls import path

from .views import actions, answer, export, health, history, manage, sessions, settings

urlpatterns = [
    path("", sessions.home, name="home"),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("sessions/", sessions.session_list_view, name="session-list"),
    path("sessions/new/", sessions.session_new, name="session-new"),
    path("sessions/<str:session_id>/", sessions.session_detail, name="session-detail"),
    path("sessions/<str:session_id>/history/", history.session_history, name="session-history"),
    path("sessions/<str:session_id>/turns/", actions.turn_new, name="turn-new"),
    path("sessions/<str:session_id>/turns/<str:turn_id>/cancel/", actions.turn_stop, name="turn-cancel"),
    path("sessions/<str:session_id>/turns/<str:turn_id>/resend/", actions.turn_resend, name="turn-resend"),
    path(
        "sessions/<str:session_id>/turns/<str:turn_id>/versions/<int:number>/",
        history.turn_version_view,
        name="turn-version",
    ),
    path("sessions/<str:session_id>/turns/<str:turn_id>/answer.md", answer.turn_answer, name="turn-answer"),
    path("sessions/<str:session_id>/turns/<str:turn_id>/approvals/", actions.approval_decide, name="approval-decide"),
    path("sessions/<str:session_id>/grants/revoke/", actions.session_grant_revoke, name="session-grant-revoke"),
    path("sessions/<str:session_id>/mode/", actions.session_mode, name="session-mode"),
    path("sessions/<str:session_id>/model/", actions.session_model, name="session-model"),
    path("sessions/<str:session_id>/execution/", actions.session_execution, name="session-execution"),
    path("sessions/<str:session_id>/tools/", actions.session_tools, name="session-tools"),
    path("sessions/<str:session_id>/branch/", actions.session_branch, name="session-branch"),
    path("sessions/<str:session_id>/rename/", manage.session_rename_view, name="session-rename"),
    path("sessions/<str:session_id>/pin/", manage.session_pin_view, name="session-pin"),
    path("sessions/<str:session_id>/archive/", manage.session_archive_view, name="session-archive"),
    path("sessions/<str:session_id>/delete/", manage.session_delete_view, name="session-delete"),
    path("sessions/<str:session_id>/export.<str:fmt>", export.session_export, name="session-export"),
    path("settings/", settings.settings_page, name="settings"),
    path("settings/password/", settings.settings_password, name="settings-password"),
    path("settings/preferences/", settings.settings_preferences, name="settings-preferences"),
    path("settings/tokens/", settings.settings_token_create, name="settings-token-create"),
    path("settings/tokens/<int:token_id>/revoke/", settings.settings_token_revoke, name="settings-token-revoke"),
]
