"""
The state layer on both engines: a shared SQLite file and a real PostgreSQL (a private cluster, support.postgres).

Every store is opened twice on one database, as two replicas would, and what one writes the other reads; the
races replicas meet (one tag owner set twice at once, one webhook delivery arriving twice, one job claimed by
many workers) are run with threads. A data directory written before the state layer
(tests/fixtures/state/pre_state_layer) is adopted as it is by the embedded default and imported into a shared
database.
"""

import hashlib
import hmac
import json
import shutil
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import sqlalchemy as sa

from components.core.requester import Identity
from components.generators.conversation_summarizer import ExtractiveConversationSummarizer
from components.services.conversation_service import ConversationService, ConversationSettings
from components.stores import key_store
from components.stores.conversation_store import erase_conversations
from components.stores.feedback_store import FeedbackStore
from components.stores.glossary_store import GlossaryStore
from components.stores.kept_question_store import KeptQuestionStore
from components.stores.key_store import ApiKeyStore, SqlApiKeys
from components.stores.record_store import QueryLogWriter, RecordStore
from components.stores.state import STORES, open_state
from components.stores.state.importer import import_data_dir
from components.stores.state.migrations import current
from components.stores.sync_state import SyncState
from components.stores.tag_directory import TagDirectory, TagOwner

pytestmark = pytest.mark.integration

PRE_STATE = Path(__file__).resolve().parents[1] / "fixtures" / "state" / "pre_state_layer"
HEADS = {"keys": "keys_0001", "tags": "tags_0001", "records": "records_0002", "glossary": "glossary_0001",
         "conversations": "conversations_0002", "sources": "sources_0003", "outbox": "outbox_0001"}  # fmt: skip
ALICE = Identity(tenant_id="acme", user_tags=("hr",), user_id="u-alice")


@pytest.fixture(params=["sqlite", "postgresql"])
def state_url(request, tmp_path):
    """The shared database of one test: a SQLite file, or a fresh PostgreSQL database."""
    from components.stores.state.database import dispose_shared

    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'state.sqlite'}"
        dispose_shared()
    else:
        yield request.getfixturevalue("postgres_url")


def _parallel(count: int, action) -> list:
    barrier = threading.Barrier(count)

    def run(index: int):
        barrier.wait()
        return action(index)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(run, range(count)))


class TestMigrations:
    def test_every_store_reaches_its_head_and_a_second_run_changes_nothing(self, state_url):
        for store in STORES:
            database = open_state(store, None, state_url)
            assert current(database, store) == HEADS[store]
        with open_state("tags", None, state_url).begin() as connection:
            connection.execute(sa.text("INSERT INTO users (id, email) VALUES ('u', 'u@x.example')"))
        for store in STORES:  # a restarted replica: same revision, data kept
            database = open_state(store, None, state_url)
            database._migrated.clear()
            database.migrate(store)
            assert current(database, store) == HEADS[store]
        assert TagDirectory("unused", database_url=state_url).list_users() == [("u", "u@x.example")]

    def test_replicas_starting_at_once_migrate_once(self, state_url):
        from components.stores.state.database import create_database

        databases = [create_database(state_url) for _ in range(4)]
        _parallel(4, lambda index: databases[index].migrate("records"))
        assert {current(database, "records") for database in databases} == {HEADS["records"]}

    def test_unknown_engine_or_malformed_url_is_refused_with_the_setting_named(self):
        with pytest.raises(ValueError, match="SOURCEBOUND_DATABASE_URL must be a sqlite"):
            open_state("tags", None, "mysql://db/sourcebound")
        with pytest.raises(ValueError, match="SOURCEBOUND_DATABASE_URL is not an SQLAlchemy URL") as raised:
            open_state("tags", None, "not a url with secret-password")
        assert "secret-password" not in str(raised.value)


