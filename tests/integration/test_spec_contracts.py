"""
Clients written to the three specifications, against a live server (docs/api.md, "Specification routes").

Each specification's own examples, run as written: the DATS RAG service's integration test and ``RAGClient``
(test-only copies in ``tests/support/spec_clients``, run unchanged apart from the base URL and, in ``api_key`` mode,
a bearer key) and its request/response examples; the microservice plan's ``/rag/query``, ``/rag/enrich`` and
``/rag/ingest`` with their fields; the RAG Standard's curl lines (``GET /search?q=timesheet&k=5``, ``POST /chat``)
and its enhanced ``/health``. Then the negatives: an unknown artifact, a foreign tenant, bad fields.

Two servers for the module: trusted mode with ``SOURCEBOUND_DEFAULT_TENANT`` / ``SOURCEBOUND_DEFAULT_TAGS`` (a client
that sends no identity), and ``api_key`` mode with keys of two tenants.
"""

import asyncio
import importlib
from typing import Any

import httpx
import pytest
from support.api_server import ApiServer, error_of

from components.stores import key_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CLOCKIFY = [
    {
        "content": "To submit a timesheet, open the Timesheet page, fill in the week and click Submit for approval. "
        "Your manager then approves or rejects the submitted timesheet.",
        "document_id": "clockify-submit-timesheet",
        "document_name": "Submit Timesheet",
        "source_uri": "https://help.clockify.me/article/submit-timesheet",
    },
    {
        "content": "Clockify can lock timesheets so that nobody edits entries older than a given date. "
        "Admins set the lock date in the workspace settings.",
        "document_id": "clockify-lock-timesheets",
        "document_name": "Lock Timesheets",
        "source_uri": "https://help.clockify.me/article/lock-timesheets",
    },
]
# The specification's own embed example (docs: POST /embed).
EMBED_EXAMPLE = {
    "content": "def fibonacci(n: int) -> int:\n    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)",
    "metadata": {
        "artifact_id": "art-789",
        "provenance_id": "prov-012",
        "task_id": "task-345",
        "project_id": "proj-123",
        "domain": "code-general",
        "doc_type": "output",
        "verified": True,
    },
}


def _index(server: ApiServer, tenant: str, tags: list[str], headers: dict | None = None) -> None:
    documents = [{**document, "tenant_id": tenant, "tags": tags} for document in CLOCKIFY]
    response = server.client.post("/index/run", json={"documents": documents}, headers=headers)
    assert response.status_code == 200, response.text


@pytest.fixture(scope="module")
def trusted(tmp_path_factory):
    env = {"SOURCEBOUND_BOOTSTRAP_CORPUS": "false", "SOURCEBOUND_DEFAULT_TENANT": "dats",
           "SOURCEBOUND_DEFAULT_TAGS": "all"}  # fmt: skip
    with ApiServer(tmp_path_factory.mktemp("spec-trusted") / "data", env=env) as server:
        _index(server, "dats", ["all"])
        yield server


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    base = tmp_path_factory.mktemp("spec-keys")
    keys_file = base / "keys.json"
    grants = {
        "writer": {"tenant_id": "dats", "tags": ["all"], "permissions": ["read", "write"]},
        "reader": {"tenant_id": "dats", "tags": ["all"], "user_id": "u-reader"},
        "foreign": {"tenant_id": "globex", "tags": ["all"], "permissions": ["read", "write"]},
    }
    keys = {name: key_store.register_key(keys_file, **grant)[0] for name, grant in grants.items()}
    env = {"SOURCEBOUND_BOOTSTRAP_CORPUS": "false", "SOURCEBOUND_AUTH_MODE": "api_key",
           "SOURCEBOUND_API_KEYS_FILE": str(keys_file)}  # fmt: skip
    with ApiServer(base / "data", env=env) as server:
        server.keys = keys
        _index(server, "dats", ["all"], headers=_bearer(keys["writer"]))
        yield server


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _run_spec_integration_test(base_url: str, headers: dict[str, str] | None = None) -> None:
    module = importlib.import_module("support.spec_clients.dats_integration")

    async def run() -> None:
        async with httpx.AsyncClient(base_url=base_url, headers=headers or {}, timeout=60) as client:
            module.client = client
            await module.test_embed_then_query()

    asyncio.run(run())


