"""
OpenID Connect tokens against a provider running in the test (tests/support/oidc_provider.py): the
verifier's refusals, the JWKS cache and its rate limit, claims to grant, the settings' checks.
"""

import base64
import hashlib
import hmac
import json
import time

import pytest
from joserfc import jwk, jwt
from support.oidc_provider import OidcProvider

from components.runtime.environment import ConfigError
from hayhooks_app.oidc.authenticator import OidcAuthenticator
from hayhooks_app.oidc.claims import ClaimMapping, OidcGrant, claim_value
from hayhooks_app.oidc.provider import IdentityProviderUnavailable, ProviderKeys
from hayhooks_app.oidc.settings import SIGNATURE_ALGORITHMS, OidcSettings
from hayhooks_app.oidc.verifier import InvalidToken, TokenVerifier

pytestmark = pytest.mark.unit


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _segment(value: dict) -> str:
    return _b64(json.dumps(value).encode())


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def provider():
    with OidcProvider(audience="sourcebound") as running:
        running.users["alice"] = {"tid": "acme", "groups": ["hr", "all-staff"]}
        running.users["bob"] = {"tid": "acme", "groups": ["finance"]}
        yield running


def settings_for(provider: OidcProvider, **overrides) -> OidcSettings:
    values = {"issuer": provider.issuer, "audiences": ("sourcebound",), "tenant_claim": "tid"}
    values.update(overrides)
    return OidcSettings(**values)


@pytest.fixture
def oidc(provider):
    return OidcAuthenticator(settings_for(provider))


def refusal(oidc: OidcAuthenticator, token: str) -> str:
    with pytest.raises(InvalidToken) as caught:
        oidc.grant(token)
    return str(caught.value)