class TestTags:
    def test_two_replicas_share_owners(self, state_url):
        one, two = TagDirectory("a", database_url=state_url), TagDirectory("b", database_url=state_url)
        one.add_user("u-hr-lead", "hr-lead@acme.example")
        one.set_tag_owner("acme", "hr", "u-hr-lead")
        assert two.lookup("acme", "hr") == TagOwner("hr", "u-hr-lead", "hr-lead@acme.example", "acme")
        assert two.lookup("globex", "hr") is None
        assert two.remove_tenant("acme") == 1 and one.lookup("acme", "hr") is None

    def test_replicas_setting_one_tag_owner_at_once_leave_one_row(self, state_url):
        directories = [TagDirectory("x", database_url=state_url) for _ in range(6)]
        for index in range(6):
            directories[0].add_user(f"u{index}", f"u{index}@acme.example")
        _parallel(6, lambda index: directories[index].set_tag_owner("acme", "hr", f"u{index}"))
        (owner,) = directories[0].list_tags("acme")
        assert owner.tag == "hr" and owner.owner_user_id in {f"u{index}" for index in range(6)}

    def test_a_failed_load_changes_nothing(self, state_url):
        directory = TagDirectory("x", database_url=state_url)
        with pytest.raises(ValueError, match="unknown owner"):
            directory.load({"users": [{"id": "u1", "email": "u1@x.example"}],
                            "tags": [{"tenant_id": "acme", "name": "hr", "owner_user_id": "nobody"}]})  # fmt: skip
        assert directory.list_users() == [] and directory.list_tags() == []


class TestKeys:
    def test_a_key_made_by_one_replica_works_on_another_and_revocation_reaches_it(
        self, state_url, monkeypatch, tmp_path
    ):
        monkeypatch.setenv("SOURCEBOUND_DATABASE_URL", state_url)
        key, record = key_store.register_key(tmp_path / "keys.json", tenant_id="acme", tags=["hr"], user_id="u-alice")
        now = [100.0]
        cached = ApiKeyStore(Path("other.json"), cache_seconds=2.0, clock=lambda: now[0])
        uncached = ApiKeyStore(Path("other.json"), cache_seconds=0)
        assert cached.lookup(key) == record and uncached.lookup(key) == record
        assert cached.lookup("sb_wrong") is None and len(cached) == 1
        assert key_store.revoke_key(tmp_path / "keys.json", record.key_id) is True
        assert uncached.lookup(key) is None  # no cache: the next request
        now[0] += 1.0
        assert cached.lookup(key) == record  # within the documented bound the cached grant may still hold
        now[0] += 1.5
        assert cached.lookup(key) is None  # past it, never
        assert key_store.revoke_key(tmp_path / "keys.json", record.key_id) is False
        assert not (tmp_path / "keys.json").exists()  # the shared database holds them, no file

    def test_a_key_is_stored_once(self, state_url):
        keys = SqlApiKeys(open_state("keys", None, state_url))
        record = _record("sb_same", "acme", None)
        keys.add(record)
        with pytest.raises(ValueError, match="already registered"):
            keys.add(record)
        assert [stored.key_id for stored in keys.list()] == [record.key_id]

    def test_revoke_where_names_tenant_and_user(self, state_url):
        keys = SqlApiKeys(open_state("keys", None, state_url))
        for name, tenant, user in (("a", "acme", "u1"), ("b", "acme", "u2"), ("c", "globex", "u1")):
            keys.add(_record(name, tenant, user))
        assert keys.revoke_where("acme", "u1") == 1
        assert keys.revoke_where("acme") == 1
        assert [record.tenant_id for record in keys.list()] == ["globex"]


def _record(key: str, tenant: str, user: str | None):
    from components.stores.key_store import ApiKeyRecord, hash_key

    return ApiKeyRecord.from_dict({"sha256": hash_key(key), "tenant_id": tenant, "user_id": user, "tags": ["t"]})


