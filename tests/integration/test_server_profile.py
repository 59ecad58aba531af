"""
The Qdrant-server profile end to end over HTTP (docs/operations.md, "The Qdrant-server profile").

One server for the module on the generated profile (``pipelines/profiles/server``: qdrant-haystack's
store and retrievers) with ``SOURCEBOUND_QDRANT_LOCATION`` set to a folder, i.e. on qdrant-client's
local engine instead of a Qdrant server (``support.engines``). Everything a deployment does goes
through it: indexing JSON and an upload, re-indexing, invalidation, flags, tenant deletion, the three
search modes (hybrid must really fuse: a keyword-only and a dense-only match both come back), the
extractive answer and the OpenAI-compatible route. The corpus is small: the local engine scans by brute force.
"""

import pytest
from support.api_server import ApiServer, error_of, post
from support.engines import access_violations, engine_env
from support.reliability_support import live_snapshot

pytestmark = pytest.mark.integration

ACME = {"tenant_id": "acme", "user_tags": ["hr"]}
GLOBEX = {"tenant_id": "globex", "user_tags": ["hr"]}
GARAGE = "The garage closes at 22:00 on weekdays and visitors park on level 2."
# Hybrid fusion: the keyword document shares only a number with the query and not its meaning; the others share its
# meaning and no word, so dense ranks them above the keyword document and BM25 finds the keyword document alone.
FUSION_QUERY = "annual leave allowance 88231"
FUSION_KEYWORD = "Invoice 88231 was paid by the finance department on Friday together with the shipping charges."
FUSION_DENSE = "Employees receive twenty-seven days of paid holiday every year."
FUSION_DISTRACTORS = [
    "Unused vacation days can be carried over until March.",
    "Staff may take sick days with a note from a doctor.",
    "Parental absence lasts sixteen weeks at full pay.",
    "Public holidays are set by the works council each December.",
    "New starters accrue holiday from their first month.",
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("server-profile") / "data"
    env = {
        "SOURCEBOUND_BOOTSTRAP_CORPUS": "false",
        "SOURCEBOUND_MAX_UPLOAD_BYTES": "2000000",
        **engine_env("server-profile", data_dir),
    }
    with ApiServer(data_dir, env=env) as running:
        yield running


@pytest.fixture(scope="module")
def http(server):
    return server.client


def doc(tenant_id: str, document_id: str, content: str) -> dict:
    return {"content": content, "tenant_id": tenant_id, "tags": ["hr"], "document_id": document_id}


def index(http, *documents, **options):
    return post(http, "/index/run", {"documents": list(documents), **options})["documents"]


def search(http, query, identity=ACME, **options):
    return post(http, "/search/run", {"query": query, **identity, **options})["results"]


def ids(results):
    return [result["document_id"] for result in results]


def points(http) -> int:
    return http.get("/health").json()["store"]["points"]


class TestProfileServer:
    def test_runs_on_the_profile_and_the_local_engine(self, server, http):
        health = http.get("/health").json()
        assert health["status"] == "healthy" and health["pipelines"]["search"] == "search"
        assert (server.data_dir / "qdrant-local").is_dir() and not (server.data_dir / "qdrant").exists()
        assert "Qdrant local mode" in server.log_tail(400)

    def test_index_text_and_upload(self, http):
        entries = index(
            http,
            doc("acme", "garage", GARAGE),
            {"content": "Lockers on floor 3 are assigned by the front desk.", "tenant_id": "acme", "tags": ["hr"]},
        )
        assert [entry["status"] for entry in entries] == ["indexed", "indexed"]
        upload = http.post(
            "/index/upload",
            files={"files": ("canteen.txt", b"The canteen serves a vegetarian lunch from 11:30 to 14:00.")},
            data={"tenant_id": "acme", "tags": "hr", "document_id": "canteen"},
        )
        assert upload.status_code == 200, upload.text
        assert upload.json()["result"]["documents"][0]["status"] == "indexed"
        assert ids(search(http, "When is vegetarian lunch served?", k=1)) == ["canteen"]
        assert ids(search(http, "When does the garage close?", k=1, search_mode="vector")) == ["garage"]
        # Unchanged content is skipped before embedding, as on the Edge store.
        again = index(http, doc("acme", "garage", GARAGE))
        assert again[0]["status"] == "unchanged"

    def test_same_document_id_in_two_tenants_is_two_documents(self, http):
        index(http, doc("globex", "garage", "Globex parks its fleet in hall B."))
        acme, globex = search(http, "Where is parking?", ACME, k=10), search(http, "Where is parking?", GLOBEX, k=10)
        assert "garage" in ids(acme) and "garage" in ids(globex)
        assert all("Globex" not in r["snippet"] for r in acme) and all("22:00" not in r["snippet"] for r in globex)

    def test_reindex_leaves_no_stale_tail(self, server, http):
        long_text = " ".join(f"Rule {n}: the archive procedure step {n} uses token tailword{n}." for n in range(120))
        first = index(http, doc("acme", "archive", long_text))
        assert first[0]["status"] == "indexed" and first[0]["chunks"] >= 3
        before = points(http)
        second = index(http, doc("acme", "archive", "The archive is closed."))
        assert second[0]["chunks"] == 1
        assert points(http) == before - first[0]["chunks"] + 1
        assert live_snapshot(server.data_dir).chunks_of("acme", "archive") == {0: "The archive is closed."}
        assert "archive" not in ids(search(http, "tailword110", k=5, search_mode="keyword"))

    def test_taint_hides_and_untaint_shows(self, http):
        flagged = post(http, "/flags/run", {"tenant_id": "acme", "document_ids": ["garage"], "tainted": True})
        assert flagged["chunks_updated"] == 1
        assert "garage" not in ids(search(http, "When does the garage close?", k=5))
        shown = search(http, "When does the garage close?", k=5, filters={"exclude_tainted": False})
        assert ids(shown)[0] == "garage"
        post(http, "/flags/run", {"tenant_id": "acme", "document_ids": ["garage"], "tainted": False})
        assert ids(search(http, "When does the garage close?", k=1)) == ["garage"]

    def test_invalidate_removes_only_that_tenants_document(self, http):
        index(http, doc("acme", "badges", "Old badge rules apply."))
        index(http, doc("globex", "badges", "Badge rules of Globex."))
        removed = post(http, "/invalidate/run", {"tenant_id": "acme", "document_ids": ["badges"]})
        assert removed["chunks_removed"] == 1
        assert "badges" not in ids(search(http, "badge rules", k=10))
        assert "badges" in ids(search(http, "badge rules", GLOBEX, k=10))

    def test_search_modes_and_hybrid_fusion(self, http):
        fusion = {"tenant_id": "fusion", "tags": ["hr"]}
        documents = [("keyword-only", FUSION_KEYWORD), ("dense-only", FUSION_DENSE)] + [
            (f"distractor-{n}", text) for n, text in enumerate(FUSION_DISTRACTORS)
        ]
        index(http, *({"content": text, **fusion, "document_id": name} for name, text in documents))
        identity = {"tenant_id": "fusion", "user_tags": ["hr"]}
        vector = ids(search(http, FUSION_QUERY, identity, k=3, search_mode="vector"))
        keyword = ids(search(http, FUSION_QUERY, identity, k=3, search_mode="keyword"))
        # The two sides disagree: BM25 finds only the keyword document, dense ranks it below three others.
        assert keyword == ["keyword-only"] and len(vector) == 3 and "keyword-only" not in vector
        # Fused, the best of each side comes back: a keyword-only and a dense-only match.
        hybrid = ids(search(http, FUSION_QUERY, identity, k=2, search_mode="hybrid"))
        assert set(hybrid) == {"keyword-only", vector[0]}

    def test_extractive_answer_cites_the_document(self, http):
        result = post(http, "/rag/run", {"query": "When does the garage close on weekdays?", **ACME})
        assert "22:00" in result["answer"] and "[SourceId: garage:0]" in result["answer"]
        assert result["model_used"] == "extractive" and [c["document_id"] for c in result["citations"]] == ["garage"]

    def test_openai_compatible_route(self, http):
        body = {"model": "rag", "messages": [{"role": "user", "content": "When does the garage close?"}], **ACME}
        response = http.post("/v1/chat/completions", json=body)
        assert response.status_code == 200, response.text[:500]
        completion = response.json()
        assert "22:00" in completion["choices"][0]["message"]["content"]
        assert completion["sourcebound"]["citations"][0]["document_id"] == "garage"

    def test_bad_input_is_a_4xx_on_the_profile_too(self, http):
        error_of(http.post("/search/run", json={"query": "x", **ACME, "search_mode": "fuzzy"}), 422)

    def test_delete_tenant_removes_every_chunk_of_that_tenant(self, server, http):
        before = live_snapshot(server.data_dir)
        acme_chunks = sum(1 for d in before.documents if d.meta["tenant_id"] == "acme")
        assert acme_chunks >= 4
        removed = post(http, "/delete_tenant/run", {"tenant_id": "acme"})
        assert removed["chunks_removed"] == acme_chunks
        after = live_snapshot(server.data_dir)
        assert not [d for d in after.documents if d.meta["tenant_id"] == "acme"]
        assert after.tenant_digest("globex") == before.tenant_digest("globex")
        assert search(http, "When does the garage close?", k=5) == []

    def test_the_guard_dropped_nothing(self, server):
        assert access_violations(server.log_path) == []
