"""Identity modes of the HTTP API: who is asking, and may they write (the keys are in tests/unit/components/stores)."""

import pytest

from components.core.requester import Identity
from components.stores import key_store
from components.stores.key_store import ApiKeyStore
from hayhooks_app.errors import ApiError
from hayhooks_app.identity import (
    authorize_write,
    bearer_token,
    resolve_identity,
    resolve_spec_identity,
    resolve_spec_writer,
)


def _bearer(key):
    return {"authorization": f"Bearer {key}"}


@pytest.mark.unit
class TestResolveIdentity:
    def test_trusted_takes_the_body(self):
        identity = resolve_identity(
            "trusted", None, {}, tenant_id="acme", user_tags=["hr", "hr"], user_id="u", project_id="p"
        )
        assert identity == Identity("acme", ("hr",), "u", "p")
        assert identity.scope == "project"

    @pytest.mark.parametrize(
        ("tenant_id", "user_tags", "field"),
        [(None, ["hr"], "tenant_id"), ("acme", None, "user_tags"), ("acme", [], "user_tags")],
    )
    def test_trusted_requires_tenant_and_tags(self, tenant_id, user_tags, field):
        with pytest.raises(ApiError) as caught:
            resolve_identity("trusted", None, {}, tenant_id=tenant_id, user_tags=user_tags)
        assert caught.value.status_code == 422 and field in caught.value.message

    def test_api_key_defaults_to_the_key(self, keys_file, alice_key):
        identity = resolve_identity(
            "api_key", ApiKeyStore(keys_file), _bearer(alice_key), tenant_id=None, user_tags=None
        )
        assert (
            identity.tenant_id == "acme" and identity.user_tags == ("hr", "engineering") and identity.user_id == "alice"
        )
        assert identity.key_id.startswith("key-")

    def test_api_key_intersects_tags(self, keys_file, alice_key):
        identity = resolve_identity(
            "api_key", ApiKeyStore(keys_file), _bearer(alice_key), tenant_id="acme", user_tags=["finance", "hr"]
        )
        assert identity.user_tags == ("hr",)

    def test_api_key_rejects_tags_outside_the_key(self, keys_file, alice_key):
        with pytest.raises(ApiError) as caught:
            resolve_identity(
                "api_key", ApiKeyStore(keys_file), _bearer(alice_key), tenant_id=None, user_tags=["finance"]
            )
        assert caught.value.status_code == 403

    def test_api_key_rejects_another_tenant_or_user(self, keys_file, alice_key):
        store = ApiKeyStore(keys_file)
        for fields in ({"tenant_id": "globex"}, {"tenant_id": None, "user_id": "mallory"}):
            with pytest.raises(ApiError) as caught:
                resolve_identity("api_key", store, _bearer(alice_key), user_tags=None, **{"tenant_id": None, **fields})
            assert caught.value.status_code == 403

    @pytest.mark.parametrize(
        "headers", [{}, {"authorization": "Bearer nope"}, {"authorization": "Basic abc"}, {"authorization": "Bearer "}]
    )
    def test_api_key_missing_or_unknown_is_401(self, keys_file, alice_key, headers):
        with pytest.raises(ApiError) as caught:
            resolve_identity("api_key", ApiKeyStore(keys_file), headers, tenant_id=None, user_tags=None)
        assert caught.value.status_code == 401

    def test_project_restricted_keys(self, keys_file):
        key, _ = key_store.register_key(keys_file, tenant_id="acme", tags=["engineering"], projects=["atlas"])
        store = ApiKeyStore(keys_file)
        assert (
            resolve_identity(
                "api_key", store, _bearer(key), tenant_id=None, user_tags=None, project_id="atlas"
            ).project_id
            == "atlas"
        )
        with pytest.raises(ApiError):
            resolve_identity("api_key", store, _bearer(key), tenant_id=None, user_tags=None, project_id="zeus")

    def test_bearer_token_parsing(self):
        assert bearer_token({"authorization": "bearer  abc "}) == "abc"
        assert bearer_token(None) is None