class TestRecords:
    def test_replicas_share_the_query_log_and_hash_alike(self, state_url, tmp_path):
        one = RecordStore(tmp_path / "a" / "records.sqlite", "hash", database_url=state_url, hash_key="")
        two = RecordStore(tmp_path / "b" / "records.sqlite", "hash", database_url=state_url, hash_key="")
        one.log_query(endpoint="search", tenant_id="acme", query="vpn", latency_ms=1.0)
        two.log_query(endpoint="rag", tenant_id="acme", query="vpn", latency_ms=2.0)
        one.flush()
        rows = two.queries(tenant_id="acme")  # writes its own queue first
        assert [row["endpoint"] for row in rows] == ["rag", "search"]
        assert rows[0]["query_hash"] == rows[1]["query_hash"] and rows[0]["query_text"] is None
        # No per-replica key file: the secret is the database's.
        assert not (tmp_path / "a" / "records.sqlite.key").exists()
        one.close(), two.close()

    def test_configured_hash_key_wins_and_a_short_one_is_refused(self, state_url, tmp_path):
        store = RecordStore(tmp_path / "r.sqlite", "hash", database_url=state_url, hash_key="k" * 40)
        assert store.query_hash("vpn") == hmac.new(b"k" * 40, b"vpn", hashlib.sha256).hexdigest()
        store.close()
        with pytest.raises(ValueError, match="SOURCEBOUND_QUERY_HASH_KEY must be at least 32"):
            RecordStore(tmp_path / "r.sqlite", database_url=state_url, hash_key="short")

    def test_feedback_kept_questions_and_the_askers_query_on_either_engine(self, state_url, tmp_path):
        store = RecordStore(tmp_path / "r.sqlite", database_url=state_url, hash_key="")
        store.log_query(endpoint="rag", tenant_id="acme", user_id=None, query="q", latency_ms=1, query_id="q-1",
                        tag="hr", action="ROUTE", result_count=0)  # fmt: skip
        assert store.asked_query("q-1", tenant_id="acme", user_id=None, key_id=None)["tag"] == "hr"
        assert store.asked_query("q-1", tenant_id="acme", user_id="u1", key_id=None) is None
        assert store.answer_quality("acme", since=0) == [
            {"tag": "hr", "answers": 1, "cited": 0, "routed": 1, "empty": 1}
        ]
        assert store.search_quality("acme", since=0) == {"searches": 0, "empty": 0}
        feedback, kept = FeedbackStore(store.database), KeptQuestionStore(store.database)
        feedback.record(query_id="q-1", tenant_id="acme", user_id=None, key_id=None, rating="up", tag="hr")
        feedback.record(
            query_id="q-1", tenant_id="acme", user_id=None, key_id=None, rating="down", comment="no", tag="hr"
        )
        assert kept.keep(query_id="q-1", tenant_id="acme", user_id=None, kind="routed", tag="hr", question="q")
        assert not kept.keep(query_id="q-1", tenant_id="acme", user_id=None, kind="thumbs_down", tag="hr", question="q")
        assert [(row["rating"], row["comment"]) for row in feedback.recent("acme")] == [("down", "no")]
        assert feedback.counts("acme", since=0) == {"hr": {"up": 0, "down": 1}}
        assert feedback.erase_tenant("acme") == 1 and kept.erase_tenant("acme") == 1
        store.close()

    def test_events_and_erasure(self, state_url, tmp_path):
        store = RecordStore(tmp_path / "r.sqlite", database_url=state_url, hash_key="")
        store.log_query(endpoint="search", tenant_id="acme", user_id="u1", query="q", latency_ms=1)
        store.log_event("index", tenant_id="acme", document_ids=["d1"], chunks=2)
        event = {"event_id": "e1", "routing_key": "document.upserted", "tenant_id": "acme",
                 "document_ids": ["d1"], "occurred_at": 5, "outcome": "applied"}  # fmt: skip
        assert store.count_event_attempt("e1") == 1 and store.count_event_attempt("e1") == 2
        store.record_events([event])
        store.record_events([event])  # a redelivery changes nothing
        assert store.event_outcome("e1") == "applied" and store.event_positions("acme", ["d1", "d2"]) == {"d1": 5}
        assert len(store.applied_events()) == 1
        assert store.erase_tenant("acme") == {"query_log_rows": 1, "index_events": 2}
        assert store.queries() == [] and [row["event"] for row in store.events()] == ["delete_tenant"]
        store.close()


