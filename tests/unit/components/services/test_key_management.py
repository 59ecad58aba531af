"""API keys managed by a tenant's admin over HTTP: never stronger than the key asking (a real keys file)."""

import pytest

from components.services.key_management import (
    KeyGrantError,
    KeyNotFoundError,
    create_key,
    revoke_tenant_key,
    tenant_keys,
)
from components.stores import key_store
from components.stores.key_store import ApiKeyStore


@pytest.fixture
def keys_file(tmp_path):
    return tmp_path / "api_keys.json"


@pytest.fixture
def admin(keys_file):
    _token, record = key_store.register_key(
        keys_file, tenant_id="acme", tags=["hr", "all-staff"], user_id="u-admin", permissions=["read", "admin"],
        label="admin",
    )  # fmt: skip
    return record


@pytest.mark.unit
class TestKeyManagement:
    def test_create_key_within_the_grant_works_and_shows_the_token_once(self, keys_file, admin):
        token, key = create_key(keys_file, "acme", tags=["hr"], permissions=["read", "write"], label="bot",
                                granter=admin)  # fmt: skip
        assert token.startswith("sb_") and "token" not in key and "key_hash" not in key
        assert ApiKeyStore(keys_file).lookup(token).key_id == key["key_id"]
        assert (key["kind"], key["tags"], key["permissions"], key["label"]) == (
            "tenant",
            ["hr"],
            ["read", "write"],
            "bot",
        )
        assert [entry["key_id"] for entry in tenant_keys(keys_file, "acme")] == [admin.key_id, key["key_id"]]
        assert tenant_keys(keys_file, "globex") == []

    @pytest.mark.parametrize(
        "request_,match",
        [
            ({"tags": ["finance"]}, "tags"),
            ({"permissions": ["public"]}, "permissions"),
            ({"user_id": "u-someone-else"}, "user_id"),
        ],
    )
    def test_a_key_stronger_than_the_granter_is_refused(self, keys_file, admin, request_, match):
        fields = {"tags": ["hr"], "permissions": ["read"], **request_}
        with pytest.raises(KeyGrantError, match=match):
            create_key(keys_file, "acme", granter=admin, **fields)
        assert len(key_store.list_keys(keys_file)) == 1

    def test_admin_may_grant_write_and_its_own_user_key(self, keys_file, admin):
        _token, key = create_key(
            keys_file, "acme", tags=["hr"], permissions=["write"], user_id="u-admin", granter=admin
        )
        assert (key["kind"], key["user_id"]) == ("user", "u-admin")

    def test_bad_requests_are_invalid(self, keys_file, admin):
        from components.core.errors import InvalidRequestError

        with pytest.raises(InvalidRequestError, match="tags"):
            create_key(keys_file, "acme", tags=[], permissions=["read"], granter=admin)
        with pytest.raises(InvalidRequestError, match="permissions"):
            create_key(keys_file, "acme", tags=["hr"], permissions=["root"], granter=admin)

    def test_trusted_mode_has_no_granter_and_keeps_the_tenant(self, keys_file):
        _token, key = create_key(keys_file, "globex", tags=["ops"], permissions=["read", "admin"])
        assert [entry["key_id"] for entry in tenant_keys(keys_file, "globex")] == [key["key_id"]]

    def test_revoke_only_the_tenants_own_keys(self, keys_file, admin):
        _token, other = key_store.register_key(keys_file, tenant_id="globex", tags=["ops"])
        with pytest.raises(KeyNotFoundError):
            revoke_tenant_key(keys_file, "acme", other.key_id)
        with pytest.raises(KeyNotFoundError):
            revoke_tenant_key(keys_file, "acme", "key-000000000000")
        assert revoke_tenant_key(keys_file, "acme", admin.key_id) == {"key_id": admin.key_id, "revoked": True}
        assert [record.tenant_id for record in key_store.list_keys(keys_file)] == ["globex"]
