"""EventOutbox: events kept until the broker confirms them, claimed by one relay at a time, erasable per tenant."""

import json
import threading

import pytest

from components.stores.event_outbox import OUTBOX_FILE, EventOutbox, erase_outbox_tenant


def _row(event_id: str, tenant_id: str = "acme", routing_key: str = "embedding.completed") -> dict:
    return {
        "event_id": event_id,
        "routing_key": routing_key,
        "tenant_id": tenant_id,
        "body": json.dumps({"id": event_id}),
    }


@pytest.fixture
def outbox(tmp_path):
    box = EventOutbox(tmp_path / OUTBOX_FILE)
    yield box
    box.close()


@pytest.mark.unit
class TestEventOutbox:
    def test_add_keeps_order_and_an_event_id_once(self, outbox):
        woken = threading.Event()
        outbox.on_added(woken.set)
        assert outbox.add([_row("e-1"), _row("e-2", "globex")]) == 2 and woken.is_set()
        assert outbox.add([_row("e-1")]) == 0  # the same event again
        assert [row["event_id"] for row in outbox.pending()] == ["e-1", "e-2"] and outbox.count() == 2

    def test_a_claimed_row_is_not_claimed_again_until_released_or_expired(self, outbox):
        outbox.add([_row("e-1"), _row("e-2")])
        first = outbox.claim(limit=1, now=1000.0)
        assert [(row["event_id"], row["attempts"]) for row in first] == [("e-1", 1)]
        assert [row["event_id"] for row in outbox.claim(limit=10, now=1001.0)] == ["e-2"]
        assert outbox.claim(limit=10, now=1002.0) == []
        outbox.release(["e-1"], "ConnectionClosed: broker gone")
        again = outbox.claim(limit=10, now=1003.0)
        assert [(row["event_id"], row["attempts"]) for row in again] == [("e-1", 2)]
        assert [row["event_id"] for row in outbox.claim(limit=10, now=1003.0 + 61)] == ["e-1", "e-2"]  # expired
        assert outbox.pending()[0]["last_error"] == "ConnectionClosed: broker gone"

    def test_remove_after_confirmation(self, outbox):
        outbox.add([_row("e-1"), _row("e-2")])
        assert outbox.remove(["e-1", "nope"]) == 1 and [row["event_id"] for row in outbox.pending()] == ["e-2"]

    def test_erase_a_tenant(self, outbox, tmp_path):
        outbox.add([_row("e-1"), _row("e-2", "globex"), _row("e-3")])
        assert erase_outbox_tenant(tmp_path, "acme") == 2
        assert [row["tenant_id"] for row in outbox.pending()] == ["globex"]
        assert erase_outbox_tenant(tmp_path / "elsewhere", "acme") is None  # no outbox there: nothing to report
        assert not (tmp_path / "elsewhere" / OUTBOX_FILE).exists()
