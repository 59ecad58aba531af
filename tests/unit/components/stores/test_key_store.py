"""The API key store: hashed keys in a JSON file (tests/unit) and its records; the shared-database backend runs
on PostgreSQL in tests/integration/test_state_layer.py."""

import json
import os

import pytest

from components.runtime.environment import ConfigError
from components.stores import key_store
from components.stores.key_store import ApiKeyFile, ApiKeyRecord, ApiKeyStore, hash_key, key_cache_seconds


@pytest.mark.unit
class TestKeysFile:
    def test_register_stores_only_the_hash(self, keys_file, alice_key):
        text = keys_file.read_text()
        assert alice_key not in text
        entry = json.loads(text)["keys"][0]
        assert entry["sha256"] == hash_key(alice_key)
        assert entry["tenant_id"] == "acme" and entry["tags"] == ["hr", "engineering"]
        assert oct(os.stat(keys_file).st_mode & 0o777) == "0o600"

    def test_lookup_finds_the_key_and_rereads_the_file(self, keys_file, alice_key):
        store = ApiKeyStore(keys_file)
        assert store.lookup(alice_key).user_id == "alice"
        assert store.lookup("sb_wrong") is None
        bob_key, _ = key_store.register_key(keys_file, tenant_id="globex", tags=["people"], user_id="bob")
        assert store.lookup(bob_key).tenant_id == "globex"

    def test_revoke_removes_the_key(self, keys_file, alice_key):
        store = ApiKeyStore(keys_file)
        record = store.lookup(alice_key)
        assert key_store.revoke_key(keys_file, record.key_id)
        assert store.lookup(alice_key) is None
        assert not key_store.revoke_key(keys_file, record.key_id)

    def test_invalid_file_keeps_the_previous_keys(self, keys_file, alice_key):
        store = ApiKeyStore(keys_file)
        assert store.lookup(alice_key) is not None
        keys_file.write_text("{not json")
        assert store.lookup(alice_key) is not None

    def test_missing_file_means_no_keys(self, tmp_path):
        assert len(ApiKeyStore(tmp_path / "absent.json")) == 0

    def test_register_rejects_unknown_permission(self, keys_file):
        with pytest.raises(ValueError, match="unknown permissions"):
            key_store.register_key(keys_file, tenant_id="acme", tags=["hr"], permissions=["root"])

    def test_register_needs_a_tenant_and_tags(self, keys_file):
        with pytest.raises(ValueError, match="tenant_id is required"):
            key_store.register_key(keys_file, tenant_id="", tags=["hr"])
        with pytest.raises(ValueError, match="at least one tag"):
            key_store.register_key(keys_file, tenant_id="acme", tags=[])
        assert not keys_file.exists()

    def test_a_key_is_registered_once(self, keys_file, alice_key):
        with pytest.raises(ValueError, match="already registered"):
            key_store.register_key(keys_file, tenant_id="acme", tags=["hr"], key=alice_key)
        assert len(key_store.list_keys(keys_file)) == 1


@pytest.mark.unit
class TestApiKeyFile:
    def test_revoke_where_removes_a_tenants_or_a_users_keys(self, keys_file):
        for tenant, user in (("acme", "u-a"), ("acme", "u-b"), ("acme", None), ("globex", "u-a")):
            key_store.register_key(keys_file, tenant_id=tenant, tags=["hr"], user_id=user)
        keys = ApiKeyFile(keys_file)
        assert keys.revoke_where("acme", user_id="u-a") == 1
        assert sorted((r.tenant_id, r.user_id or "") for r in keys.list()) == [
            ("acme", ""), ("acme", "u-b"), ("globex", "u-a")
        ]  # fmt: skip
        assert keys.revoke_where("acme") == 2
        assert [(r.tenant_id, r.user_id) for r in keys.list()] == [("globex", "u-a")]
        assert keys.revoke_where("acme") == 0

    def test_a_missing_file_has_no_keys_and_is_not_created(self, tmp_path):
        keys = ApiKeyFile(tmp_path / "absent.json")
        assert keys.list() == [] and keys.revoke_where("acme") == 0 and not keys.revoke("key-0123456789ab")
        assert not (tmp_path / "absent.json").exists()

    def test_a_file_of_another_shape_is_refused(self, keys_file):
        keys_file.write_text(json.dumps([{"sha256": "x"}]))
        with pytest.raises(ValueError, match="is not a keys file"):
            ApiKeyFile(keys_file).list()

    def test_writes_replace_the_file_whole_and_leave_no_temporary(self, keys_file, alice_key):
        record = ApiKeyStore(keys_file).lookup(alice_key)
        assert ApiKeyFile(keys_file).revoke(record.key_id)
        assert json.loads(keys_file.read_text()) == {"keys": []}
        assert [path.name for path in keys_file.parent.iterdir()] == ["keys.json"]


@pytest.mark.unit
class TestApiKeyRecord:
    def test_kinds_and_delegation(self):
        user = ApiKeyRecord.from_dict({"sha256": "a", "tenant_id": "acme", "user_id": "u-1", "tags": ["hr"]})
        service = ApiKeyRecord.from_dict({"sha256": "b", "tenant_id": "acme", "act_as_users": ["u-acme-*"]})
        tenant = ApiKeyRecord.from_dict({"sha256": "c", "tenant_id": "acme"})
        assert (user.kind, service.kind, tenant.kind) == ("user", "service", "tenant")
        assert user.may_act_as("u-1") and not user.may_act_as("u-2")
        assert service.may_act_as("u-acme-7") and not service.may_act_as("U-ACME-7")
        assert not tenant.may_act_as("u-1")
        assert ApiKeyRecord.from_dict(user.to_dict()) == user and user.permissions == ("read",)

    @pytest.mark.parametrize(
        ("entry", "message"),
        [
            ({"act_as_users": "u-*"}, "must be a list"),
            ({"act_as_users": []}, "at least one user id"),
            ({"act_as_users": ["*"], "user_id": "u-1"}, "not both"),
            ({"permissions": ["root"]}, "unknown permissions"),
        ],
    )
    def test_malformed_grants_are_refused(self, entry, message):
        with pytest.raises(ValueError, match=message):
            ApiKeyRecord.from_dict({"sha256": "a", "tenant_id": "acme", **entry})

    def test_the_key_cache_setting(self, monkeypatch):
        monkeypatch.setenv("SOURCEBOUND_KEY_CACHE_SECONDS", "0.5")
        assert key_cache_seconds() == 0.5
        monkeypatch.setenv("SOURCEBOUND_KEY_CACHE_SECONDS", "-2")
        with pytest.raises(ConfigError, match="SOURCEBOUND_KEY_CACHE_SECONDS must be >= 0"):
            key_cache_seconds()
