"""
Crash safety and persistence of the embedded store, over HTTP (docs/testing.md, "Reliability and security tests").

One data dir, three server processes in turn:

1. Server 1 indexes a small corpus and records search results (three modes), RAG answers and a
   chat completion, then stops (SIGTERM).
   It also indexes version 1 of half of the "bulk" documents.
2. Server 2 must serve exactly the same (clean restart). Then it receives one large
   ``/index/run`` request (version 2 of every bulk document: half of them changes, half new,
   all multi-chunk) and is killed with SIGKILL once ``/health`` shows the store changing: in the
   write phase, before the request is answered.
3. The test process opens the shard itself (the write-ahead log is replayed here): every
   document of the killed request must hold exactly its old version, exactly its new version
   (all its chunks), or nothing; never a mix.
4. Server 3 starts on the same data dir: the old results and answers are identical, queries
   work, a clean index of the present documents gives the same chunks, and re-sending the
   killed request finds the present documents unchanged and completes the rest. A second
   process (another server, or a store opened by the test) is refused with an error naming
   the folder, and the index is unchanged by the attempt.
"""

import random
import threading
import time
from collections import Counter

import httpx
import pytest
from support.api_server import ApiServer
from support.reliability_support import StoreSnapshot, TestDocument, live_snapshot, new_canary, stable, store_snapshot

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ENV = {"SOURCEBOUND_BOOTSTRAP_CORPUS": "false"}
READER = {"tenant_id": "keep", "user_tags": ["ops", "hr"], "user_id": "u-kim"}
QUERIES = ["When does the loading dock open?", "How many vacation days are there?", "reference badge colour"]
QUESTIONS = ["When does the loading dock open on weekdays?", "What colour is the visitor badge?"]
BULK_DOCUMENTS = 40


def _persistent_corpus() -> list[TestDocument]:
    rng = random.Random(7)
    facts = [
        "The loading dock opens at 06:00 on weekdays and at 08:00 on Saturdays.",
        "Employees get 27 vacation days per year; up to five carry over to the next year.",
        "Visitor badges are orange and must be returned at reception before leaving.",
        "The server room is cooled to 19 degrees and checked by facilities every morning.",
        "Expense claims need itemised receipts and are paid with the next salary run.",
        "Kim's personal onboarding plan starts with a security briefing on day one.",
    ]
    documents = []
    for number, fact in enumerate(facts):
        canary = new_canary(rng)
        # Every sentence is unique: identical chunks in several documents tie, and ties may order differently.
        text = f"Reference {canary}. {fact} " + " ".join(
            f"Detail {i} of rule {number} is recorded on page {i + 7 * number}." for i in range(number * 12)
        )
        scope, user = ("user", "u-kim") if number == 5 else ("tenant", None)
        documents.append(
            TestDocument(
                f"keep-{number}", "keep", ["ops" if number % 2 else "hr"], text, canary, scope=scope, user_id=user
            )
        )
    return documents


def _bulk_corpus(version: int = 2, tenant: str = "bulk", prefix: str = "bulk") -> list[TestDocument]:
    """
    Version 1 exists for the even-numbered documents only (indexed by server 1); version 2 (the killed
    request) changes those and adds the odd-numbered ones. Versions differ in every chunk and in length.
    """
    rng = random.Random(11)
    documents = []
    for number in range(BULK_DOCUMENTS):
        canary = new_canary(rng)
        if version == 1 and number % 2:
            continue
        verdict = "passed inspection" if version == 1 else "failed re-inspection"
        # ~600-700 tokens of distinct sentences: several chunks per document.
        lines = 30 if version == 1 else 34
        text = " ".join(
            f"Bulk record {canary} v{version} line {line}: machine {number} {verdict} step {line * 7 % 31}."
            for line in range(lines)
        )
        documents.append(TestDocument(f"{prefix}-{number}", tenant, ["ops"], text, canary))
    return documents


def _version_of(chunks: dict[int, str]) -> int | None:
    """1 or 2 when every chunk is of that version, None for no chunks; fails on a mix."""
    versions = {2 if " v2 line " in text else 1 for text in chunks.values()}
    assert len(versions) <= 1, f"chunks of both versions: {chunks}"
    return versions.pop() if versions else None