def _with_rag_client(base_url: str, headers: dict[str, str] | None, scenario) -> Any:
    from support.spec_clients.dats_rag_client import RAGClient

    async def run() -> Any:
        client = RAGClient(base_url=f"{base_url}/api/v1", timeout=60.0)
        client.client.headers.update(headers or {})
        try:
            return await scenario(client)
        finally:
            await client.close()

    return asyncio.run(run())


async def _rag_client_scenario(client) -> dict[str, Any]:
    """What a DATS worker does: embed an approved output, query it (the worker's call), invalidate it."""
    embedded = await client.embed(EMBED_EXAMPLE["content"], EMBED_EXAMPLE["metadata"])
    worker = await client.query(query="How to implement fibonacci in Python?", project_id="proj-123",
                                domain="code-general")  # fmt: skip
    other_project = await client.query(query="How to implement fibonacci in Python?", project_id="proj-999")
    plain = await client.query("fibonacci implementation")
    invalidated = await client.invalidate("art-789")
    after = await client.query("fibonacci implementation")
    try:
        await client.invalidate("art-789")
        missing = None
    except httpx.HTTPStatusError as error:
        missing = error.response.status_code
    return {"embedded": embedded, "worker": worker, "other_project": other_project, "plain": plain,
            "invalidated": invalidated, "after": after, "missing": missing}  # fmt: skip


def _check_rag_client(outcome: dict[str, Any]) -> None:
    embedded = outcome["embedded"]
    assert {"id", "artifact_id", "status", "chunks", "tokens", "latency_ms"} <= set(embedded)
    assert (embedded["artifact_id"], embedded["status"]) == ("art-789", "indexed") and embedded["chunks"] >= 1
    assert embedded["id"].startswith("emb-")
    worker = outcome["worker"]
    assert {"id", "query", "context", "sources", "tokens_used", "search_mode", "metadata"} <= set(worker)
    assert worker["query"] == "How to implement fibonacci in Python?" and worker["search_mode"] == "hybrid"
    assert worker["id"] and "fibonacci" in worker["context"]
    assert {"vector_results", "keyword_results", "latency_ms"} <= set(worker["metadata"])
    (source,) = worker["sources"]  # project and domain filter the clockify pages out
    assert (source["artifact_id"], source["provenance_id"]) == ("art-789", "prov-012")
    assert isinstance(source["relevance_score"], float) and "fibonacci" in source["snippet"]
    assert outcome["other_project"]["sources"] == [] and outcome["other_project"]["context"] == ""
    assert "art-789" in [one["artifact_id"] for one in outcome["plain"]["sources"]]
    invalidated = outcome["invalidated"]
    assert invalidated["artifact_id"] == "art-789" and invalidated["status"] == "invalidated"
    assert invalidated["removed_chunks"] == embedded["chunks"]
    assert "art-789" not in [one["artifact_id"] for one in outcome["after"]["sources"]]
    assert outcome["missing"] == 404


# ---------------------------------------------------------------------- DATS RAG API