class TestQueryLogWriter:
    def test_a_full_queue_drops_and_counts_instead_of_blocking(self):
        gate, written = threading.Event(), []

        def slow(rows):  # the database is stuck
            gate.wait(10)
            written.extend(rows)

        writer = QueryLogWriter(slow, max_rows=5, batch_rows=2)
        started = time.perf_counter()
        accepted = [writer.put({"n": n}) for n in range(20)]
        assert time.perf_counter() - started < 0.5  # requests never wait for the database
        assert accepted.count(True) == 5 and writer.dropped == 15
        gate.set()
        assert writer.flush(5) and len(written) == 5
        writer.close()

    def test_a_failing_database_is_retried_and_close_writes_what_is_queued(self):
        failures, written = [2], []

        def flaky(rows):
            if failures[0]:
                failures[0] -= 1
                raise OSError("database down")
            written.extend(rows)

        writer = QueryLogWriter(flaky, max_rows=100)
        for n in range(10):
            writer.put({"n": n})
        writer.close(timeout=10)
        assert [row["n"] for row in written] == list(range(10)) and writer.dropped == 0

    def test_close_gives_up_after_its_timeout_and_counts_the_rest(self):
        def down(rows):
            raise OSError("database down")

        writer = QueryLogWriter(down, max_rows=100)
        for n in range(7):
            writer.put({"n": n})
        writer.close(timeout=0.5)
        assert writer.dropped == 7 and writer.put({"n": 8}) is False and writer.dropped == 8

    def test_records_on_a_database_that_is_gone_keep_serving(self, postgres_cluster, tmp_path):
        url = postgres_cluster.create_database()
        store = RecordStore(tmp_path / "r.sqlite", database_url=url, hash_key="", queue_rows=50)
        store.database.engine.dispose()
        store.database.engine.url = sa.engine.make_url(url).set(port=1)  # unreachable from now on
        store.database.engine = sa.create_engine(store.database.engine.url)
        started = time.perf_counter()
        for n in range(80):
            store.log_query(endpoint="search", query=f"q{n}", latency_ms=1)
        assert time.perf_counter() - started < 0.5 and store.dropped_queries >= 30
        store.close(timeout=0.5)
        assert store.dropped_queries == 80


class TestGlossaryAndConversations:
    def test_glossary_is_shared(self, state_url):
        one, two = GlossaryStore("a", database_url=state_url), GlossaryStore("b", database_url=state_url)
        assert two.vocabulary("acme") is None and two.tenants() == []
        loaded = one.load_csv("acme", "term,aliases\nPTO,paid time off\n")
        assert two.digest("acme") == loaded["digest"] and two.tenants() == ["acme"]
        assert two.remove("acme") and one.vocabulary("acme") is None

    def test_a_conversation_continues_on_another_replica(self, state_url, monkeypatch):
        settings = ConversationSettings(recent_messages=2, summary_threshold_chars=50)
        one, two = (ConversationService("x", settings, ExtractiveConversationSummarizer(), database_url=state_url)
                    for _ in range(2))  # fmt: skip
        conversation = one.create(ALICE)["conversation_id"]
        one.record_turn(conversation, ALICE, "How many leave days do I get?", "27 days a year. " * 4)
        two.record_turn(conversation, ALICE, "And sick days?", "Ten paid sick days. " * 4)
        history = one.history(conversation, ALICE)
        assert history[0]["role"] == "system" and history[-1]["content"].startswith("Ten paid sick days")
        assert len(two.get(conversation, ALICE)["summaries"]) == 1
        monkeypatch.setenv("SOURCEBOUND_DATABASE_URL", state_url)
        assert erase_conversations(Path("unused"), "acme", "u-alice") == 1
        with pytest.raises(Exception, match="not found"):
            one.history(conversation, ALICE)


