"""
``SOURCEBOUND_AUTH_MODE=oidc,api_key`` over real HTTP: a live server verifying tokens of an OpenID Connect
provider that runs in the test (tests/support/oidc_provider.py). Groups limit what a token sees, nothing in a
body widens it, every bad token is a 401 naming the problem, a rotated key is picked up, a leaver's next token
sees less, an expired one nothing, and ``sourcebound delete --user`` takes an OIDC user id.
"""

import json
import sqlite3
import time

import pytest
from joserfc import jwk
from support.api_server import ApiServer, error_of, settled_query_log
from support.mcp_client import call_tool, error_text
from support.oidc_provider import OidcProvider

from components.stores import key_store
from hayhooks_app.cli import main as sourcebound

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# An Auth0-style subject: the user id is whatever the provider says, separators included.
EDITOR = "auth0|5f7c8ec7c33c6c004bbafe82"
DOCUMENTS = [
    ("payroll-calendar", ["finance"], "Payroll calendar: salaries are paid on the 25th; the quokka bonus in March."),
    ("leave-policy", ["hr"], "Leave policy: parental leave is sixteen weeks; ask the quokka desk for forms."),
    ("canteen-menu", ["all-staff"], "Canteen menu: the quokka curry is served every Thursday."),
]
TAG_MAP = """\
tags:
  grp-finance: [finance, all-staff]
  grp-hr: [hr, all-staff]
  grp-editors: [hr]
permissions:
  grp-editors: [write]
"""


@pytest.fixture(scope="module")
def provider():
    with OidcProvider(audience="sourcebound") as running:
        running.users.update(
            {
                "alice": {"tid": "acme", "groups": ["grp-hr"]},
                "bob": {"tid": "acme", "groups": ["grp-finance"]},
                "mallory": {"tid": "globex", "groups": ["grp-finance", "grp-hr"]},
                "leaver": {"tid": "acme", "groups": ["grp-hr", "grp-finance"]},
                EDITOR: {"tid": "acme", "groups": ["grp-editors"]},
            }
        )
        yield running


@pytest.fixture(scope="module")
def server(tmp_path_factory, provider):
    data_dir = tmp_path_factory.mktemp("oidc") / "data"
    data_dir.mkdir(parents=True)
    (data_dir.parent / "groups.yml").write_text(TAG_MAP)
    service_key, _ = key_store.register_key(
        data_dir / "api_keys.json", tenant_id="acme", tags=["finance", "hr", "all-staff"], permissions=["read", "write"]
    )
    env = {
        "SOURCEBOUND_AUTH_MODE": "oidc,api_key",
        "SOURCEBOUND_BOOTSTRAP_CORPUS": "false",
        "SOURCEBOUND_OIDC_ISSUER": provider.issuer,
        "SOURCEBOUND_OIDC_AUDIENCE": "sourcebound",
        "SOURCEBOUND_OIDC_TENANT_CLAIM": "tid",
        "SOURCEBOUND_OIDC_TAG_MAP": str(data_dir.parent / "groups.yml"),
        "SOURCEBOUND_OIDC_LEEWAY_SECONDS": "1",
        "SOURCEBOUND_OIDC_JWKS_MIN_REFRESH_SECONDS": "1",
    }
    with ApiServer(data_dir, env=env) as running:
        documents = [
            {"document_id": doc_id, "tags": tags, "content": text, "tenant_id": "acme"}
            for doc_id, tags, text in DOCUMENTS
        ]
        response = running.client.post("/index/run", json={"documents": documents}, headers=bearer(service_key))
        assert response.status_code == 200, response.text
        running.service_key = service_key
        yield running


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def seen(server, token: str, **body) -> set[str]:
    response = server.client.post("/search/run", json={"query": "quokka", "k": 10, **body}, headers=bearer(token))
    assert response.status_code == 200, response.text
    return {hit["document_id"] for hit in response.json()["result"]["results"]}