class TestDatsTrusted:
    def test_the_specifications_integration_test(self, trusted):
        _run_spec_integration_test(trusted.url)

    def test_the_specifications_rag_client(self, trusted):
        _check_rag_client(_with_rag_client(trusted.url, None, _rag_client_scenario))

    def test_the_query_example_and_its_defaults(self, trusted):
        http = trusted.client
        unverified = {"content": "def fibonacci_draft(n): pass  # unreviewed draft of fibonacci",
                      "metadata": {"artifact_id": "art-draft", "verified": False, "project_id": "proj-123",
                                   "domain": "code-general"}}  # fmt: skip
        assert http.post("/api/v1/embed", json=EMBED_EXAMPLE).status_code == 200
        assert http.post("/api/v1/embed", json=unverified).json()["artifact_id"] == "art-draft"
        example = {
            "query": "How to implement fibonacci in Python?", "project_id": "proj-123", "domain": "code-general",
            "max_tokens": 2000, "search_mode": "hybrid", "filters": {"verified_only": True, "exclude_tainted": True},
        }  # fmt: skip
        result = http.post("/api/v1/query", json=example).json()
        assert [one["artifact_id"] for one in result["sources"]] == ["art-789"]
        # Without filters the specification's defaults apply (verified only); a client may ask for drafts.
        bare = http.post("/api/v1/query", json={"query": "fibonacci draft", "project_id": "proj-123"}).json()
        assert [one["artifact_id"] for one in bare["sources"]] == ["art-789"]
        drafts = http.post(
            "/api/v1/query",
            json={"query": "fibonacci draft", "project_id": "proj-123", "filters": {"verified_only": False}},
        ).json()
        assert {one["artifact_id"] for one in drafts["sources"]} == {"art-789", "art-draft"}
        for mode in ("vector", "keyword"):
            moded = http.post("/api/v1/query", json={**example, "search_mode": mode}).json()
            assert moded["search_mode"] == mode and [s["artifact_id"] for s in moded["sources"]] == ["art-789"]
        # A small budget keeps the context within it.
        # (A question the indexed code answers: an unrelated one finds nothing above the minimum similarity.)
        small = http.post(
            "/api/v1/query", json={"query": "How to implement fibonacci in Python?", "max_tokens": 100}
        ).json()
        assert 0 < small["tokens_used"] <= 100, {k: v for k, v in small.items() if k != "context"}

    def test_batch_invalidation_finds_artifacts_whatever_their_document_id(self, trusted):
        http = trusted.client
        for number in range(3):
            body = {"content": f"Cascade artifact {number}: the ochre relay trips at {number + 3} amps.",
                    "metadata": {"artifact_id": f"art-79{number}", "document_id": f"relay-doc-{number}"}}  # fmt: skip
            assert http.post("/api/v1/embed", json=body).json()["document_id"] == f"relay-doc-{number}"
        request = {"artifact_ids": ["art-790", "art-791", "art-792", "art-unknown"], "reason": "upstream_taint",
                   "cascade_id": "cascade-123"}  # fmt: skip
        result = http.post("/api/v1/embeddings/batch-invalidate", json=request).json()
        assert (result["invalidated"], result["chunks_removed"], result["cascade_id"]) == (3, 3, "cascade-123")
        assert result["not_found"] == ["art-unknown"]
        left = http.post("/api/v1/query", json={"query": "ochre relay trips amps", "filters": {"verified_only": False}})
        assert all(not one["artifact_id"].startswith("art-79") for one in left.json()["sources"])

    def test_health(self, trusted):
        health = trusted.client.get("/api/v1/health")
        assert health.status_code == 200
        body = health.json()
        assert body["status"] == "healthy" and body["version"]
        assert body["lightrag"]["status"] == "connected" and body["lightrag"]["index_size"] >= 2
        assert body["lightrag"]["embedding_model"] == "sentence-transformers/all-MiniLM-L6-v2"
        assert set(body["embedding_queue"]) >= {"pending", "processing"}

    @pytest.mark.parametrize(
        ("path", "body", "needle"),
        [
            ("/api/v1/embed", {"content": "too short", "metadata": {"artifact_id": "a"}}, "content"),
            ("/api/v1/embed", {"content": "long enough content", "metadata": {"project_id": "p"}}, "artifact_id"),
            ("/api/v1/embed", {"content": "long enough content"}, "metadata"),
            ("/api/v1/embed", {"content": "long enough content", "metadata": {"artifact_id": "a", "x": {"y": 1}}},
             "metadata.x"),
            ("/api/v1/embed", {"content": "long enough content", "metadata": {"artifact_id": "a", "scope": "user"}},
             "user_id"),
            ("/api/v1/embed", {"content": "long enough content", "metadata": {"artifact_id": "a", "chunk_index": 1}},
             "chunk_index"),
            ("/api/v1/query", {"query": "x", "max_tokens": 50}, "max_tokens"),
            ("/api/v1/query", {"query": "x", "search_mode": "fuzzy"}, "search_mode"),
            ("/api/v1/query", {"query": "   "}, "query"),
            ("/api/v1/query", {"query": "x", "filters": {"tenant_id": "globex"}}, "filters.tenant_id"),
            ("/api/v1/query", {"query": "x", "max_tokens": "2000"}, "max_tokens"),
            ("/api/v1/query", {"query": "x", "k": 500}, "k"),
            ("/api/v1/query", {"qeury": "x"}, "qeury"),
            ("/api/v1/embeddings/batch-invalidate", {"artifact_ids": []}, "artifact_ids"),
            ("/api/v1/embeddings/batch-invalidate", {"artifact_ids": ["a"], "cascade_id": "bad id!"}, "cascade_id"),
        ],
    )  # fmt: skip
    def test_bad_fields_are_422_naming_them_and_change_nothing(self, trusted, path, body, needle):
        points = trusted.client.get("/health").json()["store"]["points"]
        assert needle in error_of(trusted.client.post(path, json=body), 422, "validation_error")
        assert trusted.client.get("/health").json()["store"]["points"] == points

    def test_not_json_is_400(self, trusted):
        response = trusted.client.post(
            "/api/v1/query", content=b"{not json", headers={"content-type": "application/json"}
        )
        error_of(response, 400, "invalid_json")


