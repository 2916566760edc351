"""The login page with a provider: "Sign in with <name>" and, while local login is on, the password
form. With APTIX_LOCAL_LOGIN=false nobody signs in with a password on the login page or the admin's,
and superusers alone keep a password form at /login/local/ (break-glass)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


@pytest.fixture
def local_login_off(provider_settings):
    return provider_settings("https://idp.example.com", APTIX_LOCAL_LOGIN=False)


def test_the_login_page_offers_the_provider_and_the_password_form(client, provider_settings):
    provider_settings("https://idp.example.com")
    page = client.get("/login/").content.decode()
    assert "Sign in with Test IdP" in page and 'action="/sign-in/start/"' in page
    assert 'id="id_password"' in page


def test_the_button_keeps_where_the_user_was_going(client, provider_settings):
    provider_settings("https://idp.example.com")
    page = client.get("/login/?next=/sessions/abc/").content.decode()
    assert 'action="/sign-in/start/?next=%2Fsessions%2Fabc%2F"' in page


def test_with_local_login_off_the_login_page_has_no_password_form(client, local_login_off):
    page = client.get("/login/").content.decode()
    assert "Sign in with Test IdP" in page and 'id="id_password"' not in page


def test_with_local_login_off_a_posted_password_is_refused_even_a_superusers(
    client, local_login_off, alice, django_user_model, password
):
    django_user_model.objects.create_superuser("root", password=password)
    for username in ("alice", "root"):
        response = client.post("/login/", {"username": username, "password": password})
        assert response.status_code == 403
        assert "Sign-in with a password is turned off here" in response.content.decode()
        assert not client.get("/settings/").wsgi_request.user.is_authenticated


def test_break_glass_signs_in_superusers_only(client, local_login_off, alice, django_user_model, password):
    page = client.get("/login/local/").content.decode()
    assert "Administrator sign-in" in page and "Sign in with Test IdP" not in page
    response = client.post("/login/local/", {"username": "alice", "password": password})
    assert response.status_code == 200
    assert "Only superusers sign in with a password here" in response.content.decode()
    assert not client.get("/settings/").wsgi_request.user.is_authenticated

    django_user_model.objects.create_superuser("root", password=password)
    response = client.post("/login/local/", {"username": "root", "password": password})
    assert response.status_code == 302
    assert client.get("/settings/").wsgi_request.user.username == "root"


def test_with_local_login_off_the_admins_login_sends_to_the_login_page(
    client, local_login_off, django_user_model, password
):
    django_user_model.objects.create_superuser("root", password=password)
    response = client.get("/admin/login/?next=/admin/")
    assert response.status_code == 302 and response["Location"] == "/login/?next=%2Fadmin%2F"
    client.post("/admin/login/?next=/admin/", {"username": "root", "password": password})
    assert not client.get("/settings/").wsgi_request.user.is_authenticated


def test_with_local_login_on_break_glass_is_the_login_page_and_the_admin_login_works(
    client, provider_settings, django_user_model, password
):
    provider_settings("https://idp.example.com")
    assert client.get("/login/local/")["Location"] == "/login/"
    django_user_model.objects.create_superuser("root", password=password)
    client.post("/admin/login/?next=/admin/", {"username": "root", "password": password})
    assert client.get("/settings/").wsgi_request.user.username == "root"
