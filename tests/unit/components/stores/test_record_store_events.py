import pytest

from components.stores.record_store import RecordStore

pytestmark = pytest.mark.unit


def _event(event_id, outcome="applied", documents=("d-1",), occurred_at=100, tenant="acme", **extra):
    return {
        "event_id": event_id, "routing_key": "document.upsert", "tenant_id": tenant,
        "document_ids": list(documents), "occurred_at": occurred_at, "outcome": outcome, **extra,
    }  # fmt: skip


@pytest.fixture
def records(tmp_path):
    store = RecordStore(tmp_path / "records.sqlite")
    yield store
    store.close()


class TestRecordStoreEvents:
    def test_recorded_events_and_their_outcome(self, records):
        assert records.event_outcome("e-1") is None
        records.record_events([_event("e-1", details={"status": "indexed"}), _event("e-2", "superseded")])
        assert records.event_outcome("e-1") == "applied" and records.event_outcome("e-2") == "superseded"
        rows = {row["event_id"]: row for row in records.applied_events()}
        assert rows["e-1"]["details"] == {"status": "indexed"} and rows["e-1"]["document_ids"] == ["d-1"]
        records.record_events([_event("e-1", "dead_lettered")])  # a second record of an id changes nothing
        assert records.event_outcome("e-1") == "applied" and len(records.applied_events()) == 2

    def test_positions_only_move_forward_and_only_for_applied_events(self, records):
        records.record_events([_event("e-1", occurred_at=200, documents=("d-1", "d-2"))])
        records.record_events([_event("e-2", occurred_at=100, documents=("d-1",))])
        records.record_events([_event("e-3", "superseded", occurred_at=900, documents=("d-2",))])
        assert records.event_positions("acme", ["d-1", "d-2", "d-3"]) == {"d-1": 200, "d-2": 200}
        records.record_events([_event("e-4", occurred_at=300, documents=("d-2",))])
        assert records.event_positions("acme", ["d-2"]) == {"d-2": 300}
        assert records.event_positions("globex", ["d-1"]) == {}

    def test_attempts_count_across_instances_and_end_when_recorded(self, records, tmp_path):
        assert [records.count_event_attempt("e-1") for _ in range(3)] == [1, 2, 3]
        reopened = RecordStore(tmp_path / "records.sqlite")  # a restarted process
        assert reopened.count_event_attempt("e-1") == 4
        reopened.record_events([_event("e-1")])
        assert reopened.count_event_attempt("e-1") == 1
        reopened.close()

    def test_erasing_a_tenant_removes_its_events_and_positions(self, records):
        records.record_events([_event("e-1"), _event("e-2", tenant="globex")])
        records.log_event("index", tenant_id="acme", document_ids=["d-1"], chunks=1)
        removed = records.erase_tenant("acme")
        assert removed == {"query_log_rows": 0, "index_events": 2}
        assert records.event_outcome("e-1") is None and records.event_outcome("e-2") == "applied"
        assert records.event_positions("acme", ["d-1"]) == {} and records.event_positions("globex", ["d-1"])