class TestDatsApiKey:
    def test_the_specifications_integration_test_with_a_bearer_key(self, keyed):
        _run_spec_integration_test(keyed.url, _bearer(keyed.keys["writer"]))

    def test_the_specifications_rag_client_with_a_bearer_key(self, keyed):
        _check_rag_client(_with_rag_client(keyed.url, _bearer(keyed.keys["writer"]), _rag_client_scenario))

    def test_without_a_key_every_route_is_401(self, keyed):
        http = keyed.client
        error_of(http.post("/api/v1/query", json={"query": "hello"}), 401, "unauthorized")
        error_of(http.post("/api/v1/embed", json=EMBED_EXAMPLE), 401, "unauthorized")
        error_of(http.delete("/api/v1/embeddings/test-123"), 401, "unauthorized")
        error_of(http.post("/api/v1/embeddings/batch-invalidate", json={"artifact_ids": ["a"]}), 401)

    def test_a_foreign_tenant_sees_and_changes_nothing(self, keyed):
        http, writer, foreign = keyed.client, _bearer(keyed.keys["writer"]), _bearer(keyed.keys["foreign"])
        body = {
            "content": "The vermilion ledger closes on the fifth working day.",
            "metadata": {"artifact_id": "ledger"},
        }
        assert http.post("/api/v1/embed", json=body, headers=writer).status_code == 200
        seen = http.post("/api/v1/query", json={"query": "vermilion ledger closes"}, headers=foreign).json()
        assert seen["sources"] == [] and "vermilion" not in seen["context"]
        # Another tenant's artifact is not found: the same 404 as an artifact that never existed.
        gone = error_of(http.delete("/api/v1/embeddings/ledger", headers=foreign), 404, "not_found")
        assert gone == error_of(http.delete("/api/v1/embeddings/never-was", headers=foreign), 404, "not_found").replace(
            "never-was", "ledger"
        )
        batch = http.post("/api/v1/embeddings/batch-invalidate", json={"artifact_ids": ["ledger"]}, headers=foreign)
        assert batch.json()["invalidated"] == 0
        # Naming the other tenant is refused, for reads and writes alike.
        error_of(http.post("/api/v1/query", json={"query": "ledger", "tenant_id": "dats"}, headers=foreign), 403)
        smuggled = {**body, "metadata": {"artifact_id": "x", "tenant_id": "dats"}}
        error_of(http.post("/api/v1/embed", json=smuggled, headers=foreign), 403, "forbidden")
        error_of(http.delete("/api/v1/embeddings/ledger?tenant_id=dats", headers=foreign), 403, "forbidden")
        # The owner still finds it; a read-only key of the tenant may read but not invalidate.
        mine = http.post("/api/v1/query", json={"query": "vermilion ledger closes"}, headers=writer).json()
        assert "ledger" in [one["artifact_id"] for one in mine["sources"]]
        reader = _bearer(keyed.keys["reader"])
        assert http.post("/api/v1/query", json={"query": "vermilion ledger"}, headers=reader).status_code == 200
        error_of(http.delete("/api/v1/embeddings/ledger", headers=reader), 403, "forbidden")
        assert http.delete("/api/v1/embeddings/ledger", headers=writer).json()["removed_chunks"] == 1