def observe(http: httpx.Client) -> dict:
    """Everything a reader gets for a fixed set of requests, without timings and ids."""
    seen: dict = {}
    for query in QUERIES:
        for mode in ("vector", "keyword", "hybrid"):
            response = http.post("/search/run", json={"query": query, **READER, "k": 10, "search_mode": mode})
            assert response.status_code == 200, response.text
            seen[f"search {mode} {query}"] = stable(response.json()["result"])
    for question in QUESTIONS:
        response = http.post("/rag/run", json={"query": question, **READER})
        assert response.status_code == 200, response.text
        seen[f"rag {question}"] = stable(response.json()["result"])
    chat = http.post(
        "/v1/chat/completions", json={"model": "rag", "messages": [{"role": "user", "content": QUESTIONS[0]}], **READER}
    )
    assert chat.status_code == 200, chat.text
    seen["chat"] = stable(chat.json())
    assert any(result["citations"] for key, result in seen.items() if key.startswith("rag")), (
        "the corpus answers nothing"
    )
    return seen


def kill_during_indexing(server: ApiServer, documents: list[TestDocument]) -> dict:
    """
    Send one large indexing request and SIGKILL the server as soon as ``/health`` shows the point count
    change (the write phase began). Health reads may wait behind the writer, so the kill can land later
    in the write phase, but always before the request is answered.
    """
    poll = httpx.Client(base_url=server.url, timeout=10)
    before = poll.get("/health").json()["store"]["points"]
    outcome: dict = {"points_before": before}

    def send() -> None:
        try:
            response = httpx.post(
                f"{server.url}/index/run", json={"documents": [d.body() for d in documents]}, timeout=900
            )
            outcome["status"] = response.status_code
        except httpx.TransportError as error:
            outcome["transport_error"] = type(error).__name__

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    deadline = time.monotonic() + 600
    points = before
    while time.monotonic() < deadline and sender.is_alive():
        points = poll.get("/health").json()["store"]["points"]
        if points != before:
            break
        time.sleep(0.002)
    server.process.kill()  # SIGKILL: no shutdown handler, no flush
    server.process.wait(timeout=30)
    sender.join(timeout=60)
    poll.close()
    server.stop()
    outcome["points_seen"] = points
    return outcome


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("crash") / "data"


@pytest.fixture(scope="module")
def first_run(data_dir) -> dict:
    with ApiServer(data_dir, env=ENV) as server:
        response = server.client.post(
            "/index/run", json={"documents": [d.body() for d in _persistent_corpus() + _bulk_corpus(1)]}
        )
        assert response.status_code == 200, response.text
        baseline = observe(server.client)
        code = server.stop()
    assert code in (0, -15)
    return {"observed": baseline, "store": store_snapshot(data_dir / "qdrant")}


@pytest.fixture(scope="module")
def second_run(data_dir, first_run) -> dict:
    server = ApiServer(data_dir, env=ENV).start()
    try:
        observed = observe(server.client)
        crash = kill_during_indexing(server, _bulk_corpus())
    finally:
        server.stop()
    return {"observed": observed, "crash": crash}


@pytest.fixture(scope="module")
def after_crash(data_dir, second_run) -> StoreSnapshot:
    """The store as the test process finds it after the kill (opening it replays the write-ahead log)."""
    return store_snapshot(data_dir / "qdrant")


@pytest.fixture(scope="module")
def third_run(data_dir, after_crash):
    with ApiServer(data_dir, env=ENV) as server:
        yield server


def test_clean_restart_serves_identical_results(first_run, second_run):
    """Persistence: after SIGTERM and a restart, every search mode, answer and chat completion is identical."""
    assert second_run["observed"] == first_run["observed"]


def test_the_kill_landed_in_the_middle_of_the_request(second_run, after_crash):
    crash = second_run["crash"]
    versions = Counter(_version_of(after_crash.chunks_of("bulk", d.document_id)) for d in _bulk_corpus())
    print(
        f"\ncrash: {crash}; documents after it: {versions[2]} new version, {versions[1]} old version, "
        f"{versions[None]} absent"
    )
    assert "status" not in crash, f"the indexing request finished before the kill: {crash}"
    assert crash["points_seen"] != crash["points_before"], "the kill came before any write"


def test_data_from_before_the_crash_is_unchanged(first_run, after_crash):
    """Every point written before the killed request: same ids, content, meta and vectors."""
    assert after_crash.tenant_digest("keep") == first_run["store"].tenant_digest("keep")


def test_crash_restart_serves_the_same_answers(first_run, third_run):
    """
    Dense search, RAG answers and chat answers equal the ones before the crash. (Keyword and hybrid
    scores use BM25 IDF over the whole store, which the crashed request's surviving documents changed.)
    """
    now = observe(third_run.client)
    before = first_run["observed"]
    for key, value in before.items():
        if key.startswith("search vector"):
            assert now[key] == value, key
        elif key.startswith("rag"):
            assert (now[key]["answer"], now[key]["citations"], now[key]["action"]) == (
                value["answer"],
                value["citations"],
                value["action"],
            ), key
    assert now["chat"]["choices"] == before["chat"]["choices"]