class TestTokenVerifier:
    def test_init(self, provider):
        settings = settings_for(provider)
        keys = ProviderKeys(settings)
        verifier = TokenVerifier(settings, keys)
        assert verifier.settings is settings and verifier.keys is keys

    def test_run_valid_token_gives_its_grant(self, oidc, provider):
        grant = oidc.grant(provider.token("alice"))
        assert grant == OidcGrant(
            tenant_id="acme",
            user_id="alice",
            tags=("hr", "all-staff"),
            permissions=("read",),
            expires_at=grant.expires_at,
        )
        assert grant.expires_at > time.time() and grant.may_act_as("alice") and not grant.may_act_as("bob")

    def test_run_expired(self, oidc, provider):
        message = refusal(oidc, provider.token("alice", exp_in=-120))
        assert "expired" in message and "(exp)" in message

    def test_run_leeway_accepts_a_few_seconds_of_skew(self, oidc, provider):
        assert oidc.grant(provider.token("alice", exp_in=-5)).user_id == "alice"  # 30 s leeway
        future = int(time.time()) + 10
        assert oidc.grant(provider.token("alice", nbf=future, iat=future)).user_id == "alice"

    def test_run_not_yet_valid(self, oidc, provider):
        message = refusal(oidc, provider.token("alice", nbf=int(time.time()) + 600))
        assert "not valid before" in message and "(nbf)" in message

    def test_run_wrong_audience(self, oidc, provider):
        message = refusal(oidc, provider.token("alice", aud="another-api"))
        assert "audience 'another-api'" in message and "sourcebound" in message

    def test_run_audience_list_needs_one_of_ours(self, oidc, provider):
        assert oidc.grant(provider.token("alice", aud=["other", "sourcebound"])).user_id == "alice"
        assert "audience" in refusal(oidc, provider.token("alice", aud=["other", "third"]))

    def test_run_wrong_issuer(self, oidc, provider):
        message = refusal(oidc, provider.token("alice", iss="https://evil.example.com"))
        assert "issuer 'https://evil.example.com'" in message and provider.issuer in message

    @pytest.mark.parametrize("claim", ["exp", "aud", "iss"])
    def test_run_required_claims(self, oidc, provider, claim):
        assert f"no '{claim}' claim" in refusal(oidc, provider.token("alice", **{claim: None}))

    def test_run_key_never_published(self, oidc, provider):
        stranger = jwk.RSAKey.generate_key(2048, parameters={"kid": "never-published"})
        message = refusal(oidc, provider.token("alice", key=stranger))
        assert "key 'never-published'" in message and "does not publish" in message

    def test_run_published_kid_with_another_key_is_a_bad_signature(self, oidc, provider):
        forger = jwk.RSAKey.generate_key(2048)
        token = provider.token("alice", key=forger, header={"kid": provider.signing_key.kid})
        assert "signature does not verify" in refusal(oidc, token)

    def test_run_tampered_payload(self, oidc, provider):
        header, _, signature = provider.token("bob").split(".")
        forged = f"{header}.{_segment(provider.claims('bob', groups=['hr']))}.{signature}"
        assert "signature does not verify" in refusal(oidc, forged)

    def test_run_alg_none(self, oidc, provider):
        token = f"{_segment({'alg': 'none', 'kid': provider.signing_key.kid})}.{_segment(provider.claims('alice'))}."
        message = refusal(oidc, token)
        assert "'none' (an unsigned token) is not allowed" in message

    def test_run_hs256_signed_with_the_public_key(self, oidc, provider):
        # The key-confusion attack: HMAC keyed with the published RSA key, which anyone can fetch.
        public_pem = provider.signing_key.as_pem(private=False)
        signing_input = (
            f"{_segment({'alg': 'HS256', 'kid': provider.signing_key.kid})}.{_segment(provider.claims('alice'))}"
        )
        signature = _b64(hmac.new(public_pem, signing_input.encode(), hashlib.sha256).digest())
        assert "'HS256' is not allowed" in refusal(oidc, f"{signing_input}.{signature}")

    def test_run_algorithm_of_another_key_type(self, oidc, provider):
        ec = jwk.ECKey.generate_key("P-256")
        token = jwt.encode({"alg": "ES256", "kid": provider.signing_key.kid}, provider.claims("alice"), ec)
        assert "is a RSA key" in refusal(oidc, token)

    @pytest.mark.parametrize("token", ["sb_notajwt", "a.b", "###.###.###", "e30.e30.e30.e30"])
    def test_run_malformed(self, oidc, token):
        assert "not a" in refusal(oidc, token) and "JWT" in refusal(oidc, token)

    def test_run_rotated_key(self, provider):
        oidc = OidcAuthenticator(settings_for(provider, jwks_min_refresh_s=0))
        assert oidc.grant(provider.token("alice")).user_id == "alice"
        before = oidc.keys.fetches
        provider.rotate(keep_old=False)
        assert oidc.grant(provider.token("alice")).user_id == "alice"  # the unknown kid fetched the new JWKS
        assert oidc.keys.fetches == before + 1

    def test_run_withdrawn_key_stops_after_the_max_age(self, provider):
        clock = Clock()
        settings = settings_for(provider, jwks_max_age_s=600, jwks_min_refresh_s=60)
        oidc = OidcAuthenticator(settings, keys=ProviderKeys(settings, clock=clock))
        old = provider.signing_key
        token = provider.token("alice")
        assert oidc.grant(token).user_id == "alice"
        provider.rotate(keep_old=False)  # the provider withdraws the old key
        clock.now += 599
        assert oidc.grant(token).user_id == "alice"  # still cached
        clock.now += 2
        assert f"key '{old.kid}'" in refusal(oidc, token)

    def test_run_unknown_kids_are_rate_limited(self, provider):
        clock = Clock()
        settings = settings_for(provider, jwks_min_refresh_s=60)
        oidc = OidcAuthenticator(settings, keys=ProviderKeys(settings, clock=clock))
        oidc.grant(provider.token("alice"))
        fetched = provider.hits.get("/jwks", 0)
        for attempt in range(25):
            stranger = jwk.RSAKey.generate_key(2048, parameters={"kid": f"made-up-{attempt}"}) if attempt < 2 else None
            token = (
                provider.token("alice", key=stranger)
                if stranger
                else provider.token("alice", header={"kid": f"x{attempt}"})
            )
            refusal(oidc, token)
            clock.now += 1
        # 25 s of made-up key ids: no fetch at all (the first fetch was under 60 s before)
        assert provider.hits.get("/jwks", 0) == fetched
        clock.now += 60
        refusal(oidc, provider.token("alice", header={"kid": "after-the-interval"}))
        assert provider.hits.get("/jwks", 0) == fetched + 1

    def test_run_provider_down_is_unavailable_not_invalid(self, provider):
        settings = OidcSettings(
            issuer="http://127.0.0.1:9", audiences=("sourcebound",), tenant="acme", http_timeout_s=1
        )
        oidc = OidcAuthenticator(settings)
        with pytest.raises(IdentityProviderUnavailable) as caught:
            oidc.grant(provider.token("alice"))
        assert "http://127.0.0.1:9" in str(caught.value)
        assert oidc.keys.status()["reachable"] is False

    def test_run_discovery_must_name_the_configured_issuer(self, provider):
        oidc = OidcAuthenticator(settings_for(provider, issuer=provider.issuer + "/"))
        with pytest.raises(IdentityProviderUnavailable) as caught:
            oidc.grant(provider.token("alice"))
        assert "names issuer" in str(caught.value)

    def test_run_nothing_cached_per_token(self, oidc, provider):
        provider.users["carol"] = {"tid": "acme", "groups": ["hr"]}
        assert oidc.grant(provider.token("carol")).tags == ("hr",)
        provider.users["carol"]["groups"] = []  # the leaver: the provider's next token has no groups
        assert oidc.grant(provider.token("carol")).tags == ()


