"""The query log and index event log (SQLite) and their retention."""

import threading
import time

import pytest

from components.stores.record_store import QueryLogWriter, RecordStore


@pytest.mark.unit
class TestRecordStore:
    def test_init_creates_schema_and_secret(self, tmp_path):
        store = RecordStore(tmp_path / "sub" / "records.sqlite")
        assert (tmp_path / "sub" / "records.sqlite").exists()
        assert (tmp_path / "sub" / "records.sqlite.key").stat().st_mode & 0o777 == 0o600
        assert store.queries() == [] and store.events() == []

    def test_init_rejects_unknown_text_mode(self, tmp_path):
        with pytest.raises(ValueError, match="query_text_mode"):
            RecordStore(tmp_path / "r.sqlite", query_text_mode="plain")

    def test_log_query_full_text(self, tmp_path):
        store = RecordStore(tmp_path / "r.sqlite")
        store.log_query(
            endpoint="rag", query="How many vacation days?", latency_ms=12.3456, tenant_id="acme", user_id="u1",
            scope="user", result_count=3, tokens_used=420, action="CITE", confidence=77,
        )  # fmt: skip
        (row,) = store.queries()
        assert row["query_text"] == "How many vacation days?" and row["outcome"] == "ok"
        assert (row["tenant_id"], row["scope"], row["result_count"], row["tokens_used"], row["action"]) == (
            "acme",
            "user",
            3,
            420,
            "CITE",
        )
        assert row["latency_ms"] == pytest.approx(12.346)

    def test_log_query_hash_mode_keeps_no_text(self, tmp_path):
        store = RecordStore(tmp_path / "r.sqlite", query_text_mode="hash")
        store.log_query(endpoint="search", query="secret plans", latency_ms=1.0)
        store.log_query(endpoint="search", query="secret plans", latency_ms=1.0)
        rows = store.queries()
        assert all(row["query_text"] is None for row in rows)
        assert rows[0]["query_hash"] == rows[1]["query_hash"] == store.query_hash("secret plans")
        assert "secret" not in (tmp_path / "r.sqlite").read_bytes().decode("latin-1")

    def test_hash_is_keyed_per_data_dir(self, tmp_path):
        first = RecordStore(tmp_path / "a" / "r.sqlite")
        second = RecordStore(tmp_path / "b" / "r.sqlite")
        assert first.query_hash("vpn") != second.query_hash("vpn")
        assert RecordStore(tmp_path / "a" / "r.sqlite").query_hash("vpn") == first.query_hash("vpn")

    def test_log_event(self, tmp_path):
        store = RecordStore(tmp_path / "r.sqlite")
        store.log_event(
            "invalidate",
            tenant_id="acme",
            document_ids=["d-1", "d-2"],
            reason="upstream_taint",
            cascade_id="c-9",
            chunks=7,
        )
        (event,) = store.events(tenant_id="acme")
        assert event["document_ids"] == ["d-1", "d-2"]
        assert (event["event"], event["reason"], event["cascade_id"], event["chunks"]) == (
            "invalidate",
            "upstream_taint",
            "c-9",
            7,
        )
        assert store.events(tenant_id="globex") == []

    def test_prune_removes_only_old_rows(self, tmp_path):
        store = RecordStore(tmp_path / "r.sqlite")
        store.log_query(endpoint="search", query="q", latency_ms=1)
        store.log_event("delete_tenant", tenant_id="t")
        assert store.prune(30) == {"query_log": 0, "index_events": 0}
        assert store.prune(0, now=time.time() + 10**9) == {"query_log": 0, "index_events": 0}
        assert store.prune(1, now=time.time() + 2 * 86400) == {"query_log": 1, "index_events": 1}
        assert store.queries() == [] and store.events() == []

    def test_concurrent_writers(self, tmp_path):
        store = RecordStore(tmp_path / "r.sqlite")

        def write(n):
            for i in range(25):
                store.log_query(endpoint="search", query=f"{n}-{i}", latency_ms=1)

        threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(store.queries(limit=1000)) == 100


@pytest.mark.unit
class TestQueryLogWriterGathering:
    def test_init_rejects_a_negative_gather(self):
        with pytest.raises(ValueError, match="gather_s"):
            QueryLogWriter(lambda rows: None, gather_s=-1)

    def test_run_writes_the_rows_of_a_moment_in_one_transaction(self):
        batches: list[list[dict]] = []
        writer = QueryLogWriter(batches.append, gather_s=0.5)
        for n in range(5):
            writer.put({"n": n})
            time.sleep(0.01)  # requests arriving one by one
        assert writer.flush(5)
        assert [[row["n"] for row in batch] for batch in batches] == [[0, 1, 2, 3, 4]]
        writer.close()

    def test_run_without_gathering_writes_each_row_as_it_comes(self):
        batches: list[list[dict]] = []
        writer = QueryLogWriter(batches.append, gather_s=0)
        for n in range(3):
            writer.put({"n": n})
            deadline = time.monotonic() + 5
            while writer.written <= n and time.monotonic() < deadline:
                time.sleep(0.001)
        assert [[row["n"] for row in batch] for batch in batches] == [[0], [1], [2]]
        writer.close()

    def test_flush_and_a_full_batch_do_not_wait_for_the_gathering(self):
        batches: list[list[dict]] = []
        writer = QueryLogWriter(batches.append, batch_rows=3, gather_s=30)
        for n in range(3):
            writer.put({"n": n})
        deadline = time.monotonic() + 5
        while not batches and time.monotonic() < deadline:
            time.sleep(0.001)
        assert [len(batch) for batch in batches] == [3]  # a full batch went at once
        writer.put({"n": 3})
        started = time.monotonic()
        assert writer.flush(5) and time.monotonic() - started < 2
        started = time.monotonic()
        writer.put({"n": 4})
        writer.close(timeout=5)
        assert time.monotonic() - started < 2 and [row["n"] for batch in batches for row in batch] == [0, 1, 2, 3, 4]