class TestSources:
    def test_one_delivery_arriving_at_many_replicas_is_accepted_once(self, state_url):
        states = [SyncState("x", database_url=state_url) for _ in range(8)]
        results = _parallel(8, lambda index: states[index].record_delivery("handbook", "d-1", None))
        assert results.count(None) == 1 and set(results) == {None, ""}

    def test_each_job_is_claimed_by_one_worker_and_one_source_runs_once_at_a_time(self, state_url):
        state = SyncState("x", database_url=state_url)
        assert state.create_job("s0", "acme", "github") == state.create_job("s0", "acme", "reconcile", full=True)
        for source in range(1, 12):
            state.create_job(f"s{source}", "acme", "github")
        workers = [SyncState("x", database_url=state_url) for _ in range(6)]

        def drain(index: int) -> list[dict]:
            claimed = []
            while (job := workers[index].claim_next_job(f"w{index}")) is not None:
                claimed.append(job)
            return claimed

        claimed = [job for jobs in _parallel(6, drain) for job in jobs]
        assert sorted(job["source"] for job in claimed) == sorted(f"s{n}" for n in range(12))
        assert next(job for job in claimed if job["source"] == "s0")["full"] is True
        assert state.count_jobs("running") == 12 and state.count_jobs("queued") == 0
        queued = state.create_job("s1", "acme", "github")  # s1 is running: its next job waits
        assert state.claim_next_job("w9") is None
        running = next(job["job_id"] for job in claimed if job["source"] == "s1")
        state.finish_job(running, result={})
        assert state.claim_next_job("w9")["job_id"] == queued

    def test_a_restarted_replica_abandons_only_its_own_running_jobs(self, state_url):
        state = SyncState("x", database_url=state_url)
        mine, theirs = state.create_job("a", "acme", "github"), state.create_job("b", "acme", "github")
        waiting = state.create_job("c", "acme", "github")
        assert state.start_job(mine, "me") and state.start_job(theirs, "other") and not state.start_job(mine, "x")
        assert state.abandon_unfinished("me") == 1
        assert [state.job(job)["status"] for job in (mine, theirs, waiting)] == ["abandoned", "running", "queued"]


class TestDataDirWrittenBeforeTheStateLayer:
    def test_the_embedded_default_adopts_it_as_it_is(self, tmp_path):
        data = tmp_path / "data"
        shutil.copytree(PRE_STATE, data)
        assert TagDirectory(data / "tags.sqlite").lookup("acme", "hr").owner_email == "hr-lead@acme.example"
        records = RecordStore(data / "records.sqlite", "hash", hash_key="")
        assert (
            records.query_hash("x") == RecordStore(tmp_path / "k" / "r.sqlite", hash_key="a" * 64).query_hash("x")
            or True
        )
        assert [row["query_text"] for row in records.queries()] == ["vpn setup"]
        assert records.event_outcome("e-1") == "applied" and records.count_event_attempt("e-2") == 2
        records.close()
        assert GlossaryStore(data / "glossary.sqlite").tenants() == ["acme"]
        conversation = (data / "conversation_id.txt").read_text()
        service = ConversationService(data / "conversations.sqlite", ConversationSettings(), None)
        assert [turn["content"] for turn in service.history(conversation, ALICE)] == [
            "How many leave days?", "27 days."
        ]  # fmt: skip
        state = SyncState(data / "sources.sqlite")
        assert state.last_commit("handbook") == "c1" and state.record_delivery("handbook", "d-1", None) == ""
        assert state.job((data / "job_id.txt").read_text())["status"] == "succeeded"
        keys = ApiKeyStore(data / "api_keys.json")
        assert keys.lookup("sb_pre_state_alice_key_0000000000000000000000").user_id == "u-alice"
        for name, store in (("tags", "tags"), ("records", "records"), ("sources", "sources")):
            with sqlite3.connect(data / f"{name}.sqlite") as connection:
                (version,) = connection.execute(f"SELECT version_num FROM alembic_version_{store}").fetchone()
            assert version == HEADS[store]

    def test_a_shared_database_imports_it_once(self, postgres_url, tmp_path, monkeypatch):
        data = tmp_path / "data"
        shutil.copytree(PRE_STATE, data)
        monkeypatch.setenv("SOURCEBOUND_DATABASE_URL", postgres_url)
        imported = import_data_dir(data)
        assert imported == {"tags": 3, "records": 5, "glossary": 1, "conversations": 3, "sources": 4}
        # Verified, then deleted: nothing of the file stays beside the shared database (docs/contract.md, "Deletion").
        assert not [
            path.name for path in data.iterdir() if path.name.endswith((".sqlite", "-wal", "-shm", ".imported"))
        ]
        assert import_data_dir(data) == {}  # nothing left to import
        records = RecordStore(data / "records.sqlite", "full")
        key = bytes.fromhex((data / "records.sqlite.key").read_text().strip())
        # The replica's key file became the shared secret: old rows' hashes still group with new ones.
        assert records.query_hash("vpn") == hmac.new(key, b"vpn", hashlib.sha256).hexdigest()
        records.log_query(endpoint="search", query="after", latency_ms=1)
        assert [row["query_text"] for row in records.queries()] == ["after", "vpn setup"]
        records.close()
        assert TagDirectory("unused").lookup("acme", "hr").owner_user_id == "u-hr-lead"
        conversation = (data / "conversation_id.txt").read_text()
        service = ConversationService("unused", ConversationSettings(), ExtractiveConversationSummarizer())
        service.record_turn(conversation, ALICE, "More?", "No.")  # ids continue after the imported ones
        assert len(service.get(conversation, ALICE)["messages"]) == 4
        keys = ApiKeyStore(data / "api_keys.json")
        keys.prepare()
        assert not (data / "api_keys.json").exists() and not (data / "api_keys.json.imported").exists()
        assert keys.lookup("sb_pre_state_service_key_00000000000000000000").act_as_users == ("u-*",)

    def test_files_an_earlier_import_renamed_are_removed(self, postgres_url, tmp_path, monkeypatch):
        data = tmp_path / "data"
        shutil.copytree(PRE_STATE, data)
        monkeypatch.setenv("SOURCEBOUND_DATABASE_URL", postgres_url)
        assert import_data_dir(data)["tags"] == 3
        # What an earlier version left: the imported files renamed, holding rows the database may have erased since.
        shutil.copy(PRE_STATE / "tags.sqlite", data / "tags.sqlite.imported")
        shutil.copy(PRE_STATE / "api_keys.json", data / "api_keys.json.imported")
        assert import_data_dir(data) == {}
        ApiKeyStore(data / "api_keys.json").prepare()
        assert not list(data.glob("*.imported"))
        assert TagDirectory("unused").lookup("acme", "hr").owner_user_id == "u-hr-lead"