class TestClaimMapping:
    def test_init(self, provider, tmp_path):
        table = tmp_path / "map.yml"
        table.write_text("tags:\n  g-1: [hr]\npermissions:\n  g-2: [write]\n")
        mapping = ClaimMapping(settings_for(provider, tag_map=table))
        assert mapping.tag_map.tags == {"g-1": ("hr",)} and mapping.tag_map.permissions == {"g-2": ("write",)}

    def test_run_fixed_tenant_and_user_claim(self, provider):
        mapping = ClaimMapping(settings_for(provider, tenant_claim=None, tenant="globex", user_claim="email"))
        grant = mapping.grant({"sub": "x", "email": "dana@globex.example", "groups": ["ops"], "exp": 2e9})
        assert (grant.tenant_id, grant.user_id, grant.tags) == ("globex", "dana@globex.example", ("ops",))

    def test_run_nested_and_dotted_claims(self, provider):
        claims = {"realm_access": {"roles": ["hr"]}, "https://example.com/groups": ["eng"]}
        assert claim_value(claims, "realm_access.roles") == ["hr"]
        assert claim_value(claims, "https://example.com/groups") == ["eng"]
        assert claim_value(claims, "realm_access.missing") is None

    def test_run_mapping_table(self, provider, tmp_path):
        table = tmp_path / "map.yml"
        table.write_text(
            "tags:\n  2c8f-guid: [finance, all-staff]\n  hr-team: [hr, all-staff]\npermissions:\n  editors: [write]\n"
        )
        mapping = ClaimMapping(settings_for(provider, tag_map=table))
        grant = mapping.grant(
            {"sub": "u", "tid": "acme", "groups": ["2c8f-guid", "hr-team", "editors", "x"], "exp": 2e9}
        )
        assert grant.tags == ("finance", "all-staff", "hr")  # unmapped values grant nothing
        assert grant.permissions == ("read", "write")

    def test_run_a_string_claim_is_one_value(self, provider):
        mapping = ClaimMapping(settings_for(provider, tags_claim="hd"))
        assert mapping.grant({"sub": "u", "tid": "t", "hd": "acme.example", "exp": 2e9}).tags == ("acme.example",)

    @pytest.mark.parametrize(
        ("claims", "problem"),
        [
            ({"tid": "acme"}, "'sub' claim"),
            ({"sub": "", "tid": "acme"}, "'sub' claim"),
            ({"sub": "u" * 300, "tid": "acme"}, "'sub' claim"),
            ({"sub": "u"}, "'tid' claim"),
            ({"sub": "u", "tid": ["acme"]}, "'tid' claim"),
        ],
    )
    def test_run_missing_identity_claims(self, provider, claims, problem):
        with pytest.raises(InvalidToken) as caught:
            ClaimMapping(settings_for(provider)).grant({**claims, "exp": 2e9})
        assert problem in str(caught.value)

    @pytest.mark.parametrize(
        "content", ["tags: [a, b]\n", "tags:\n  g: hr\n", "roles:\n  g: [hr]\n", "permissions:\n  g: [root]\n"]
    )
    def test_run_bad_mapping_table(self, provider, tmp_path, content):
        table = tmp_path / "map.yml"
        table.write_text(content)
        with pytest.raises(ConfigError) as caught:
            ClaimMapping(settings_for(provider, tag_map=table))
        assert "SOURCEBOUND_OIDC_TAG_MAP" in str(caught.value)


