"""Settings of the live Daphne server the browser tests start: the app's own settings, plus the one
difference the test users need. The personas (tests/conftest.py) store MD5 password hashes to keep
the suite fast; the live server must be able to check them when they log in through /login/."""

from aptix.settings import *

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
