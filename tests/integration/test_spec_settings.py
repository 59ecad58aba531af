"""
The RAG Standard's settings on a live server (docs/configuration.md, "The specifications' variables"): the ones
honoured change what the server does; the ones refused stop the start with a message saying what to set instead.
"""

import pytest
from support.api_server import ApiServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HONOURED = {
    "RAG_TOP_K": "3",
    "RAG_TOP_K_RAW": "50",
    "RAG_P95_SEARCH_MS": "0.001",  # every search is over this budget
    "RAG_USE_BM25": "true",
    "RAG_EMBEDDING_BACKEND": "onnx",
    "RAG_EMBEDDING_MODEL": "sentence-transformers/all-MiniLM-L6-v2",
    "RAG_INDEX_TYPE": "flat",
}


def test_honoured_settings_change_the_server(tmp_path):
    env = {"SOURCEBOUND_BOOTSTRAP_CORPUS": "false", "SOURCEBOUND_DEFAULT_TENANT": "acme",
           "SOURCEBOUND_DEFAULT_TAGS": "hr", **HONOURED}  # fmt: skip
    documents = [
        {"content": f"Parking note {number}: bay {number} of the cedar garage is reserved on weekdays.",
         "tenant_id": "acme", "tags": ["hr"], "document_id": f"bay-{number}"}
        for number in range(8)
    ]  # fmt: skip
    with ApiServer(tmp_path / "data", env=env) as server:
        assert server.client.post("/index/run", json={"documents": documents}).status_code == 200
        # RAG_TOP_K: the default k of every search route.
        search = server.client.get("/search", params={"q": "cedar garage bay reserved"}).json()
        assert search["k"] == 3 and len(search["results"]) == 3
        dats = server.client.post("/api/v1/query", json={"query": "cedar garage", "filters": {"verified_only": False}})
        assert len(dats.json()["sources"]) == 3
        body = {"query": "cedar garage", "tenant_id": "acme", "user_tags": ["hr"]}
        assert len(server.client.post("/search/run", json=body).json()["result"]["results"]) == 3
        # An explicit k still wins.
        assert len(server.client.get("/search", params={"q": "cedar garage", "k": 7}).json()["results"]) == 7
        # RAG_P95_SEARCH_MS: searches over the budget are counted.
        metrics = server.client.get("/metrics").text
        over = [line for line in metrics.splitlines() if line.startswith("rag_search_over_budget_total")]
        assert over and float(over[0].split()[-1]) >= 4
        assert "RAG_P95_SEARCH_MS" in server.log_tail(200)


@pytest.mark.parametrize(
    ("name", "value", "instead"),
    [
        ("RAG_USE_BM25", "false", "search_mode=vector"),
        ("RAG_EMBEDDING_BACKEND", "ollama", "set it to onnx"),
        ("RAG_EMBEDDING_MODEL", "nomic-embed-text:latest", "Unset RAG_EMBEDDING_MODEL"),
        ("RAG_INDEX_TYPE", "hnsw", "set it to flat"),
        ("RAG_CHUNK_MIN_TOKENS", "800", "set RAG_CHUNK_SIZE"),
        ("RAG_TOP_K", "0", "between 1 and 100"),
    ],
)
def test_refused_settings_stop_the_start_saying_what_to_set(tmp_path, name, value, instead):
    server = ApiServer(tmp_path / "data", env={"SOURCEBOUND_BOOTSTRAP_CORPUS": "false", name: value})
    with pytest.raises(RuntimeError, match="exited with") as caught:
        server.start()
    assert name in str(caught.value) and instead in str(caught.value)
