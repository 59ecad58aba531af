"""The sync bookkeeping in a real SQLite file: commit and files advance together, deliveries, jobs, pruning."""

import pytest
import sqlalchemy.exc

from components.stores.sync_state import SyncState

pytestmark = pytest.mark.unit


@pytest.fixture
def state(tmp_path):
    opened = SyncState(tmp_path / "sources.sqlite")
    yield opened
    opened.close()


class TestSyncState:
    def test_commit_and_files_advance_together_and_survive_a_reopen(self, state, tmp_path):
        assert state.last_commit("h") is None and state.files("h") == {}
        state.advance("h", "c1", {"a.md": ("b1", "doc-a"), "b.md": ("b2", "doc-b")}, [])
        state.advance("h", "c2", {"a.md": ("b3", "doc-a")}, ["b.md"])
        reopened = SyncState(tmp_path / "sources.sqlite")
        assert reopened.last_commit("h") == "c2" and reopened.files("h") == {"a.md": ("b3", "doc-a")}
        reopened.close()

    def test_a_failed_advance_changes_nothing(self, state):
        state.advance("h", "c1", {"a.md": ("b1", "doc-a")}, [])
        with pytest.raises(sqlalchemy.exc.IntegrityError):
            state.advance("h", "c2", {"b.md": ("b2", None)}, ["a.md"])  # NOT NULL: the transaction rolls back
        assert state.last_commit("h") == "c1" and state.files("h") == {"a.md": ("b1", "doc-a")}

    def test_deliveries_are_recorded_once(self, state):
        assert state.record_delivery("h", "d-1", None) is None
        state.set_delivery_job("h", "d-1", "job-1")
        assert state.record_delivery("h", "d-1", None) == "job-1"
        assert state.record_delivery("other", "d-1", None) is None  # per source
        state.forget_delivery("h", "d-1")
        assert state.record_delivery("h", "d-1", None) is None

    def test_jobs_lifecycle_abandon_and_prune(self, state):
        done = state.create_job("h", "acme", "github")
        state.start_job(done)
        state.finish_job(done, result={"mode": "incremental"})
        failed = state.create_job("h", "acme", "jwt")
        state.finish_job(failed, error="GitError: boom")
        left = state.create_job("h", "acme", "reconcile")
        assert state.count_jobs("queued", "running") == 1
        assert state.job(done)["status"] == "succeeded" and state.job(done)["result"] == {"mode": "incremental"}
        assert state.job(failed)["status"] == "failed" and state.job(failed)["error"] == "GitError: boom"
        assert state.abandon_unfinished() == 1 and state.job(left)["status"] == "abandoned"
        assert state.job("job-none") is None
        assert state.prune(0) == {"deliveries": 0, "jobs": 0}
        state._query("UPDATE jobs SET created_at = '2000-01-01T00:00:00+00:00' WHERE id = :id", {"id": done})
        assert state.prune(30) == {"deliveries": 0, "jobs": 1} and state.job(done) is None
