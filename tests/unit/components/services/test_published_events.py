"""The published events' bodies: the consumer's envelope, and ids that are stable for a re-applied event."""

import json

import pytest

from components.services.published_events import embedding_completed, embedding_invalidated


@pytest.mark.unit
class TestPublishedEvents:
    def test_completed_is_the_consumers_envelope(self):
        row = embedding_completed("acme", "art-1", "doc-1", chunks=3, changed=True, provenance_id="p-1")
        body = json.loads(row["body"])
        assert set(body) == {"event_id", "occurred_at", "type", "data"} and body["event_id"] == row["event_id"]
        assert (row["routing_key"], body["type"], row["tenant_id"]) == ("embedding.completed",) * 2 + ("acme",)
        assert body["data"] == {
            "artifact_id": "art-1", "chunks": 3, "status": "indexed", "changed": True, "tenant_id": "acme",
            "document_id": "doc-1", "provenance_id": "p-1",
        }  # fmt: skip

    def test_ids_are_random_for_requests_and_derived_for_consumed_events(self):
        def make(trigger):
            return embedding_completed("acme", "art-1", "doc-1", chunks=3, changed=True, trigger_event_id=trigger)

        assert make(None)["event_id"] != make(None)["event_id"]
        assert make("evt-1")["event_id"] == make("evt-1")["event_id"] != make("evt-2")["event_id"]

    def test_invalidated(self):
        result = {"artifact_ids": ["a", "b"], "cascade_id": "c-1", "reason": "upstream_taint", "invalidated": 1,
                  "chunks_removed": 4, "not_found": ["b"]}  # fmt: skip
        body = json.loads(embedding_invalidated("acme", result, "evt-9")["body"])
        assert body["type"] == "embedding.invalidated"
        assert body["data"] == {**result, "tenant_id": "acme"}
        assert body["event_id"] == json.loads(embedding_invalidated("acme", result, "evt-9")["body"])["event_id"]
