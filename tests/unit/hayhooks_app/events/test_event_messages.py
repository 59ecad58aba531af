import json
from datetime import UTC, datetime

import pytest

from hayhooks_app.events.messages import ROUTING_KEYS, PoisonMessage, parse_event

pytestmark = pytest.mark.unit

TENANTS = frozenset({"acme"})
WHEN = "2026-11-24T17:00:00.250000+00:00"


def _body(data, event_id="evt-1", occurred_at=WHEN, **extra) -> bytes:
    return json.dumps({"event_id": event_id, "occurred_at": occurred_at, "data": data, **extra}).encode()


def _poison(routing_key: str, body: bytes, **options) -> PoisonMessage:
    with pytest.raises(PoisonMessage) as caught:
        parse_event(routing_key, body, TENANTS, **options)
    return caught.value


DOC = {"content": "Vacation: 25 days.", "tenant_id": "acme", "tags": ["hr"], "document_id": "vacation"}


class TestParseEvent:
    def test_upsert_becomes_an_index_command(self):
        command = parse_event("document.upsert", _body({**DOC, "meta": {"verified": True}}), TENANTS)
        assert command.kind == "upsert" and command.event_id == "evt-1" and command.tenant_id == "acme"
        assert command.document_ids == ["vacation"]
        assert command.arguments == {**DOC, "scope": "tenant", "meta": {"verified": True}}
        expected = int(datetime(2026, 11, 24, 17, 0, 0, 250000, tzinfo=UTC).timestamp() * 1_000_000)
        assert command.occurred_at_us == expected

    def test_upsert_needs_a_document_id(self):
        poison = _poison("document.upsert", _body({k: v for k, v in DOC.items() if k != "document_id"}))
        assert poison.reason == "invalid" and "data.document_id" in poison.detail and poison.event_id == "evt-1"

    def test_task_validated_indexes_the_artifact(self):
        data = {"artifact_id": "art-1", "content": "Output.", "tenant_id": "acme", "tags": ["qa"]}
        command = parse_event("task.validated", _body(data), TENANTS)
        assert command.kind == "upsert" and command.document_ids == ["art-1"]
        assert command.arguments["document_id"] == "art-1" and command.arguments["meta"] == {
            "verified": True,
            "artifact_id": "art-1",
        }
        assert "artifact_id" not in command.arguments

    def test_artifact_tainted_invalidates_with_the_cascade(self):
        data = {"tenant_id": "acme", "artifact_id": "a-1", "artifact_ids": ["a-2", "a-1"], "cascade_id": "c-9"}
        command = parse_event("artifact.tainted", _body(data), TENANTS)
        # Found by artifact id, whatever their document_id: the command carries the artifact ids.
        assert command.kind == "invalidate_artifacts" and command.document_ids == ["a-1", "a-2"]
        assert command.arguments == {"reason": "upstream_taint", "cascade_id": "c-9"}
        # Artifact ids are not document ids: another system's ids (slashes, underscores) are accepted.
        wide = parse_event("artifact.tainted", _body({"tenant_id": "acme", "artifact_id": "runs/7_out"}), TENANTS)
        assert wide.document_ids == ["runs/7_out"]
        assert _poison("artifact.tainted", _body({"tenant_id": "acme"})).reason == "invalid"

    def test_delete_invalidate_and_flags(self):
        delete = parse_event("document.delete", _body({"tenant_id": "acme", "document_ids": ["d-1", "d-1"]}), TENANTS)
        assert delete.kind == "invalidate" and delete.document_ids == ["d-1"]
        assert delete.arguments == {"reason": "deleted", "cascade_id": None}
        data = {"tenant_id": "acme", "document_ids": ["d-1"], "reason": "r", "cascade_id": "c-1"}
        invalidate = parse_event("document.invalidate", _body(data), TENANTS)
        assert invalidate.arguments == {"reason": "r", "cascade_id": "c-1"}
        flags = parse_event(
            "document.flags", _body({"tenant_id": "acme", "document_ids": ["d-1"], "tainted": True}), TENANTS
        )
        assert flags.kind == "flags" and flags.arguments == {"tainted": True, "verified": None, "reason": None}
        assert _poison("document.flags", _body({"tenant_id": "acme", "document_ids": ["d-1"]})).reason == "invalid"

    def test_bad_json_and_schema_violations_are_invalid(self):
        assert _poison("document.upsert", b'{"event_id": "x", ').reason == "invalid"
        assert _poison("document.upsert", b"[1, 2]").reason == "invalid"
        tags = _poison("document.upsert", _body({**DOC, "tags": []}))
        assert "data.tags" in tags.detail
        assert (
            "meta may not set tenant_id"
            in _poison("document.upsert", _body({**DOC, "meta": {"tenant_id": "x"}})).detail
        )
        assert "data.extra" in _poison("document.upsert", _body({**DOC, "extra": 1})).detail
        assert "data.tags.0" in _poison("document.upsert", _body({**DOC, "tags": [5]})).detail  # no coercion
        assert _poison("document.upsert", _body(DOC, unknown=1)).reason == "invalid"

    def test_occurred_at_needs_an_offset_and_event_id_a_safe_form(self):
        assert "occurred_at" in _poison("document.upsert", _body(DOC, occurred_at="2026-11-24T17:00:00")).detail
        assert "event_id" in _poison("document.upsert", _body(DOC, event_id="has space")).detail
        assert "event_id" in _poison("document.upsert", _body(DOC, event_id="x" * 129)).detail

    def test_type_must_match_the_routing_key(self):
        assert "does not match" in _poison("document.upsert", _body(DOC, type="document.delete")).detail
        assert parse_event("document.upsert", _body(DOC, type="document.upsert"), TENANTS).kind == "upsert"

    def test_only_configured_tenants(self):
        poison = _poison("document.upsert", _body({**DOC, "tenant_id": "globex"}))
        assert poison.reason == "unauthorised_tenant" and poison.tenant_id == "globex" and "globex" in poison.detail
        delete = _body({"tenant_id": "globex", "document_ids": ["d"]})
        assert _poison("document.delete", delete).reason == "unauthorised_tenant"

    def test_public_documents_need_the_setting(self):
        public = {**DOC, "scope": "public", "document_id": "public-handbook"}
        assert _poison("document.upsert", _body(public)).reason == "unauthorised_tenant"
        assert parse_event("document.upsert", _body(public), TENANTS, allow_public=True).arguments["scope"] == "public"

    def test_unknown_routing_key_and_oversized_body(self):
        poison = _poison("document.frobnicate", _body(DOC, event_id="evt-9"))
        assert poison.reason == "unknown_routing_key" and poison.event_id == "evt-9"
        assert all(key in poison.detail for key in ROUTING_KEYS)
        assert _poison("document.upsert", b" " * (5 * 1024 * 1024)).reason == "too_large"

    def test_file_reference_upsert(self):
        data = {"file": "handbooks/travel.md", "tenant_id": "acme", "tags": ["hr"], "document_id": "travel"}
        command = parse_event("document.upsert_file", _body(data), TENANTS)
        assert command.kind == "upsert_file" and command.document_ids == ["travel"]
        assert command.arguments == {
            "file": "handbooks/travel.md",
            "meta": {"tenant_id": "acme", "tags": ["hr"], "document_id": "travel", "scope": "tenant"},
        }
        for bad in ("/etc/passwd", "../secrets.md", "a/../../b.md", "a\\b.md", "a\nb.md", ""):
            poison = _poison("document.upsert_file", _body({**data, "file": bad}))
            assert poison.reason == "invalid" and "data.file" in poison.detail, bad
        assert "data.files" in _poison("document.upsert_file", _body({**data, "files": 2})).detail
        assert "data.content" in _poison("document.upsert_file", _body({**data, "content": "x"})).detail
        assert _poison("document.upsert_file", _body({**data, "scope": "user"})).reason == "invalid"
