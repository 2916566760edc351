from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import include, path

from . import metadata_documents, views

urlpatterns = [
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("test/user/", views.user),
    path("test/rotate/", views.rotate),
    path("test/key/", views.key),
    path("test/metadata-documents/", metadata_documents.toggle),
]