class TestGroupsLimitWhatIsSeen:
    def test_each_token_sees_only_its_groups(self, server, provider):
        assert seen(server, provider.token("alice")) == {"leave-policy", "canteen-menu"}
        assert seen(server, provider.token("bob")) == {"payroll-calendar", "canteen-menu"}
        assert seen(server, provider.token("mallory")) == set()  # another tenant's token

    def test_the_body_only_narrows(self, server, provider):
        alice = provider.token("alice")
        assert seen(server, alice, user_tags=["all-staff"]) == {"canteen-menu"}
        for body, text in (
            ({"user_tags": ["finance"]}, "None of the requested user_tags"),
            ({"tenant_id": "globex"}, "token's tenant"),
            ({"user_id": "bob"}, "acts only as itself"),
        ):
            response = server.client.post("/search/run", json={"query": "quokka", **body}, headers=bearer(alice))
            assert text in error_of(response, 403, "forbidden")

    def test_answers_and_chat_cite_only_what_the_groups_allow(self, server, provider):
        bob = bearer(provider.token("bob"))
        result = server.client.post("/rag/run", json={"query": "When are salaries paid?"}, headers=bob).json()["result"]
        assert {c["document_id"] for c in result["citations"]} <= {"payroll-calendar", "canteen-menu"}
        alice = bearer(provider.token("alice"))
        chat = {"model": "rag", "messages": [{"role": "user", "content": "When are salaries paid?"}]}
        reply = server.client.post("/v1/chat/completions", json=chat, headers=alice)
        assert reply.status_code == 200, reply.text
        cited = {c["document_id"] for c in reply.json()["sourcebound"]["citations"]}
        assert "payroll-calendar" not in cited and "25th" not in reply.json()["choices"][0]["message"]["content"]

    def test_mcp_tools_take_the_token_too(self, server, provider):
        result = call_tool(
            server.url, "search_project_context", {"query": "quokka", "k": 10}, headers=bearer(provider.token("bob"))
        )
        assert {hit["document_id"] for hit in result.structuredContent["results"]} == {
            "payroll-calendar",
            "canteen-menu",
        }
        expired = call_tool(
            server.url, "search_project_context", {"query": "quokka"}, headers=bearer(provider.token("bob", exp_in=-60))
        )
        assert error_text(expired).startswith("401 unauthorized: The token expired at")

    def test_auth_me_shows_the_servers_view(self, server, provider):
        me = server.client.get("/auth/me", headers=bearer(provider.token(EDITOR))).json()
        assert me == {
            "credential": "token",
            "tenant_id": "acme",
            "user_id": EDITOR,
            "tags": ["hr"],
            "permissions": ["read", "write"],
            "expires_at": me["expires_at"],
            "key_id": "oidc",
        }
        assert server.client.get("/auth/me", headers=bearer(server.service_key)).json()["credential"] == "api_key"

    def test_the_query_log_names_the_user(self, server, provider):
        seen(server, provider.token("bob"))
        settled_query_log(server.data_dir)
        with sqlite3.connect(server.data_dir / "records.sqlite") as db:
            rows = db.execute("SELECT DISTINCT key_id FROM query_log WHERE user_id = 'bob'").fetchall()
        assert rows == [("oidc",)]


class TestBadTokens:
    @pytest.mark.parametrize(
        ("variant", "text"),
        [
            ("expired", "expired at"),
            ("audience", "audience 'another-api'"),
            ("issuer", "issuer 'https://idp.evil.example'"),
            ("unknown_key", "does not publish"),
            ("alg_none", "'none' (an unsigned token) is not allowed"),
            ("tampered", "signature does not verify"),
            ("not_a_jwt", "Unknown API key (and not a JWT"),
        ],
    )
    def test_every_bad_token_is_a_401_naming_the_problem(self, server, provider, variant, text):
        token = bad_token(provider, variant)
        for path, body in (
            ("/search/run", {"query": "quokka"}),
            ("/v1/chat/completions", {"model": "rag", "messages": [{"role": "user", "content": "quokka?"}]}),
        ):
            response = server.client.post(path, json=body, headers=bearer(token))
            assert text in error_of(response, 401, "unauthorized"), path
            assert response.headers["www-authenticate"].startswith('Bearer error="invalid_token"')

    def test_no_token_is_a_401_naming_the_provider(self, server, provider):
        response = server.client.post("/search/run", json={"query": "quokka"})
        assert provider.issuer in error_of(response, 401, "unauthorized")

    def test_a_rotated_key_is_fetched(self, server, provider):
        before = provider.hits.get("/jwks", 0)
        provider.rotate(keep_old=False)
        time.sleep(1.2)  # SOURCEBOUND_OIDC_JWKS_MIN_REFRESH_SECONDS=1 since the last fetch
        assert seen(server, provider.token("alice")) == {"leave-policy", "canteen-menu"}
        assert provider.hits.get("/jwks", 0) == before + 1