@pytest.mark.unit
class TestAuthorizeWrite:
    def test_trusted_allows_everything(self):
        assert authorize_write("trusted", None, {}, tenant_ids={"a", "b"}, permission="admin") is None

    def test_read_only_key_cannot_write(self, keys_file, alice_key):
        with pytest.raises(ApiError) as caught:
            authorize_write("api_key", ApiKeyStore(keys_file), _bearer(alice_key), tenant_ids={"acme"})
        assert caught.value.status_code == 403 and "write" in caught.value.message

    def test_writer_is_bound_to_its_tenant_and_tags(self, keys_file):
        key, _ = key_store.register_key(keys_file, tenant_id="acme", tags=["hr"], permissions=["read", "write"])
        store = ApiKeyStore(keys_file)
        assert authorize_write("api_key", store, _bearer(key), tenant_ids={"acme"}, tags={"hr"}).startswith("key-")
        for tenants, tags in (({"globex"}, {"hr"}), ({"acme"}, {"finance"})):
            with pytest.raises(ApiError) as caught:
                authorize_write("api_key", store, _bearer(key), tenant_ids=tenants, tags=tags)
            assert caught.value.status_code == 403
        with pytest.raises(ApiError):
            authorize_write("api_key", store, _bearer(key), tenant_ids={"acme"}, permission="admin")

    def test_admin_implies_write(self, keys_file):
        key, _ = key_store.register_key(keys_file, tenant_id="acme", tags=["hr"], permissions=["admin"])
        assert authorize_write("api_key", ApiKeyStore(keys_file), _bearer(key), tenant_ids={"acme"}) is not None


def _settings(mode="trusted", tenant=None, tags=()):
    from types import SimpleNamespace

    return SimpleNamespace(auth_mode=mode, default_tenant=tenant, default_tags=tuple(tags))


@pytest.mark.unit
class TestSpecificationIdentity:
    def test_trusted_defaults_fill_what_the_request_leaves_out(self):
        settings = _settings(tenant="dats", tags=["all"])
        assert resolve_spec_identity(settings, None, {}, tenant_id=None, user_tags=None) == Identity("dats", ("all",))
        named = resolve_spec_identity(settings, None, {}, tenant_id="acme", user_tags=["hr"], user_id="u")
        assert named == Identity("acme", ("hr",), "u")

    def test_trusted_without_defaults_names_both_ways(self):
        with pytest.raises(ApiError) as caught:
            resolve_spec_identity(_settings(), None, {}, tenant_id=None, user_tags=["hr"])
        assert caught.value.status_code == 422 and "SOURCEBOUND_DEFAULT_TENANT" in caught.value.message
        with pytest.raises(ApiError) as caught:
            resolve_spec_identity(_settings(tenant="dats"), None, {}, tenant_id=None, user_tags=None)
        assert "user_tags" in caught.value.message and "SOURCEBOUND_DEFAULT_TAGS" in caught.value.message

    def test_api_key_mode_ignores_the_defaults(self, keys_file, alice_key):
        settings = _settings("api_key", tenant="globex", tags=["fin"])
        identity = resolve_spec_identity(
            settings, ApiKeyStore(keys_file), _bearer(alice_key), tenant_id=None, user_tags=None
        )
        assert (identity.tenant_id, identity.user_tags) == ("acme", ("hr", "engineering"))
        with pytest.raises(ApiError) as caught:
            resolve_spec_identity(settings, ApiKeyStore(keys_file), {}, tenant_id=None, user_tags=None)
        assert caught.value.status_code == 401

    def test_writers(self, keys_file, alice_key):
        tenant, tags, trusted = resolve_spec_writer(_settings(tenant="dats", tags=["all"]), None, {}, tenant_id=None)
        # Trusted mode names no caller: the tenant's full authority, as POST /index/run naming none.
        assert (tenant, tags, trusted.key_id) == ("dats", ("all",), None)
        assert trusted.rule.unlimited and trusted.rule.tenant_ids == ("dats",)
        with pytest.raises(ApiError, match="tags"):
            resolve_spec_writer(_settings(tenant="dats"), None, {}, tenant_id=None)
        assert resolve_spec_writer(_settings(tenant="dats"), None, {}, tenant_id=None, need_tags=False)[0] == "dats"
        keys = ApiKeyStore(keys_file)
        with pytest.raises(ApiError) as caught:  # alice's key is read-only
            resolve_spec_writer(_settings("api_key"), keys, _bearer(alice_key), tenant_id=None)
        assert caught.value.status_code == 403
        writer, _ = key_store.register_key(
            keys_file, tenant_id="acme", tags=["hr", "eng"], permissions=["read", "write"]
        )
        tenant, tags, authority = resolve_spec_writer(_settings("api_key"), keys, _bearer(writer), tenant_id=None)
        assert (tenant, tags) == ("acme", ("hr", "eng"))
        assert authority.key_id.startswith("key-") and not authority.rule.unlimited
        with pytest.raises(ApiError) as caught:
            resolve_spec_writer(_settings("api_key"), keys, _bearer(writer), tenant_id="globex")
        assert caught.value.status_code == 403
        # Tags outside the key are the write rule's to refuse, worded for the key (WriteAuthority.check_documents).
        _, tags, authority = resolve_spec_writer(
            _settings("api_key"), keys, _bearer(writer), tenant_id=None, tags=["fin"]
        )
        with pytest.raises(ApiError) as caught:
            authority.check_documents([{"tenant_id": "acme", "tags": list(tags)}])
        assert caught.value.status_code == 403 and "fin" in caught.value.message