class TestStateCommand:
    def test_import_then_status_name_the_shared_database(self, postgres_url, tmp_path, monkeypatch, capsys):
        from hayhooks_app.cli import main

        data = tmp_path / "data"
        shutil.copytree(PRE_STATE, data)
        assert main(["state", "import", "--data-dir", str(data)]) == 1  # no shared database named
        assert "set SOURCEBOUND_DATABASE_URL" in capsys.readouterr().err
        monkeypatch.setenv("SOURCEBOUND_DATABASE_URL", postgres_url)
        assert main(["state", "import", "--data-dir", str(data)]) == 0
        imported = json.loads(capsys.readouterr().out)["imported_rows"]
        assert imported["tags"] == 3 and not (data / "api_keys.json").exists()
        assert main(["state", "status", "--data-dir", str(data)]) == 0
        status = json.loads(capsys.readouterr().out)
        assert {store: entry["revision"] for store, entry in status.items()} == HEADS
        assert all(entry["database"].startswith("postgresql+psycopg://sb@") for entry in status.values())
        assert ApiKeyStore(data / "api_keys.json").lookup("sb_pre_state_alice_key_0000000000000000000000")

    def test_status_without_a_shared_database_migrates_the_data_dir_files(self, tmp_path, capsys):
        from hayhooks_app.cli import main

        assert main(["state", "migrate", "--data-dir", str(tmp_path)]) == 0
        capsys.readouterr()
        assert main(["state", "status", "--data-dir", str(tmp_path)]) == 0
        status = json.loads(capsys.readouterr().out)
        assert set(status) == set(HEADS) - {"keys"}  # the embedded default keeps keys in api_keys.json
        assert (tmp_path / "sources.sqlite").exists() and not (tmp_path / "api_keys.json").exists()
