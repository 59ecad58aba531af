"""
API-key identity mode over HTTP, and a restart on the same data dir.

A first server (trusted mode) indexes the sample corpus and records some answers, then stops.
A second server starts on the same data dir in ``api_key`` mode: it must serve the same answers
(the index survived the restart, nothing was re-indexed) and enforce the keys.
"""

import subprocess
import sys

import openai
import pytest
from support.api_server import REPO, ApiServer, error_of, settled_query_log

from components.stores import key_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MEAL = "What is the daily meal per diem when travelling for business within the Netherlands?"
QUERIES = ("vacation days annual leave", "expense claim receipts", "laptop replacement")
ACME_TAGS = ["hr", "all-staff", "finance"]


def _top3(client, query, headers=None, **identity):
    response = client.post("/search/run", json={"query": query, "k": 3, **identity}, headers=headers or {})
    assert response.status_code == 200, response.text
    return [hit["source_id"] for hit in response.json()["result"]["results"]]


def _rag(client, headers=None, **identity):
    response = client.post("/rag/run", json={"query": MEAL, **identity}, headers=headers or {})
    assert response.status_code == 200, response.text
    return response.json()["result"]


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("keys") / "data"
    with ApiServer(data_dir) as server:
        identity = {"tenant_id": "acme", "user_tags": ACME_TAGS, "user_id": "u-acme-priya"}
        baseline = {
            "search": {query: _top3(server.client, query, **identity) for query in QUERIES},
            "rag": _rag(server.client, **identity),
            "points": server.client.get("/health").json()["store"]["points"],
        }
    return data_dir, baseline


@pytest.fixture(scope="module")
def keys(first_run):
    data_dir, _ = first_run
    keys_file = data_dir / "api_keys.json"
    grants = {
        "reader": {"tenant_id": "acme", "tags": ACME_TAGS, "user_id": "u-acme-priya"},
        "writer": {"tenant_id": "acme", "tags": ["facilities"], "permissions": ["read", "write"]},
        "admin": {"tenant_id": "t-admin", "tags": ["ops"], "permissions": ["admin"]},
        "globex": {"tenant_id": "globex", "tags": ["people", "everyone", "accounting"]},
    }
    return {name: key_store.register_key(keys_file, **grant)[0] for name, grant in grants.items()}


@pytest.fixture(scope="module")
def server(first_run, keys):
    data_dir, _ = first_run
    with ApiServer(data_dir, env={"SOURCEBOUND_AUTH_MODE": "api_key"}) as running:
        yield running


def bearer(key):
    return {"Authorization": f"Bearer {key}"}


class TestRestart:
    def test_same_data_dir_serves_the_same_answers(self, server, first_run, keys):
        _, baseline = first_run
        health = server.client.get("/health").json()
        assert health["auth_mode"] == "api_key" and health["store"]["points"] == baseline["points"]
        for query, top3 in baseline["search"].items():
            assert _top3(server.client, query, bearer(keys["reader"])) == top3, query
        answer = _rag(server.client, bearer(keys["reader"]))
        assert (answer["answer"], answer["citations"], answer["action"]) == (
            baseline["rag"]["answer"], baseline["rag"]["citations"], baseline["rag"]["action"],
        )  # fmt: skip


class TestAuthentication:
    @pytest.mark.parametrize(
        "headers", [{}, {"Authorization": "Bearer sb_unknown"}, {"Authorization": "Basic dXNlcjpwYXNz"}]
    )
    def test_missing_or_unknown_key_is_401(self, server, headers):
        response = server.client.post("/search/run", json={"query": "vacation"}, headers=headers)
        error_of(response, 401, "unauthorized")
        assert response.headers["www-authenticate"] == "Bearer"

    def test_every_endpoint_needs_a_key(self, server):
        for path, body in (
            ("/rag/run", {"query": "x"}),
            ("/index/run", {"documents": [{"content": "x y z", "tenant_id": "acme", "tags": ["hr"]}]}),
            ("/invalidate/run", {"tenant_id": "acme", "document_ids": ["a"]}),
            ("/flags/run", {"tenant_id": "acme", "document_ids": ["a"], "tainted": True}),
            ("/delete_tenant/run", {"tenant_id": "acme"}),
            ("/v1/chat/completions", {"model": "rag", "messages": [{"role": "user", "content": "x"}]}),
        ):
            error_of(server.client.post(path, json=body), 401)
        files = {"files": ("a.txt", b"some text")}
        error_of(server.client.post("/index/upload", files=files, data={"tenant_id": "acme", "tags": "hr"}), 401)

    def test_health_and_metrics_stay_open(self, server):
        assert server.client.get("/health").status_code == 200 and server.client.get("/metrics").status_code == 200


class TestIdentityFromTheKey:
    def test_key_supplies_tenant_tags_and_user(self, server, keys):
        ids = _top3(server.client, "Priya Raman personal onboarding plan", bearer(keys["reader"]))
        assert ids and all(source.startswith("acme-") for source in ids)
        assert any(source.startswith("acme-onboarding-priya") for source in ids)

    def test_other_tenant_in_the_body_is_403(self, server, keys):
        response = server.client.post(
            "/search/run", json={"query": "vacation", "tenant_id": "globex"}, headers=bearer(keys["reader"])
        )
        assert "tenant" in error_of(response, 403, "forbidden")
        assert _top3(server.client, "vacation", bearer(keys["reader"]), tenant_id="acme")

    def test_other_user_in_the_body_is_403(self, server, keys):
        response = server.client.post(
            "/search/run", json={"query": "x", "user_id": "u-acme-maria"}, headers=bearer(keys["reader"])
        )
        error_of(response, 403)

    def test_body_tags_are_intersected_with_the_key(self, server, keys):
        response = server.client.post(
            "/search/run", json={"query": "budget", "user_tags": ["finance-restricted"]}, headers=bearer(keys["reader"])
        )
        error_of(response, 403)
        response = server.client.post(
            "/search/run",
            json={"query": "FY2025 budget compensation", "user_tags": ["hr", "finance-restricted"], "k": 10},
            headers=bearer(keys["reader"]),
        )  # fmt: skip
        hits = response.json()["result"]["results"]
        assert hits and all("hr" in hit["tags"] for hit in hits)
        assert all(hit["document_id"] != "acme-fy2025-budget" for hit in hits)

    def test_tenants_stay_apart(self, server, keys):
        assert all(
            source.startswith("globex-") for source in _top3(server.client, "expense per diem", bearer(keys["globex"]))
        )