# ---------------------------------------------------------------------- the microservice plan


class TestServicePlan:
    def test_ingest_then_query_and_enrich_within_scopes(self, trusted):
        http = trusted.client
        ingest = {
            "source_type": "readme",
            "source_id": "atlas/README.md",
            "content": "# Atlas\n\n## Storage\n\nAtlas keeps its records in PostgreSQL with the pgvector extension.\n\n"
            "## Team\n\nThe Atlas team meets every Thursday.",
            "metadata": {"scope": "project", "user_id": "u1", "project_id": "atlas"},
        }
        first = http.post("/rag/ingest", json=ingest)
        assert first.status_code == 200, first.text
        result = first.json()["result"]
        assert (result["source_id"], result["status"]) == ("atlas/README.md", "indexed") and result["chunks"] >= 1
        assert http.post("/rag/ingest", json=ingest).json()["result"]["status"] == "unchanged"  # idempotent
        query = {"scope": "project", "user_id": "u1", "project_id": "atlas",
                 "query": "Where does Atlas keep its records?", "top_k": 3, "mode": "hybrid"}  # fmt: skip
        hits = http.post("/rag/query", json=query).json()["result"]
        assert hits["results"] and hits["results"][0]["document_id"] == result["document_id"]
        assert hits["results"][0]["title"] == "README.md" and hits["empty_reason"] is None
        assert "Storage" in hits["context"]  # Markdown read by its headings
        # Another user, or the same user outside the project, sees nothing of it.
        other = http.post("/rag/query", json={**query, "user_id": "u2"}).json()["result"]
        assert other["results"] == [] and other["empty_reason"]
        assert http.post("/rag/query", json={**query, "scope": "user"}).json()["result"]["results"] == []
        for alias, mode in (("fts", "keyword"), ("vector", "vector"), ("bm25", "keyword"), ("dense", "vector")):
            assert http.post("/rag/query", json={**query, "mode": alias}).json()["result"]["search_mode"] == mode
        enrich = {"scope": "project", "user_id": "u1", "project_id": "atlas",
                  "message": "Which database does Atlas use?", "top_k": 2}  # fmt: skip
        context = http.post("/rag/enrich", json=enrich)
        assert context.status_code == 200, context.text
        assert "pgvector" in context.json()["result"]["context"]
        assert context.json()["result"]["message"] == enrich["message"]
        tenant_wide = http.post("/rag/enrich", json={**enrich, "scope": "tenant"}).json()["result"]
        assert "pgvector" not in tenant_wide["context"]

    @pytest.mark.parametrize(
        ("path", "body", "needle"),
        [
            ("/rag/query", {"query": "x", "scope": "project", "user_id": "u1"}, "scope 'project' needs"),
            ("/rag/query", {"query": "x", "scope": "user"}, "scope 'user' needs user_id"),
            ("/rag/query", {"query": "x", "scope": "everyone"}, "scope"),
            ("/rag/query", {"query": "x", "mode": "fuzzy"}, "mode"),
            ("/rag/query", {"query": "x", "top_k": 0}, "top_k"),
            ("/rag/enrich", {"message": "x", "scope": "project"}, "scope 'project' needs"),
            ("/rag/enrich", {"message": "x", "top_k": 50}, "top_k"),
            ("/rag/ingest", {"source_type": "readme", "source_id": "a", "content": "  "}, "content"),
            ("/rag/ingest", {"source_type": "read me", "source_id": "a", "content": "text"}, "source_type"),
            ("/rag/ingest", {"source_type": "readme", "content": "text"}, "source_id"),
            ("/rag/ingest", {"source_type": "spec", "source_id": "a", "content": "t", "metadata": {"scope": "project"}},
             "project_id"),
        ],
    )  # fmt: skip
    def test_bad_fields_are_422(self, trusted, path, body, needle):
        assert needle in error_of(trusted.client.post(path, json=body), 422, "validation_error")

    def test_api_key_mode_takes_the_user_from_the_key(self, keyed):
        http, reader = keyed.client, _bearer(keyed.keys["reader"])
        error_of(http.post("/rag/query", json={"query": "x"}), 401)
        # The reader key acts as u-reader: scope user needs no user_id in the body, another user_id is refused.
        assert http.post("/rag/query", json={"query": "timesheet", "scope": "user"}, headers=reader).status_code == 200
        error_of(http.post("/rag/query", json={"query": "x", "user_id": "u-other"}, headers=reader), 403)
        error_of(
            http.post("/rag/ingest", json={"source_type": "spec", "source_id": "s", "content": "t"}, headers=reader),
            403,
            "forbidden",
        )