def test_every_document_is_old_new_or_absent(first_run, after_crash, third_run):
    """Old version: exactly the chunks server 1 wrote. New version: exactly the chunks of a clean index."""
    new_version = {}
    for document in _bulk_corpus():
        chunks = after_crash.chunks_of("bulk", document.document_id)
        version = _version_of(chunks)
        if version == 1:
            assert chunks == first_run["store"].chunks_of("bulk", document.document_id), document.document_id
        elif version == 2:
            assert sorted(chunks) == list(range(len(chunks))), f"{document.document_id} has a gap: {sorted(chunks)}"
            new_version[document.document_id] = chunks
    if not new_version:
        return
    # A clean index of the same texts (another tenant, other ids) gives the same number of chunks.
    clean = [
        d for d in _bulk_corpus(tenant="clean", prefix="clean") if d.document_id.replace("clean", "bulk") in new_version
    ]
    for document in clean:
        document.extra = {"document_name": f"name-{document.document_id.replace('clean', 'bulk')}"}
    response = third_run.client.post("/index/run", json={"documents": [d.body() for d in clean]})
    assert response.status_code == 200, response.text
    counts = {
        entry["document_id"].replace("clean", "bulk"): entry["chunks"]
        for entry in response.json()["result"]["documents"]
    }
    for document_id, chunks in new_version.items():
        assert len(chunks) == counts[document_id] > 1, (
            f"{document_id}: {len(chunks)} chunks after the crash, {counts[document_id]} when clean"
        )


def test_resending_the_request_completes_it(after_crash, third_run):
    bulk = _bulk_corpus()
    response = third_run.client.post("/index/run", json={"documents": [d.body() for d in bulk]}, timeout=900)
    assert response.status_code == 200, response.text
    statuses = {entry["document_id"]: entry["status"] for entry in response.json()["result"]["documents"]}
    for document in bulk:
        expected = "unchanged" if _version_of(after_crash.chunks_of("bulk", document.document_id)) == 2 else "indexed"
        assert statuses[document.document_id] == expected, (document.document_id, statuses[document.document_id])
    for document in bulk[:: BULK_DOCUMENTS // 8]:
        body = {
            "query": f"Bulk record {document.canary}",
            "tenant_id": "bulk",
            "user_tags": ["ops"],
            "search_mode": "keyword",
            "k": 10,
        }
        hits = third_run.client.post("/search/run", json=body).json()["result"]["results"]
        assert document.document_id in {hit["document_id"] for hit in hits}, (document.document_id, hits)


def test_a_second_process_gets_a_clear_error(data_dir, third_run):
    from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore
    from components.document_stores.qdrant_edge.errors import ShardLockedError

    before = live_snapshot(data_dir)
    with pytest.raises(ShardLockedError, match="held by another process") as caught:
        QdrantEdgeDocumentStore(path=str(data_dir / "qdrant"))
    assert str(data_dir / "qdrant") in str(caught.value)

    second = ApiServer(data_dir, env=ENV)
    second.log_path = data_dir.parent / "second-server.log"
    try:
        with pytest.raises(RuntimeError, match="exited"):
            second.start()
    finally:
        second.stop()  # closes its client; stops it should it ever start
    log = second.log_tail(200)
    assert "held by another process" in log and str(data_dir / "qdrant") in log, log[-3000:]

    health = third_run.client.get("/health").json()
    assert health["status"] == "healthy" and health["store"]["points"] == before.points
    after = live_snapshot(data_dir)
    assert (after.points, after.content_digest, after.vector_digest) == (
        before.points,
        before.content_digest,
        before.vector_digest,
    )


def test_after_a_clean_stop_the_store_is_complete(data_dir, first_run, third_run):
    """The crashed request's documents, kept or re-sent, hold exactly the chunks of a clean index."""
    assert third_run.stop() in (0, -15)
    final = store_snapshot(data_dir / "qdrant")
    for document in _bulk_corpus():
        chunks = final.chunks_of("bulk", document.document_id)
        assert _version_of(chunks) == 2 and sorted(chunks) == list(range(len(chunks)))
        clean = final.chunks_of("clean", document.document_id.replace("bulk", "clean"))
        if clean:
            assert chunks == clean, document.document_id
    assert final.tenant_digest("keep") == first_run["store"].tenant_digest("keep")
