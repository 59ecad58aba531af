"""
Bearer credentials in the oidc and oidc,api_key modes, and the identity rule applied to a token's grant
(docs/contract.md, "Identity and delegation"); API keys alone are in test_api_identity.py.
"""

import pytest
from support.oidc_provider import OidcProvider

from components.runtime.environment import ConfigError
from components.stores.key_store import ApiKeyStore
from hayhooks_app.config import Settings, parse_auth_mode
from hayhooks_app.credentials import Credentials
from hayhooks_app.errors import ApiError
from hayhooks_app.identity import authorize_write, resolve_identity
from hayhooks_app.oidc.authenticator import OidcAuthenticator
from hayhooks_app.oidc.settings import OidcSettings

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def provider():
    with OidcProvider(audience="sourcebound") as running:
        running.users["alice"] = {"groups": ["hr", "all-staff"]}
        running.users["editor"] = {"groups": ["hr", "editors"]}
        running.users["nobody"] = {"groups": ["unmapped"]}
        yield running


@pytest.fixture
def credentials(provider, keys_file, tmp_path):
    table = tmp_path / "map.yml"
    table.write_text("tags:\n  hr: [hr]\n  all-staff: [all-staff]\npermissions:\n  editors: [write]\n")
    settings = OidcSettings(issuer=provider.issuer, audiences=("sourcebound",), tenant="acme", tag_map=table)
    return Credentials("oidc,api_key", keys=ApiKeyStore(keys_file), oidc=OidcAuthenticator(settings))


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def refused(call) -> ApiError:
    with pytest.raises(ApiError) as caught:
        call()
    return caught.value


class TestParseAuthMode:
    @pytest.mark.parametrize(
        ("value", "mode"),
        [
            (None, "trusted"),
            ("", "trusted"),
            ("api_key", "api_key"),
            ("oidc", "oidc"),
            ("api_key, oidc", "oidc,api_key"),
        ],
    )
    def test_run(self, value, mode):
        assert parse_auth_mode(value) == mode

    @pytest.mark.parametrize("value", ["trusted,api_key", "saml", "oidc,basic"])
    def test_run_refuses(self, value):
        with pytest.raises(ConfigError, match="SOURCEBOUND_AUTH_MODE"):
            parse_auth_mode(value)

    def test_settings_read_the_oidc_variables_only_in_oidc_modes(self, monkeypatch, tmp_path):
        monkeypatch.setenv("SOURCEBOUND_DATA_DIR", str(tmp_path))
        monkeypatch.delenv("SOURCEBOUND_OIDC_ISSUER", raising=False)
        monkeypatch.setenv("SOURCEBOUND_AUTH_MODE", "api_key")
        assert Settings.from_env().oidc is None
        monkeypatch.setenv("SOURCEBOUND_AUTH_MODE", "oidc,api_key")
        with pytest.raises(ConfigError, match="SOURCEBOUND_OIDC_ISSUER is required"):
            Settings.from_env()
        monkeypatch.setenv("SOURCEBOUND_OIDC_ISSUER", "https://idp.example.com")
        monkeypatch.setenv("SOURCEBOUND_OIDC_AUDIENCE", "sourcebound")
        monkeypatch.setenv("SOURCEBOUND_OIDC_TENANT", "acme")
        settings = Settings.from_env()
        assert settings.auth_mode == "oidc,api_key" and settings.oidc.issuer == "https://idp.example.com"


class TestCredentials:
    def test_init(self, credentials):
        assert credentials.methods == {"oidc", "api_key"} and credentials.keys is not None

    def test_run_token_and_key_side_by_side(self, credentials, provider, alice_key):
        assert credentials.authenticate(bearer(provider.token("alice"))).key_id == "oidc"
        assert credentials.authenticate(bearer(alice_key)).key_id.startswith("key-")

    def test_run_missing_names_both(self, credentials, provider):
        error = refused(lambda: credentials.authenticate({}))
        assert error.status_code == 401 and provider.issuer in error.message and "API key" in error.message

    def test_run_bad_token_is_invalid_token(self, credentials, provider):
        error = refused(lambda: credentials.authenticate(bearer(provider.token("alice", exp_in=-300))))
        assert error.status_code == 401 and "expired" in error.message
        challenge = error.headers["WWW-Authenticate"]
        assert challenge.startswith('Bearer error="invalid_token", error_description="The token expired at ')

    def test_run_oidc_only_mode_refuses_an_api_key_as_not_a_jwt(self, credentials, alice_key):
        only = Credentials("oidc", keys=None, oidc=credentials.oidc)
        assert "not a JWT" in refused(lambda: only.authenticate(bearer(alice_key))).message

    def test_run_a_bare_key_store_in_oidc_mode_fails_loudly(self, keys_file, provider):
        with pytest.raises(TypeError, match="credentials"):
            resolve_identity(
                "oidc", ApiKeyStore(keys_file), bearer(provider.token("alice")), tenant_id=None, user_tags=None
            )


class TestTokenIdentity:
    def test_run_defaults_to_the_token(self, credentials, provider):
        identity = resolve_identity(
            "oidc,api_key", credentials, bearer(provider.token("alice")), tenant_id=None, user_tags=None
        )
        assert (identity.tenant_id, identity.user_tags, identity.user_id, identity.key_id) == (
            "acme",
            ("hr", "all-staff"),
            "alice",
            "oidc",
        )
        assert identity.delegated is False

    def test_run_body_only_narrows(self, credentials, provider):
        headers = bearer(provider.token("alice"))
        narrowed = resolve_identity("oidc", credentials, headers, tenant_id="acme", user_tags=["hr", "finance"])
        assert narrowed.user_tags == ("hr",)
        for fields, text in (
            ({"tenant_id": "globex"}, "token's tenant"),
            ({"user_id": "bob"}, "acts only as itself"),
            ({"user_tags": ["finance"]}, "are allowed for this token"),
        ):
            call = {"tenant_id": None, "user_tags": None, **fields}
            error = refused(lambda call=call: resolve_identity("oidc", credentials, headers, **call))
            assert error.status_code == 403 and text in error.message

    def test_run_no_mapped_group_sees_nothing(self, credentials, provider):
        headers = bearer(provider.token("nobody"))
        error = refused(lambda: resolve_identity("oidc", credentials, headers, tenant_id=None, user_tags=None))
        assert error.status_code == 403 and "grants no tags" in error.message

    def test_run_writes_need_a_granted_permission(self, credentials, provider):
        reader = bearer(provider.token("alice"))
        error = refused(lambda: authorize_write("oidc", credentials, reader, tenant_ids={"acme"}, tags={"hr"}))
        assert error.status_code == 403 and "token lacks the 'write' permission" in error.message
        editor = bearer(provider.token("editor"))
        assert (
            authorize_write("oidc", credentials, editor, tenant_ids={"acme"}, tags={"hr"}, user_ids={"editor"})
            == "oidc"
        )
        for kwargs, text in (
            ({"tenant_ids": {"globex"}}, "token's tenant"),
            ({"tenant_ids": {"acme"}, "tags": {"finance"}}, "token's tags"),
            ({"tenant_ids": {"acme"}, "user_ids": {"alice"}}, "acts only as itself"),
            ({"tenant_ids": {"acme"}, "permission": "admin"}, "'admin' permission"),
        ):
            error = refused(lambda kwargs=kwargs: authorize_write("oidc", credentials, editor, **kwargs))
            assert error.status_code == 403 and text in error.message
