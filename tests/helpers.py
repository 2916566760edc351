"""Test helpers shared across apps."""
from __future__ import annotations

import pytest

# Async tests need real transactions (the ORM runs on another thread). The flush after such a test
# would also wipe the catalog and groups the migrations seeded; serialized_rollback restores them.
async_db = pytest.mark.django_db(transaction=True, serialized_rollback=True)