class TestOidcSettings:
    def test_from_env(self, monkeypatch):
        monkeypatch.setenv("SOURCEBOUND_OIDC_ISSUER", "https://login.example.com/realms/acme")
        monkeypatch.setenv("SOURCEBOUND_OIDC_CLIENT_ID", "web")
        monkeypatch.setenv("SOURCEBOUND_OIDC_TENANT", "acme")
        monkeypatch.setenv("SOURCEBOUND_OIDC_TAGS_CLAIM", "realm_access.roles")
        settings = OidcSettings.from_env()
        assert settings.audiences == ("web",)  # the page's ID tokens
        assert settings.tags_claim == "realm_access.roles" and settings.user_claim == "sub"
        assert settings.algorithms == SIGNATURE_ALGORITHMS and settings.leeway_s == 30
        assert settings.discovery_url == "https://login.example.com/realms/acme/.well-known/openid-configuration"

    @pytest.mark.parametrize(
        ("overrides", "named"),
        [
            ({"algorithms": ("RS256", "HS256")}, "SOURCEBOUND_OIDC_ALGORITHMS"),
            ({"algorithms": ("none",)}, "SOURCEBOUND_OIDC_ALGORITHMS"),
            ({"tenant": "acme", "tenant_claim": "tid"}, "exactly one"),
            ({"tenant": None, "tenant_claim": None}, "exactly one"),
            ({"issuer": "http://idp.example.com"}, "SOURCEBOUND_OIDC_ISSUER"),
            ({"audiences": ()}, "SOURCEBOUND_OIDC_AUDIENCE"),
            ({"permissions": ("read", "root")}, "SOURCEBOUND_OIDC_PERMISSIONS"),
            ({"client_id": "web"}, "add it to SOURCEBOUND_OIDC_AUDIENCE"),
        ],
    )
    def test_init_refuses(self, overrides, named):
        values = {"issuer": "https://idp.example.com", "audiences": ("api",), "tenant": "acme"}
        values.update(overrides)
        with pytest.raises(ConfigError) as caught:
            OidcSettings(**values)
        assert named in str(caught.value)

    def test_from_env_needs_an_issuer(self, monkeypatch):
        monkeypatch.delenv("SOURCEBOUND_OIDC_ISSUER", raising=False)
        with pytest.raises(ConfigError, match="SOURCEBOUND_OIDC_ISSUER is required"):
            OidcSettings.from_env()


class TestOidcAuthenticator:
    def test_web_config(self, provider):
        oidc = OidcAuthenticator(
            settings_for(provider, client_id="sourcebound-web", audiences=("sourcebound", "sourcebound-web"))
        )
        config = oidc.web_config()
        assert config["sign_in"] is True and config["client_id"] == "sourcebound-web"
        assert config["authorization_endpoint"] == f"{provider.issuer}/authorize"
        assert config["token_endpoint"] == f"{provider.issuer}/token" and config["token"] == "id_token"
        assert not any("secret" in name for name in config)
        assert oidc.token_origin() == provider.issuer

    def test_web_config_without_a_client(self, oidc):
        assert oidc.web_config()["sign_in"] is False and oidc.token_origin() is None
