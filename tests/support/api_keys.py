"""API-key fixtures shared by the key store's tests and the identity resolution's (registered in conftest.py)."""

import pytest

from components.stores import key_store


@pytest.fixture
def keys_file(tmp_path):
    """A keys file path in the test's folder (not created until a key is registered)."""
    return tmp_path / "keys.json"


@pytest.fixture
def alice_key(keys_file):
    """A user key of alice in tenant acme, tags hr and engineering; returns the key itself."""
    key, _record = key_store.register_key(keys_file, tenant_id="acme", tags=["hr", "engineering"], user_id="alice")
    return key