# ---------------------------------------------------------------------- the RAG Standard


class TestRagStandard:
    def test_the_curl_lines(self, trusted):
        # curl 'http://localhost:7000/search?q=timesheet&k=5'
        search = httpx.get(f"{trusted.url}/search?q=timesheet&k=5", timeout=60)
        assert search.status_code == 200
        body = search.json()
        assert (body["query"], body["k"]) == ("timesheet", 5) and 1 <= len(body["results"]) <= 5
        first = body["results"][0]
        assert {"url", "title", "snippet", "score", "chunk_id", "glossary_terms"} <= set(first)
        assert first["url"].startswith("https://help.clockify.me/article/") and first["title"] in {
            "Submit Timesheet", "Lock Timesheets"
        }  # fmt: skip
        assert first["chunk_id"].startswith("clockify-") and ":" in first["chunk_id"]
        # curl -X POST http://localhost:7000/chat -H 'Content-Type: application/json'
        #   -d '{"question": "How do I submit a timesheet?"}'
        chat = httpx.post(
            f"{trusted.url}/chat",
            headers={"Content-Type": "application/json"},
            content='{"question": "How do I submit a timesheet?"}',
            timeout=60,
        )
        assert chat.status_code == 200, chat.text
        answer = chat.json()
        assert answer["question"] == "How do I submit a timesheet?" and "Submit" in answer["answer"]
        assert answer["citations"] and set(answer["citation_map"]) == set(answer["citations"])
        cited = answer["citation_map"][answer["citations"][0]]
        assert cited == {"url": "https://help.clockify.me/article/submit-timesheet", "title": "Submit Timesheet"}
        for source_id in answer["citations"]:
            assert f"[SourceId: {source_id}]" in answer["answer"]

    def test_search_defaults_and_determinism(self, trusted):
        default = trusted.client.get("/search", params={"q": "timesheet lock date"}).json()
        assert default["k"] == 5  # RAG_TOP_K unset: RAG_TOTAL_CONTEXT_CHUNKS' default
        again = trusted.client.get("/search", params={"q": "timesheet lock date"}).json()
        assert [r["chunk_id"] for r in again["results"][:3]] == [r["chunk_id"] for r in default["results"][:3]]

    def test_the_enhanced_health(self, trusted):
        health = trusted.client.get("/health").json()
        assert health["rag_ok"] is True and health["rag_details"].startswith("Index loaded: ")
        metrics = health["index_metrics"]
        assert metrics["total_chunks"] == metrics["total_vectors"] == health["store"]["points"] > 0
        assert metrics["dimension"] == 384

    def test_bad_requests(self, trusted, keyed):
        error_of(trusted.client.get("/search"), 422, "validation_error")
        assert "k" in error_of(trusted.client.get("/search", params={"q": "x", "k": 0}), 422)
        assert "q" in error_of(trusted.client.get("/search", params={"q": "  "}), 422)
        assert "question" in error_of(trusted.client.post("/chat", json={"question": ""}), 422)
        assert "questoin" in error_of(trusted.client.post("/chat", json={"questoin": "x"}), 422)
        error_of(keyed.client.get("/search", params={"q": "timesheet"}), 401, "unauthorized")
        error_of(keyed.client.post("/chat", json={"question": "How do I submit a timesheet?"}), 401)

    def test_api_key_mode_with_a_bearer_key_and_tenants_apart(self, keyed):
        writer, foreign = _bearer(keyed.keys["writer"]), _bearer(keyed.keys["foreign"])
        mine = keyed.client.get("/search", params={"q": "timesheet", "k": 5}, headers=writer).json()
        assert mine["results"] and mine["results"][0]["chunk_id"].startswith("clockify-")
        assert keyed.client.get("/search", params={"q": "timesheet"}, headers=foreign).json()["results"] == []
        answer = keyed.client.post("/chat", json={"question": "How do I submit a timesheet?"}, headers=foreign).json()
        assert answer["citations"] == [] and "clockify" not in str(answer).lower()
        error_of(keyed.client.get("/search", params={"q": "x", "tenant_id": "dats"}, headers=foreign), 403)