def bad_token(provider: OidcProvider, variant: str) -> str:
    import base64

    def segment(value):
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    if variant == "expired":
        return provider.token("alice", exp_in=-60)
    if variant == "audience":
        return provider.token("alice", aud="another-api")
    if variant == "issuer":
        return provider.token("alice", iss="https://idp.evil.example")
    if variant == "unknown_key":
        return provider.token("alice", key=jwk.RSAKey.generate_key(2048, parameters={"kid": "stolen-laptop"}))
    if variant == "alg_none":
        return f"{segment({'alg': 'none', 'kid': provider.signing_key.kid})}.{segment(provider.claims('alice'))}."
    if variant == "tampered":
        header, _, signature = provider.token("alice").split(".")
        return f"{header}.{segment(provider.claims('alice', groups=['grp-finance']))}.{signature}"
    return "not-a-jwt"


class TestLeavers:
    def test_the_next_token_carries_what_the_provider_says_now(self, server, provider):
        assert seen(server, provider.token("leaver")) == {"payroll-calendar", "leave-policy", "canteen-menu"}
        provider.users["leaver"]["groups"] = ["grp-hr"]  # moved out of finance
        assert seen(server, provider.token("leaver")) == {"leave-policy", "canteen-menu"}

    def test_no_grant_outlives_its_token(self, server, provider):
        token = provider.token("leaver", exp_in=2)
        assert seen(server, token) == {"leave-policy", "canteen-menu"}
        time.sleep(3.5)  # past exp and the 1 s leeway
        response = server.client.post("/search/run", json={"query": "quokka"}, headers=bearer(token))
        assert "expired" in error_of(response, 401, "unauthorized")


class TestWritesAndErasure:
    def test_a_token_writes_only_with_a_granted_permission(self, server, provider):
        document = {"document_id": "alice-note", "tags": ["hr"], "content": "quokka note", "tenant_id": "acme"}
        response = server.client.post(
            "/index/run", json={"documents": [document]}, headers=bearer(provider.token("alice"))
        )
        assert "lacks the 'write' permission" in error_of(response, 403, "forbidden")

    def test_delete_user_takes_an_oidc_user_id(self, server, provider, capsys):
        editor = bearer(provider.token(EDITOR))
        private = {
            "document_id": "editor-drafts",
            "tags": ["hr"],
            "scope": "user",
            "user_id": EDITOR,
            "content": "Draft: the quokka reorganisation plan for the editors.",
            "tenant_id": "acme",
        }
        response = server.client.post("/index/run", json={"documents": [private]}, headers=editor)
        assert response.status_code == 200, response.text
        assert "editor-drafts" in seen(server, provider.token(EDITOR))
        settled_query_log(server.data_dir)
        # The CLI beside the running server (forwarded over /admin/cli with the local admin credential).
        code = sourcebound(
            ["delete", "--user", EDITOR, "--tenant", "acme", "--json", "--data-dir", str(server.data_dir)]
        )
        report = json.loads(capsys.readouterr().out)
        assert code == 0 and report["user_id"] == EDITOR
        assert report["removed"]["chunks"] >= 1 and report["removed"]["query_log_rows"] >= 1
        assert "editor-drafts" not in seen(server, provider.token(EDITOR))


class TestServiceSide:
    def test_health_and_page_config(self, server, provider):
        health = server.client.get("/health").json()
        assert health["auth_mode"] == "oidc,api_key"
        assert health["identity_provider"]["issuer"] == provider.issuer and health["identity_provider"]["reachable"]
        config = server.client.get("/auth/config").json()
        assert config == {"auth_mode": "oidc,api_key", "oidc": {"sign_in": False, "issuer": provider.issuer}}
