from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [
    path("login/", views.SignInView.as_view(), name="login"),
    path("login/local/", views.BreakGlassView.as_view(), name="login-local"),
    path("logout/", views.SignOutView.as_view(), name="logout"),
    path("admin/login/", views.admin_login, name="identity-admin-login"),
    path("sign-in/start/", views.ProviderStartView.as_view(), name="identity-start"),
    path("sign-in/callback/", views.ProviderCallbackView.as_view(), name="identity-callback"),
    path("sign-in/no-team/", views.no_team, name="identity-no-team"),
]