def test_the_standard_routes_pass_the_answer_time_allowlist(tmp_path):
    """
    ``GET /search`` and ``POST /chat`` go through the domain allowlist like ``/search/run``: a page indexed before
    ``RAG_ALLOWLIST_DOMAINS`` was tightened is never a result, a citation or an entry of ``citation_map``.
    """
    data_dir = tmp_path / "data"
    env = {"SOURCEBOUND_BOOTSTRAP_CORPUS": "false", "SOURCEBOUND_DEFAULT_TENANT": "dats",
           "SOURCEBOUND_DEFAULT_TAGS": "all"}  # fmt: skip
    mirror = {
        "content": "To submit a timesheet on the mirror, open Timesheet, fill in the week and click Submit.",
        "document_id": "mirror-submit-timesheet", "document_name": "Mirror: Submit Timesheet",
        "source_uri": "https://mirror.example.org/submit-timesheet", "tenant_id": "dats", "tags": ["all"],
    }  # fmt: skip
    question = {"question": "How do I submit a timesheet?"}

    def urls(server) -> tuple[set[str], set[str]]:
        search = server.client.get("/search", params={"q": "submit a timesheet", "k": 10}).json()
        chat = server.client.post("/chat", json=question).json()
        cited = {entry["url"] for entry in chat["citation_map"].values() if entry["url"]}
        cited |= {source[key] for source in chat["sources"] for key in ("url", "source_uri") if source.get(key)}
        return {hit["url"] for hit in search["results"]}, cited

    with ApiServer(data_dir, env=env) as server:
        _index(server, "dats", ["all"])
        response = server.client.post("/index/run", json={"documents": [mirror]})
        assert response.status_code == 200, response.text
        found, _ = urls(server)
        assert mirror["source_uri"] in found  # reachable before the list is tightened
    with ApiServer(data_dir, env={**env, "RAG_ALLOWLIST_DOMAINS": "help.clockify.me"}) as server:
        found, cited = urls(server)
        assert found and cited, (found, cited)
        assert all(url.startswith("https://help.clockify.me/") for url in found | cited), (found, cited)


# ---------------------------------------------------------------------- OpenAPI


def test_openapi_covers_the_specification_routes_with_examples(trusted):
    schema = trusted.client.get("/openapi.json").json()
    paths = schema["paths"]
    for path, method in [
        ("/api/v1/query", "post"), ("/api/v1/embed", "post"), ("/api/v1/embeddings/{artifact_id}", "delete"),
        ("/api/v1/embeddings/batch-invalidate", "post"), ("/api/v1/health", "get"), ("/rag/query", "post"),
        ("/rag/enrich", "post"), ("/rag/ingest", "post"), ("/search", "get"), ("/chat", "post"),
    ]:  # fmt: skip
        operation = paths[path][method]
        assert "example" in operation["responses"]["200"]["content"]["application/json"], (path, method)
        if method == "post":
            body = operation["requestBody"]["content"]["application/json"]
            assert body.get("examples") or body["schema"].get("examples") or _schema_examples(schema, body), path
    query_example = paths["/api/v1/query"]["post"]["responses"]["200"]["content"]["application/json"]["example"]
    assert {"id", "query", "context", "sources", "tokens_used", "search_mode", "metadata"} <= set(query_example)
    assert {"q", "k"} <= {parameter["name"] for parameter in paths["/search"]["get"]["parameters"]}


def _schema_examples(schema: dict, body: dict) -> list:
    reference = body["schema"].get("$ref", "")
    name = reference.rsplit("/", 1)[-1]
    return schema["components"]["schemas"].get(name, {}).get("examples") or []
