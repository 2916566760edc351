"""Pages that name no icon (the Django admin, a JSON answer opened in a tab) make the browser ask for
/favicon.ico: it answers with Aptix's icon instead of a 404 and a warning in the log per page."""

from __future__ import annotations

import pytest
from django.contrib.staticfiles import finders
from django.templatetags.static import static
from django.test import Client

pytestmark = pytest.mark.django_db


def test_favicon_ico_redirects_to_the_apps_icon_for_anyone():
    response = Client().get("/favicon.ico")
    assert response.status_code == 301
    assert response["Location"] == static("img/favicon.svg")
    assert finders.find("img/favicon.svg")  # the icon it points at is a real static file