class TestWrites:
    DOCUMENT = {
        "content": "The bike shed is behind building C and opens with the staff badge.",
        "tenant_id": "acme",
        "tags": ["facilities"],
    }

    def test_read_only_key_cannot_write(self, server, keys):
        response = server.client.post("/index/run", json={"documents": [self.DOCUMENT]}, headers=bearer(keys["reader"]))
        assert "write" in error_of(response, 403)

    def test_writer_indexes_within_its_tenant_and_tags(self, server, keys):
        headers = bearer(keys["writer"])
        response = server.client.post(
            "/index/run", json={"documents": [{**self.DOCUMENT, "document_id": "bike-shed"}]}, headers=headers
        )
        assert response.status_code == 200, response.text
        error_of(
            server.client.post("/index/run", json={"documents": [{**self.DOCUMENT, "tags": ["hr"]}]}, headers=headers),
            403,
        )
        error_of(
            server.client.post(
                "/index/run", json={"documents": [{**self.DOCUMENT, "tenant_id": "globex"}]}, headers=headers
            ),
            403,
        )
        files = {"files": ("shed.txt", b"Bike shed rules: no e-scooters charging inside.")}
        upload = server.client.post(
            "/index/upload", files=files, data={"tenant_id": "acme", "tags": "facilities"}, headers=headers
        )
        assert upload.status_code == 200, upload.text
        flags = {"tenant_id": "acme", "document_ids": ["bike-shed"], "verified": True}
        assert server.client.post("/flags/run", json=flags, headers=headers).status_code == 200
        invalidate = {"tenant_id": "acme", "document_ids": ["bike-shed"], "reason": "moved"}
        assert (
            server.client.post("/invalidate/run", json=invalidate, headers=headers).json()["result"]["invalidated"] == 1
        )

    def test_deleting_a_tenant_needs_admin(self, server, keys):
        error_of(
            server.client.post("/delete_tenant/run", json={"tenant_id": "acme"}, headers=bearer(keys["writer"])), 403
        )
        error_of(
            server.client.post("/delete_tenant/run", json={"tenant_id": "acme"}, headers=bearer(keys["admin"])), 403
        )
        response = server.client.post(
            "/delete_tenant/run", json={"tenant_id": "t-admin"}, headers=bearer(keys["admin"])
        )
        # Delete means gone (docs/contract.md "Deletion"): the tenant's keys go too, the admin's own included.
        removed = {
            "chunks": 0,
            "query_log_rows": 0,
            "index_events": 0,
            "tag_owners": 0,
            "api_keys": 1,
            "conversations": 0,
            "glossary": 0,
            "sentence_vectors": 0,
            "feedback": 0,
            "kept_questions": 0,
        }
        assert response.json()["result"] == {"tenant_id": "t-admin", "chunks_removed": 0, "removed": removed}
        error_of(
            server.client.post("/delete_tenant/run", json={"tenant_id": "t-admin"}, headers=bearer(keys["admin"])), 401
        )


class TestOpenAIClient:
    def test_key_is_the_identity(self, server, keys):
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=keys["reader"], max_retries=0)
        completion = client.chat.completions.create(model="rag", messages=[{"role": "user", "content": MEAL}])
        assert completion.model_extra["sourcebound"]["citations"]
        chunks = list(
            client.chat.completions.create(model="rag", messages=[{"role": "user", "content": MEAL}], stream=True)
        )
        assert chunks[-1].model_extra["sourcebound"]["action"] in {"CITE", "ROUTE"}

    def test_wrong_key_or_tenant(self, server, keys):
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=f"{server.url}/v1", api_key="sb_wrong", max_retries=0).chat.completions.create(
                model="rag", messages=[{"role": "user", "content": MEAL}]
            )
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=keys["reader"], max_retries=0)
        with pytest.raises(openai.PermissionDeniedError):
            client.chat.completions.create(
                model="rag", messages=[{"role": "user", "content": MEAL}], extra_body={"tenant_id": "globex"}
            )


class TestKeysAtRuntime:
    def test_cli_added_key_works_without_restart(self, server):
        output = subprocess.run(
            [sys.executable, "-m", "hayhooks_app", "keys", "--keys-file", str(server.data_dir / "api_keys.json"), "add",
             "--tenant", "globex", "--tags", "people", "--label", "test"],
            cwd=REPO, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        key = output.strip().splitlines()[-1]
        assert _top3(server.client, "holiday leave", bearer(key))

    def test_records_name_the_key(self, server, keys):
        import sqlite3

        _top3(server.client, "key id probe", bearer(keys["globex"]))
        settled_query_log(server.data_dir)
        with sqlite3.connect(server.data_dir / "records.sqlite") as connection:
            key_id, tenant = connection.execute(
                "SELECT key_id, tenant_id FROM query_log ORDER BY id DESC LIMIT 1"
            ).fetchone()
        assert key_id.startswith("key-") and tenant == "globex"
        assert keys["globex"] not in (server.data_dir / "api_keys.json").read_text()
