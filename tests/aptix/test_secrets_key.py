"""APTIX_SECRETS_KEY: Fernet keys, comma-separated, checked at start-up without echoing a key."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet

from aptix.env import APTIX_SECRETS_KEY
from aptix.envtypes import SettingError


def test_keys_are_read_newest_first():
    first, second = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    assert APTIX_SECRETS_KEY.read({"APTIX_SECRETS_KEY": f"{first}, {second}"}) == [first, second]
    assert APTIX_SECRETS_KEY.read({}) is None


@pytest.mark.parametrize("value", ["not-a-key", "c2hvcnQ=", "x" * 44])
def test_a_value_that_is_not_a_fernet_key_stops_the_start_without_quoting_it(value):
    good = Fernet.generate_key().decode()
    with pytest.raises(SettingError, match="key 2 is not a Fernet key") as refused:
        APTIX_SECRETS_KEY.read({"APTIX_SECRETS_KEY": f"{good},{value}"})
    assert value not in str(refused.value) and good not in str(refused.value)
