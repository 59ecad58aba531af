"""
Bad input over HTTP, and schema fuzzing (docs/contract.md, "Errors").

One server for the module (no sample corpus), with small limits so that the oversized cases
are cheap: 3 MB JSON bodies, 2 MB uploads, 20,000 characters per document. A fixed corpus
(canary documents, several of them multi-chunk) is indexed first.

* The matrix: every endpoint gets malformed, oversized, mistyped, unknown-field, NUL, invalid
  UTF-8, bomb and out-of-range input. Each case must get a 4xx ``{"error", "message"}`` whose
  message names the problem, the server must stay up, and the index must be unchanged: after
  every case ``/health``'s point count and a digest of a search over the whole fixed corpus are
  compared with their values before the matrix; after the matrix, a snapshot of the store
  (every point's id, content, meta and vector, read from a copy of the idle server's shard)
  is compared with the snapshot taken right after indexing.
* Schema fuzzing: schemathesis generates positive and negative cases for every operation of
  the served ``/openapi.json``; none may answer 5xx.

The module runs once per engine (``support.engines``): the Edge store and the Qdrant-server profile on
qdrant-client's local engine, whose store snapshot is read from a copy of its local folder.
"""

import hashlib
import json
import os
import random
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest
from support.api_server import ApiServer
from support.engines import ENGINES, engine_env
from support.reliability_support import (
    TestDocument,
    live_snapshot,
    new_canary,
    pdf_with_compressed_text,
    stable,
    zip_bomb,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MAX_REQUEST_BYTES = 3_000_000
MAX_UPLOAD_BYTES = 2_000_000
MAX_DOCUMENT_CHARS = 20_000
FUZZ_EXAMPLES = int(os.environ.get("SOURCEBOUND_FUZZ_EXAMPLES", "25"))

READER = {"tenant_id": "alpha", "user_tags": ["ops"]}
DOC = {"content": "The loading dock opens at 06:00.", "tenant_id": "alpha", "tags": ["ops"]}
CHAT = {"model": "rag", **READER}
USER_MESSAGE = [{"role": "user", "content": "When does the loading dock open?"}]
FORM = {"tenant_id": "alpha", "tags": "ops"}
JSON_HEADERS = {"content-type": "application/json"}


def _fixed_corpus() -> list[TestDocument]:
    rng = random.Random(8)
    documents = []
    for number in range(10):
        canary = new_canary(rng)
        sentences = 3 if number % 3 else 160  # every third document is several chunks long
        text = " ".join(
            f"Reference {canary} rule {index}: the loading dock procedure step {index} is logged."
            for index in range(sentences)
        )
        documents.append(TestDocument(f"fixed-{number}", "alpha", ["ops"], text, canary))
    return documents


@pytest.fixture(scope="module", params=ENGINES)
def server(request, tmp_path_factory):
    data_dir = tmp_path_factory.mktemp(f"bad-input-{request.param}") / "data"
    env = {
        "SOURCEBOUND_BOOTSTRAP_CORPUS": "false",
        "SOURCEBOUND_MAX_REQUEST_BYTES": str(MAX_REQUEST_BYTES),
        "SOURCEBOUND_MAX_UPLOAD_BYTES": str(MAX_UPLOAD_BYTES),
        "SOURCEBOUND_MAX_DOCUMENT_CHARS": str(MAX_DOCUMENT_CHARS),
        **engine_env(request.param, data_dir),
    }
    with ApiServer(data_dir, env=env) as running:
        running.engine = request.param
        response = running.client.post("/index/run", json={"documents": [d.body() for d in _fixed_corpus()]})
        assert response.status_code == 200, response.text
        yield running


@dataclass(frozen=True)
class Fingerprint:
    points: int
    search_digest: str


def fingerprint(http) -> Fingerprint:
    """Cheap, per case: the point count and a digest of every fixed chunk as search returns it."""
    health = http.get("/health")
    assert health.status_code == 200 and health.json()["status"] == "healthy", health.text
    result = http.post(
        "/search/run", json={"query": "loading dock procedure", **READER, "k": 100, "search_mode": "vector"}
    )
    assert result.status_code == 200, result.text
    hits = stable(result.json()["result"])
    assert len(hits["results"]) > 10  # every fixed chunk
    for hit in hits["results"]:
        # The server profile's local engine gives the first search of a process scores ~1e-9 apart from the later
        # ones (float noise, same order); content, ids and order are what must not change.
        hit["score"] = round(hit["score"], 6)
    return Fingerprint(
        health.json()["store"]["points"], hashlib.sha256(json.dumps(hits, sort_keys=True).encode()).hexdigest()
    )


@pytest.fixture(scope="module")
def baseline(server):
    """The store and its search fingerprint before any bad input."""
    return live_snapshot(server.data_dir), fingerprint(server.client)


def _raw(body: bytes, headers: dict[str, str] | None = None) -> dict[str, Any]:
    return {"content": body, "headers": headers or JSON_HEADERS}


def _files(*files: tuple[str, bytes], form: dict[str, str] | None = None) -> dict[str, Any]:
    return {"files": [("files", (name, data)) for name, data in files], "data": FORM if form is None else form}


def _case(
    case_id: str,
    path: str,
    request: dict[str, Any],
    status: int | tuple[int, ...],
    error: str | None,
    needle: str,
    method: str = "POST",
):
    return pytest.param(method, path, request, status, error, needle, id=case_id)


# (id, path, request kwargs, expected status(es), error type, text the message must contain)
CASES = [
    # /search/run
    _case("search-empty-query", "/search/run", {"json": {"query": "", **READER}}, 422, "validation_error", "query"),
    _case("search-whitespace-query", "/search/run", {"json": {"query": " \t\n ", **READER}},
          422, "validation_error", "query"),
    _case("search-1MB-query", "/search/run", {"json": {"query": "x" * 1_000_000, **READER}},
          422, "validation_error", "query"),
    _case("search-NUL-in-query", "/search/run", {"json": {"query": "loading\x00dock", **READER}},
          422, "validation_error", "NUL"),
    _case("search-invalid-json", "/search/run", _raw(b'{"query": '), 400, "invalid_json", "JSON"),
    _case("search-empty-body", "/search/run", _raw(b""), 400, "invalid_json", "JSON"),
    _case("search-not-utf8", "/search/run", _raw(b'{"query": "\xff\xfe dock", "tenant_id": "alpha"}'),
          400, "invalid_json", "JSON"),
    _case("search-json-array", "/search/run", _raw(b"[1, 2]"), 422, "validation_error", "JSON object"),
    _case("search-json-null", "/search/run", _raw(b"null"), 422, "validation_error", "JSON object"),
    _case("search-deeply-nested", "/search/run", _raw(b"[" * 100_000), 400, "invalid_json", "JSON"),
    _case("search-deeply-nested-field", "/search/run",
          _raw(b'{"query": "x", "filters": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"),
          (400, 422), None, "JSON"),
    _case("search-lone-surrogate", "/search/run",
          _raw(b'{"query": "\\ud800", "tenant_id": "alpha", "user_tags": ["ops"]}'),
          (400, 422), None, "JSON"),
    _case("search-k-negative", "/search/run", {"json": {"query": "dock", **READER, "k": -1}},
          422, "validation_error", "k"),
    _case("search-k-million", "/search/run", {"json": {"query": "dock", **READER, "k": 10**6}},
          422, "validation_error", "k"),
    _case("search-k-string", "/search/run", {"json": {"query": "dock", **READER, "k": "5"}},
          422, "validation_error", "k"),
    _case("search-k-float", "/search/run", {"json": {"query": "dock", **READER, "k": 2.5}},
          422, "validation_error", "k"),
    _case("search-k-huge-literal", "/search/run",
          _raw(b'{"query": "dock", "tenant_id": "alpha", "user_tags": ["ops"], "k": 1e400}'),
          422, "validation_error", "k"),
    _case("search-unknown-field", "/search/run", {"json": {"query": "dock", **READER, "top_k": 3}},
          422, "validation_error", "unknown field 'top_k'"),
    _case("search-bad-mode", "/search/run", {"json": {"query": "dock", **READER, "search_mode": "sql"}},
          422, "validation_error", "search_mode"),
    _case("search-missing-tenant", "/search/run", {"json": {"query": "dock", "user_tags": ["ops"]}},
          422, "validation_error", "tenant_id"),
    _case("search-tenant-wrong-type", "/search/run", {"json": {"query": "dock", "tenant_id": 5, "user_tags": ["ops"]}},
          422, "validation_error", "tenant_id"),
    _case("search-empty-user-tags", "/search/run", {"json": {"query": "dock", "tenant_id": "alpha", "user_tags": []}},
          422, "validation_error", "user_tags"),
    _case("search-blank-tag", "/search/run", {"json": {"query": "dock", "tenant_id": "alpha", "user_tags": ["  "]}},
          422, "validation_error", "user_tags"),
    _case("search-tags-not-a-list", "/search/run",
          {"json": {"query": "dock", "tenant_id": "alpha", "user_tags": "ops"}},
          422, "validation_error", "user_tags"),
    _case("search-max-tokens-zero", "/search/run", {"json": {"query": "dock", **READER, "max_tokens": 0}},
          422, "validation_error", "max_tokens"),
    _case("search-filter-smuggled", "/search/run",
          {"json": {"query": "dock", **READER, "filters": {"tenant_id": "beta"}}},
          422, "validation_error", "filters.tenant_id"),
    _case("search-filter-string-bool", "/search/run",
          {"json": {"query": "dock", **READER, "filters": {"verified_only": "yes"}}},
          422, "validation_error", "verified_only"),
    _case("search-text-plain", "/search/run",
          _raw(json.dumps({"query": "dock", **READER}).encode(), {"content-type": "text/plain"}),
          422, "validation_error", "body"),
    # /rag/run
    _case("rag-history-201-messages", "/rag/run",
          {"json": {"query": "dock", **READER, "chat_history": [{"role": "user", "content": "hi"}] * 201}},
          422, "validation_error", "chat_history"),
    _case("rag-history-message-too-long", "/rag/run",
          {"json": {"query": "dock", **READER, "chat_history": [{"role": "user", "content": "y" * 20_001}]}},
          422, "validation_error", "chat_history"),
    _case("rag-history-bad-role", "/rag/run",
          {"json": {"query": "dock", **READER, "chat_history": [{"role": "tool", "content": "x"}]}},
          422, "validation_error", "role"),
    _case("rag-history-NUL", "/rag/run",
          {"json": {"query": "dock", **READER, "chat_history": [{"role": "user", "content": "a\x00b"}]}},
          422, "validation_error", "NUL"),
    _case("rag-unknown-model", "/rag/run", {"json": {"query": "dock", **READER, "model": "gpt-4o"}},
          400, "model_not_allowed", "gpt-4o"),
    _case("rag-max-context-zero", "/rag/run", {"json": {"query": "dock", **READER, "max_context_chunks": 0}},
          422, "validation_error", "max_context_chunks"),
    _case("rag-max-context-million", "/rag/run", {"json": {"query": "dock", **READER, "max_context_chunks": 10**6}},
          422, "validation_error", "max_context_chunks"),
    _case("rag-k-is-not-a-rag-field", "/rag/run", {"json": {"query": "dock", **READER, "k": 5}},
          422, "validation_error", "unknown field 'k'"),
    _case("rag-NUL-in-tenant", "/rag/run", {"json": {"query": "dock", "tenant_id": "al\x00pha", "user_tags": ["ops"]}},
          422, "validation_error", "tenant_id"),
    # /v1/chat/completions
    _case("chat-unknown-model", "/v1/chat/completions", {"json": {**CHAT, "model": "gpt-4o", "messages": USER_MESSAGE}},
          400, "model_not_allowed", "gpt-4o"),
    _case("chat-no-messages", "/v1/chat/completions", {"json": {**CHAT, "messages": []}},
          422, "validation_error", "messages"),
    _case("chat-last-message-not-user", "/v1/chat/completions",
          {"json": {**CHAT, "messages": [{"role": "assistant", "content": "x"}]}},
          422, "validation_error", "last message"),
    _case("chat-huge-history", "/v1/chat/completions", {"json": {**CHAT, "messages": USER_MESSAGE * 500}},
          422, "validation_error", "messages"),
    _case("chat-message-too-long", "/v1/chat/completions",
          {"json": {**CHAT, "messages": [{"role": "user", "content": "y" * 20_001}]}},
          422, "validation_error", "messages"),
    _case("chat-image-part", "/v1/chat/completions",
          {"json": {**CHAT, "messages": [
              {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x"}}]},
          ]}},
          422, "validation_error", "messages"),
    _case("chat-unknown-llm-model", "/v1/chat/completions",
          {"json": {**CHAT, "messages": USER_MESSAGE, "llm_model": "gpt-4o"}},
          400, "model_not_allowed", "gpt-4o"),
    _case("chat-missing-identity", "/v1/chat/completions", {"json": {"model": "rag", "messages": USER_MESSAGE}},
          422, "validation_error", "tenant_id"),
    _case("chat-stream-not-bool", "/v1/chat/completions", {"json": {**CHAT, "messages": USER_MESSAGE, "stream": "yes"}},
          422, "validation_error", "stream"),
    _case("chat-n-2", "/v1/chat/completions", {"json": {**CHAT, "messages": USER_MESSAGE, "n": 2}},
          422, "validation_error", "n"),
    _case("chat-functions", "/v1/chat/completions",
          {"json": {**CHAT, "messages": USER_MESSAGE, "functions": [{"name": "f"}]}},
          422, "validation_error", "unknown field 'functions'"),
    # /index/run
    _case("index-bad-document-id", "/index/run", {"json": {"documents": [{**DOC, "document_id": "../etc/passwd"}]}},
          422, "validation_error", "document_id"),
    _case("index-NUL-content", "/index/run", {"json": {"documents": [{**DOC, "content": "abc\x00def"}]}},
          422, "validation_error", "NUL"),
    _case("index-lone-surrogate", "/index/run",
          _raw(b'{"documents": [{"content": "a \\udc00 b", "tenant_id": "alpha", "tags": ["ops"]}]}'),
          (400, 422), None, "JSON"),
    _case("index-no-documents", "/index/run", {"json": {"documents": []}}, 422, "validation_error", "documents"),
    _case("index-101-documents", "/index/run", {"json": {"documents": [DOC] * 101}},
          422, "validation_error", "documents"),
    _case("index-meta-sets-tenant", "/index/run", {"json": {"documents": [{**DOC, "meta": {"tenant_id": "beta"}}]}},
          422, "validation_error", "tenant_id"),
    _case("index-user-scope-without-user", "/index/run", {"json": {"documents": [{**DOC, "scope": "user"}]}},
          422, "validation_error", "user_id"),
    _case("index-unknown-scope", "/index/run", {"json": {"documents": [{**DOC, "scope": "global"}]}},
          422, "validation_error", "scope"),
    _case("index-empty-tags", "/index/run", {"json": {"documents": [{**DOC, "tags": []}]}},
          422, "validation_error", "tags"),
    _case("index-whitespace-content", "/index/run", {"json": {"documents": [{**DOC, "content": "  \n\t "}]}},
          422, "validation_error", "content"),
    _case("index-content-over-limit", "/index/run",
          {"json": {"documents": [{**DOC, "content": "word " * (MAX_DOCUMENT_CHARS // 5 + 1)}]}},
          422, "validation_error", "content"),
    _case("index-embedding-smuggled", "/index/run", {"json": {"documents": [{**DOC, "embedding": [0.1] * 384}]}},
          422, "validation_error", "embedding"),
    _case("index-one-bad-in-batch", "/index/run",
          {"json": {"documents": [{**DOC, "document_id": "new-good"}, {**DOC, "document_id": "bad id"}]}},
          422, "validation_error", "document_id"),
    _case("index-same-id-two-contents", "/index/run",
          {"json": {"documents": [
              {**DOC, "document_id": "twice"}, {**DOC, "content": "Other text.", "document_id": "twice"},
          ]}},
          422, "validation_error", "twice"),
    _case("index-body-over-limit", "/index/run",
          {"json": {"documents": [{**DOC, "content": "word " * (MAX_REQUEST_BYTES // 5 + 10)}]}},
          413, "payload_too_large", "SOURCEBOUND_MAX_REQUEST_BYTES"),
    # /index/upload
    _case("upload-unsupported-type", "/index/upload", _files(("tool.exe", b"MZ\x90\x00\x03")),
          422, "validation_error", "unsupported file type"),
    _case("upload-invalid-utf8", "/index/upload", _files(("notes.txt", b"caf\xe9 \xff\xfe\xfd")),
          422, "validation_error", "UTF-8"),
    _case("upload-zip-bomb", "/index/upload", _files(("bomb.zip", zip_bomb(20_000_000))),
          422, "validation_error", "unsupported file type"),
    _case("upload-zip-bomb-renamed-txt", "/index/upload", _files(("bomb.txt", zip_bomb(20_000_000))),
          422, "validation_error", "UTF-8"),
    _case("upload-over-limit", "/index/upload", _files(("big.txt", b"word " * (MAX_UPLOAD_BYTES // 5 + 10))),
          413, "payload_too_large", "SOURCEBOUND_MAX_UPLOAD_BYTES"),
    _case("upload-corrupt-pdf", "/index/upload", _files(("report.pdf", b"%PDF-1.4\n1 0 obj garbage")),
          422, "validation_error", "PDF"),
    _case("upload-empty-file", "/index/upload", _files(("empty.md", b"")), 422, "validation_error", "empty"),
    _case("upload-NUL-bytes", "/index/upload", _files(("binary.txt", b"text\x00\x00\x01binary")),
          422, "validation_error", "binary.txt"),
    _case("upload-html-without-text", "/index/upload", _files(("page.html", b"<html><script>steal()</script></html>")),
          422, "validation_error", "no readable text"),
    _case("upload-no-files", "/index/upload", {"data": FORM, "files": [("other", ("x.txt", b"x"))]},
          422, "validation_error", "files"),
    _case("upload-missing-tenant", "/index/upload", _files(("a.txt", b"Some text."), form={"tags": "ops"}),
          422, "validation_error", "tenant_id"),
    _case("upload-empty-tags", "/index/upload",
          _files(("a.txt", b"Some text."), form={"tenant_id": "alpha", "tags": " , "}),
          422, "validation_error", "tags"),
    _case("upload-bad-scope", "/index/upload", _files(("a.txt", b"Some text."), form={**FORM, "scope": "everyone"}),
          422, "validation_error", "scope"),
    _case("upload-bad-document-id", "/index/upload",
          _files(("a.txt", b"Some text."), form={**FORM, "document_id": "a/b"}),
          422, "validation_error", "document_id"),
    _case("upload-id-with-two-files", "/index/upload",
          _files(("a.txt", b"One."), ("b.txt", b"Two."), form={**FORM, "document_id": "ab"}),
          422, "validation_error", "one file"),
    _case("upload-51-files", "/index/upload", _files(*[(f"f{i}.txt", b"Text.") for i in range(51)]),
          422, "validation_error", "files"),
    _case("upload-json-body", "/index/upload", {"json": {"files": ["a.txt"], **FORM}},
          422, "validation_error", "files"),
    # lifecycle
    _case("invalidate-no-ids", "/invalidate/run", {"json": {"tenant_id": "alpha", "document_ids": []}},
          422, "validation_error", "document_ids"),
    _case("invalidate-bad-id", "/invalidate/run", {"json": {"tenant_id": "alpha", "document_ids": ["fixed-1", "*"]}},
          422, "validation_error", "document_ids"),
    _case("invalidate-1001-ids", "/invalidate/run",
          {"json": {"tenant_id": "alpha", "document_ids": [f"d-{i}" for i in range(1001)]}},
          422, "validation_error", "document_ids"),
    _case("invalidate-bad-cascade-id", "/invalidate/run",
          {"json": {"tenant_id": "alpha", "document_ids": ["fixed-1"], "cascade_id": "a b;c"}},
          422, "validation_error", "cascade_id"),
    _case("flags-no-flag", "/flags/run", {"json": {"tenant_id": "alpha", "document_ids": ["fixed-1"]}},
          422, "validation_error", "tainted"),
    _case("flags-string-bool", "/flags/run",
          {"json": {"tenant_id": "alpha", "document_ids": ["fixed-1"], "tainted": "true"}},
          422, "validation_error", "tainted"),
    _case("delete-tenant-blank", "/delete_tenant/run", {"json": {"tenant_id": "   "}},
          422, "validation_error", "tenant_id"),
    _case("delete-tenant-missing", "/delete_tenant/run", {"json": {}}, 422, "validation_error", "tenant_id"),
    _case("delete-tenant-list", "/delete_tenant/run", {"json": {"tenant_id": ["alpha"]}},
          422, "validation_error", "tenant_id"),
    # the specification routes (docs/api.md, "Specification routes"); trusted mode without configured defaults
    _case("dats-query-invalid-json", "/api/v1/query", _raw(b'{"query": '), 400, "invalid_json", "JSON"),
    _case("dats-query-not-utf8", "/api/v1/query", _raw(b'{"query": "\xff dock"}'), 400, "invalid_json", "JSON"),
    _case("dats-query-NUL", "/api/v1/query", {"json": {"query": "dock\x00", **READER}},
          422, "validation_error", "query"),
    _case("dats-query-max-tokens", "/api/v1/query", {"json": {"query": "dock", "max_tokens": 99, **READER}},
          422, "validation_error", "max_tokens"),
    _case("dats-query-filter-smuggle", "/api/v1/query",
          {"json": {"query": "dock", "filters": {"tenant_id": "beta"}, **READER}},
          422, "validation_error", "tenant_id"),
    _case("dats-query-no-identity", "/api/v1/query", {"json": {"query": "dock"}},
          422, "validation_error", "SOURCEBOUND_DEFAULT_TENANT"),
    _case("dats-embed-short", "/api/v1/embed", {"json": {"content": "short", "metadata": {"artifact_id": "a"}}},
          422, "validation_error", "content"),
    _case("dats-embed-no-artifact", "/api/v1/embed",
          {"json": {"content": "The dock is closed on Sundays.", "metadata": {"tenant_id": "alpha", "tags": ["ops"]}}},
          422, "validation_error", "artifact_id"),
    _case("dats-embed-nested-meta", "/api/v1/embed",
          {"json": {"content": "The dock is closed on Sundays.",
                    "metadata": {"artifact_id": "a", "tenant_id": "alpha", "tags": ["ops"], "deep": {"x": 1}}}},
          422, "validation_error", "metadata.deep"),
    _case("dats-embed-reserved-meta", "/api/v1/embed",
          {"json": {"content": "The dock is closed on Sundays.",
                    "metadata": {"artifact_id": "a", "tenant_id": "alpha", "tags": ["ops"], "source_hash": "x"}}},
          422, "validation_error", "source_hash"),
    _case("dats-embed-no-tenant", "/api/v1/embed",
          {"json": {"content": "The dock is closed on Sundays.", "metadata": {"artifact_id": "a"}}},
          422, "validation_error", "tenant_id"),
    _case("dats-batch-empty", "/api/v1/embeddings/batch-invalidate",
          {"json": {"artifact_ids": [], "tenant_id": "alpha"}},
          422, "validation_error", "artifact_ids"),
    _case("dats-delete-control-character", "/api/v1/embeddings/fixed%01?tenant_id=alpha", {},
          422, "validation_error", "artifact_id", method="DELETE"),
    _case("dats-delete-unknown", "/api/v1/embeddings/never-indexed?tenant_id=alpha", {},
          404, "not_found", "never-indexed", method="DELETE"),
    _case("plan-query-bad-mode", "/rag/query", {"json": {"query": "dock", "mode": "fuzzy", **READER}},
          422, "validation_error", "mode"),
    _case("plan-query-project-scope", "/rag/query", {"json": {"query": "dock", "scope": "project", **READER}},
          422, "validation_error", "project_id"),
    _case("plan-enrich-unknown-field", "/rag/enrich", {"json": {"message": "dock", "mesage": "x", **READER}},
          422, "validation_error", "mesage"),
    _case("plan-ingest-blank", "/rag/ingest",
          {"json": {"source_type": "spec", "source_id": "s", "content": " ", "metadata": {"tenant_id": "alpha"}}},
          422, "validation_error", "content"),
    _case("plan-ingest-user-scope-without-owner", "/rag/ingest",
          {"json": {"source_type": "spec", "source_id": "s", "content": "The dock opens at six.",
                    "metadata": {"tenant_id": "alpha", "tags": ["ops"], "scope": "user"}}},
          422, "validation_error", "user_id"),
    _case("standard-search-no-q", "/search", {"params": READER}, 422, "validation_error", "q", method="GET"),
    _case("standard-search-k-0", "/search", {"params": {"q": "dock", "k": 0, **READER}},
          422, "validation_error", "k", method="GET"),
    _case("standard-search-long-q", "/search", {"params": {"q": "x" * 5000, **READER}},
          422, "validation_error", "q", method="GET"),
    _case("standard-chat-empty", "/chat", {"json": {"question": "", **READER}}, 422, "validation_error", "question"),
    _case("standard-chat-no-identity", "/chat", {"json": {"question": "When does the dock open?"}},
          422, "validation_error", "tenant_id"),
    # routing
    _case("unknown-route", "/admin/run", {"json": {}}, 404, "not_found", "Not Found"),
    _case("get-on-post-route", "/search/run", {}, 405, None, "Method Not Allowed", method="GET"),
    _case("put-on-post-route", "/index/run", {"json": {"documents": [DOC]}},
          405, None, "Method Not Allowed", method="PUT"),
]  # fmt: skip

_counted: dict[str, list[str]] = {}  # engine -> the paths of the cases run


@pytest.mark.parametrize(("method", "path", "request_kwargs", "status", "error", "needle"), CASES)
def test_bad_input_is_a_clear_4xx_and_changes_nothing(
    server, baseline, method, path, request_kwargs, status, error, needle
):
    _snapshot, before = baseline
    response = server.client.request(method, path, **request_kwargs)
    _counted.setdefault(server.engine, []).append(path)
    expected = status if isinstance(status, tuple) else (status,)
    assert response.status_code in expected, f"{response.status_code}: {response.text[:500]}"
    body = response.json()
    assert set(body) == {"error", "message"}, body
    if error is not None:
        assert body["error"] == error, body
    assert needle.lower() in body["message"].lower(), body
    assert fingerprint(server.client) == before, "the index changed"


def test_the_store_is_byte_for_byte_unchanged(server, baseline):
    """After the whole matrix: every point's id, content, meta and vector as right after indexing."""
    snapshot, _ = baseline
    after = live_snapshot(server.data_dir)
    assert (after.points, after.content_digest, after.vector_digest) == (
        snapshot.points,
        snapshot.content_digest,
        snapshot.vector_digest,
    )
    counted = _counted.get(server.engine, [])
    print(
        f"\nbad-input cases ({server.engine}): {len(counted)} over {len(set(counted))} endpoints; "
        f"store unchanged at {after.points} points"
    )
    assert len(counted) in (0, len(CASES))  # the whole matrix ran (or this test ran alone)


@pytest.mark.parametrize("kind", ["pdf-bomb", "long-text-file"])
def test_upload_text_is_bounded_like_json_documents(server, kind):
    """A few hundred bytes of PDF must not become a document larger than a JSON document may be."""
    if kind == "pdf-bomb":
        files = _files(
            (f"{kind}.pdf", pdf_with_compressed_text(2 * MAX_DOCUMENT_CHARS)),
            form={"tenant_id": f"t-{kind}", "tags": "ops"},
        )
    else:
        files = _files(
            (f"{kind}.txt", b"word " * (MAX_DOCUMENT_CHARS // 2)), form={"tenant_id": f"t-{kind}", "tags": "ops"}
        )
    response = server.client.post("/index/upload", **files)
    assert response.status_code in (413, 422), response.text[:300]


def test_schema_fuzzing_never_answers_5xx(server):
    """schemathesis: positive and negative cases for every operation of the served schema."""
    import schemathesis
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis.errors import Unsatisfiable

    schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
    statuses: Counter[int] = Counter()
    failures: list[str] = []
    without_negative: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1
        # A GET is exercised with valid input only; a POST also with invalid input, where any exists (below).
        modes = [schemathesis.GenerationMode.POSITIVE] + (
            [schemathesis.GenerationMode.NEGATIVE] if operation.method.upper() == "POST" else []
        )
        for mode in modes:

            @settings(
                max_examples=FUZZ_EXAMPLES,
                deadline=None,
                database=None,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            @given(case=operation.as_strategy(generation_mode=mode))
            def call(case):
                response = case.call(base_url=server.url, timeout=120)
                statuses[response.status_code] += 1
                if response.status_code >= 500:
                    failures.append(
                        f"{operation.label} {mode.value}: {response.status_code} {response.text[:200]}\n"
                        f"{case.as_curl_command()[:800]}"
                    )

            try:
                call()
            except Unsatisfiable:
                # Every input the schema allows is valid (a free-form path segment and a raw body, as the webhook
                # routes take): there is no negative case to send. A positive case must always be satisfiable.
                if mode is not schemathesis.GenerationMode.NEGATIVE:
                    raise
                without_negative.append(operation.label)
    cases = sum(statuses.values())
    print(f"\nschemathesis: {cases} cases over {operations} operations; statuses {dict(sorted(statuses.items()))}")
    print(f"no negative case exists for: {without_negative}")
    assert not failures, "\n\n".join(failures[:10])
    assert cases >= operations * FUZZ_EXAMPLES // 2
    assert server.client.get("/health").json()["status"] == "healthy"
