"""
A key changes only what it may write, over HTTP against the real server (docs/contract.md, "Write rule").

One api_key server, one tenant (acme) with a private document of alice, tenant documents of two tag sets, a
public document and project documents in p1 and p2, indexed by an operator-like key. Other keys then try to
invalidate, flag and overwrite them: a document a key may not write is answered byte for byte like an id that
does not exist, and the store is unchanged (every point, its content and meta, and its vector). A Hypothesis
probe draws (key, document) pairs over ``/flags/run`` and checks each answer against the test's own model of the
rule; explicit examples make every run reach each key's refused and allowed cases.

A second server in trusted mode checks the same rule with the body naming its caller, and that conversations
belong to the key that started them.
"""

import fnmatch
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, example, given, note, settings
from hypothesis import strategies as st
from support.api_server import ApiServer, error_of
from support.reliability_support import live_snapshot

from components.stores import key_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MISSING = "no-such-document"


@dataclass(frozen=True)
class Doc:
    document_id: str
    tags: tuple[str, ...]
    scope: str = "tenant"
    user_id: str | None = None
    project_id: str | None = None
    content: str = ""

    def body(self) -> dict:
        body = {"content": self.content or f"{self.document_id} canary-{self.document_id}.", "tenant_id": "acme",
                "tags": list(self.tags), "document_id": self.document_id, "scope": self.scope}  # fmt: skip
        body.update({k: v for k, v in (("user_id", self.user_id), ("project_id", self.project_id)) if v})
        return body


@dataclass(frozen=True)
class Key:
    name: str
    tags: tuple[str, ...]
    user_id: str | None = None
    act_as_users: tuple[str, ...] | None = None
    projects: tuple[str, ...] | None = None
    permissions: tuple[str, ...] = ("read", "write")
    secret: str = field(default="", compare=False)

    def may_write(self, doc: Doc) -> bool:
        """The test's own model of the write rule (docs/contract.md, "Write rule")."""
        if not set(doc.tags) <= set(self.tags):
            return False
        if doc.user_id is not None:
            if self.user_id is not None and doc.user_id != self.user_id:
                return False
            if self.user_id is None and not any(fnmatch.fnmatchcase(doc.user_id, p) for p in self.act_as_users or ()):
                return False
        if doc.project_id is not None and self.projects is not None and doc.project_id not in self.projects:
            return False
        return doc.scope != "public" or "public" in self.permissions


DOCS = (
    Doc("alice-notes", ("hr",), "user", "u-alice", content="Alice's salary review notes: band C, due in May."),
    Doc("hr-policy", ("hr",), content="Parental leave lasts sixteen weeks at full pay."),
    Doc("budget", ("finance",), content="The travel budget for 2026 is 40,000 euros."),
    Doc("board-minutes", ("hr", "finance"), content="The board approved the new salary bands."),
    Doc("public-faq", ("hr",), "public", content="The office opens at 08:00 for every visitor."),
    Doc("p1-plan", ("hr",), "project", "u-carol", "p1", content="Project one ships the mobile app in June."),
    Doc("p2-plan", ("hr",), "project", "u-carol", "p2", content="Project two migrates the payroll in July."),
)
KEYS = (
    Key("alice", ("hr",), user_id="u-alice"),
    Key("bob", ("finance",), user_id="u-bob"),
    Key("hr_writer", ("hr",)),  # a tenant key: no user, no public permission
    Key("carol_p1", ("hr",), user_id="u-carol", projects=("p1",)),
    Key("service", ("hr", "finance"), act_as_users=("u-a*",)),
    Key("publisher", ("hr",), permissions=("read", "write", "public")),
)
BY_ID = {doc.document_id: doc for doc in DOCS}


def bearer(key: Key | str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key.secret if isinstance(key, Key) else key}"}


def digest(server):
    snapshot = live_snapshot(server.data_dir)
    return snapshot.points, snapshot.content_digest, snapshot.vector_digest


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("write-authority") / "data"
    data_dir.mkdir(parents=True)
    keys_file = data_dir / "api_keys.json"
    indexer, _ = key_store.register_key(
        keys_file, tenant_id="acme", tags=["hr", "finance"], act_as_users=["*"],
        permissions=["read", "write", "public"],
    )  # fmt: skip
    keys = {}
    for key in KEYS:
        grant = {"user_id": key.user_id} if key.user_id else {}
        if key.act_as_users:
            grant["act_as_users"] = list(key.act_as_users)
        secret, _ = key_store.register_key(
            keys_file, tenant_id="acme", tags=list(key.tags), projects=list(key.projects) if key.projects else None,
            permissions=list(key.permissions), **grant,
        )  # fmt: skip
        keys[key.name] = Key(**{**key.__dict__, "secret": secret})
    alice_finance, _ = key_store.register_key(keys_file, tenant_id="acme", tags=["finance"], user_id="u-alice")
    env = {"SOURCEBOUND_AUTH_MODE": "api_key", "SOURCEBOUND_BOOTSTRAP_CORPUS": "false"}
    with ApiServer(data_dir, env=env) as running:
        response = running.client.post(
            "/index/run", json={"documents": [doc.body() for doc in DOCS]}, headers=bearer(indexer)
        )
        assert response.status_code == 200, response.text
        running.keys, running.alice_finance, running.indexer = keys, alice_finance, indexer
        yield running


def flags(server, key, document_id, **flag):
    body = {"tenant_id": "acme", "document_ids": [document_id], **(flag or {"verified": True})}
    return server.client.post("/flags/run", json=body, headers=bearer(key))


def invalidate(server, key, document_id):
    body = {"tenant_id": "acme", "document_ids": [document_id], "reason": "probe", "cascade_id": "c-1"}
    return server.client.post("/invalidate/run", json=body, headers=bearer(key))


def found(server, key, query) -> set[str]:
    response = server.client.post("/search/run", json={"query": query, "k": 20}, headers=bearer(key))
    assert response.status_code == 200, response.text
    return {hit["document_id"] for hit in response.json()["result"]["results"]}


REFUSED = [
    ("bob", "alice-notes"),  # another user's private document, other tags (the case)
    ("bob", "hr-policy"),  # tags not held
    ("alice", "board-minutes"),  # holds one of its tags, not both
    ("hr_writer", "alice-notes"),  # a tenant key: no user of its own
    ("hr_writer", "public-faq"),  # public without the permission
    ("carol_p1", "p2-plan"),  # its own document, in a project outside the key's
    ("service", "p1-plan"),  # owner outside the grant u-a*
]


class TestRefusedWritesReadAsMissing:
    @pytest.mark.parametrize("name, document_id", REFUSED)
    def test_invalidate_and_flags(self, server, name, document_id):
        key = server.keys[name]
        assert not key.may_write(BY_ID[document_id])
        before = digest(server)
        for call in (invalidate, flags, lambda s, k, d: flags(s, k, d, tainted=True)):
            refused, missing = call(server, key, document_id), call(server, key, MISSING)
            assert refused.status_code == missing.status_code == 200, refused.text
            assert refused.content == missing.content  # same status, body shape and counts, byte for byte
        assert digest(server) == before

    def test_the_owner_still_sees_her_document_untainted(self, server):
        for name in ("bob", "hr_writer"):
            flags(server, server.keys[name], "alice-notes", tainted=True)
        assert "alice-notes" in found(server, server.keys["alice"], "salary review notes band")

    def test_overwrites_through_index_and_upload_are_refused(self, server):
        before = digest(server)
        attempts = [
            ("bob", {"content": "Bob's text.", "tenant_id": "acme", "tags": ["finance"], "document_id": "alice-notes"}),
            # The new document is one the publisher may write; the stored one (finance) is not.
            ("publisher", {"content": "Replaced.", "tenant_id": "acme", "tags": ["hr"], "document_id": "budget"}),
            ("carol_p1", {**BY_ID["p2-plan"].body(), "project_id": "p1", "content": "Moved."}),
            ("hr_writer", {**BY_ID["public-faq"].body(), "content": "Replaced public text."}),
        ]
        for name, document in attempts:
            response = server.client.post(
                "/index/run", json={"documents": [document]}, headers=bearer(server.keys[name])
            )
            assert "document" in error_of(response, 403, "forbidden"), (name, document)
        upload = server.client.post(
            "/index/upload",
            files={"files": ("notes.txt", b"Bob's replacement of Alice's notes.")},
            data={"tenant_id": "acme", "tags": "finance", "document_id": "alice-notes"},
            headers=bearer(server.keys["bob"]),
        )
        error_of(upload, 403, "forbidden")
        assert digest(server) == before
        assert "alice-notes" in found(server, server.keys["alice"], "salary review notes band")

    def test_cross_project_and_public_writes_of_new_documents(self, server):
        carol = server.keys["carol_p1"]
        p2 = {"content": "New p2 doc.", "tenant_id": "acme", "tags": ["hr"], "document_id": "p2-new",
              "scope": "project", "project_id": "p2", "user_id": "u-carol"}  # fmt: skip
        assert "p2" in error_of(server.client.post("/index/run", json={"documents": [p2]}, headers=bearer(carol)), 403)
        p1 = {**p2, "document_id": "p1-new", "project_id": "p1"}
        assert server.client.post("/index/run", json={"documents": [p1]}, headers=bearer(carol)).status_code == 200
        public = {"content": "x", "tenant_id": "acme", "tags": ["hr"], "document_id": "public-new", "scope": "public"}
        response = server.client.post("/index/run", json={"documents": [public]}, headers=bearer(server.keys["alice"]))
        assert "public" in error_of(response, 403, "forbidden")
        assert invalidate(server, carol, "p1-new").json()["result"]["chunks_removed"] == 1

    def test_writable_documents_change(self, server):
        cases = [("alice", "alice-notes"), ("publisher", "public-faq"), ("carol_p1", "p1-plan"), ("bob", "budget")]
        for name, document_id in cases:
            key = server.keys[name]
            assert key.may_write(BY_ID[document_id])
            assert flags(server, key, document_id, verified=True).json()["result"]["chunks_updated"] >= 1
            assert flags(server, key, document_id, verified=False).json()["result"]["chunks_updated"] >= 1


def test_write_probe(server):
    """
    Hypothesis over (key, document, flag) on ``/flags/run``: a document the model says the key may write is
    changed (every chunk), any other is answered exactly as a missing id; each change is undone, so the store
    ends as it began.
    """
    before = digest(server)
    stats = {"refused": 0, "allowed": 0}

    @settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        name=st.sampled_from([key.name for key in KEYS]),
        document_id=st.sampled_from(sorted(BY_ID)),
        flag=st.sampled_from(["verified", "tainted"]),
    )
    def check(name, document_id, flag):
        key, doc = server.keys[name], BY_ID[document_id]
        note(f"{name} -> {document_id} ({flag})")
        changed = flags(server, key, document_id, **{flag: True})
        assert changed.status_code == 200, changed.text
        if key.may_write(doc):
            assert changed.json()["result"]["chunks_updated"] >= 1
            undone = flags(server, key, document_id, **{flag: False})
            assert undone.json()["result"]["chunks_updated"] == changed.json()["result"]["chunks_updated"]
            stats["allowed"] += 1
        else:
            assert changed.content == flags(server, key, MISSING, **{flag: True}).content
            stats["refused"] += 1

    # Every key reaches a document it may write and one it may not, on every run.
    for key in KEYS:
        mine = next(doc for doc in DOCS if key.may_write(doc))
        other = next(doc for doc in DOCS if not key.may_write(doc))
        for doc in (mine, other):
            check = example(name=key.name, document_id=doc.document_id, flag="tainted")(check)
    check()
    print(f"\nwrite probes: {stats}")
    assert stats["refused"] and stats["allowed"]
    assert digest(server) == before


def embed(server, key, artifact_id, **metadata):
    body = {
        "content": f"{artifact_id} canary-{artifact_id} quarterly figures.",
        "metadata": {"artifact_id": artifact_id, **metadata},
    }
    return server.client.post("/api/v1/embed", json=body, headers=bearer(key))


class TestSpecificationWritesFollowTheRule:
    """The specification routes' writes (docs/api.md, "Specification routes") obey the same rule as /index/run."""

    def test_artifact_removal_by_another_key_reads_as_missing(self, server):
        indexer, bob, alice = server.indexer, server.keys["bob"], server.keys["alice"]
        mine = {"tags": ["hr"], "scope": "user", "user_id": "u-alice"}
        assert embed(server, indexer, "art-alice", **mine).status_code == 200
        before = digest(server)
        refused = server.client.delete("/api/v1/embeddings/art-alice", headers=bearer(bob))
        missing = server.client.delete("/api/v1/embeddings/art-missing", headers=bearer(bob))
        assert refused.status_code == missing.status_code == 404
        assert refused.json()["message"].replace("art-alice", "X") == missing.json()["message"].replace(
            "art-missing", "X"
        )
        batch = {"artifact_ids": ["art-alice"], "cascade_id": "c-9", "reason": "probe"}
        refused = server.client.post("/api/v1/embeddings/batch-invalidate", json=batch, headers=bearer(bob))
        missing = server.client.post(
            "/api/v1/embeddings/batch-invalidate", json={**batch, "artifact_ids": ["art-missing"]}, headers=bearer(bob)
        )
        assert refused.status_code == missing.status_code == 200, refused.text
        assert (refused.json()["invalidated"], refused.json()["chunks_removed"]) == (0, 0)
        assert refused.json()["not_found"] == ["art-alice"] and missing.json()["not_found"] == ["art-missing"]
        assert digest(server) == before
        removed = server.client.delete("/api/v1/embeddings/art-alice", headers=bearer(alice))
        assert removed.status_code == 200 and removed.json()["removed_chunks"] >= 1, removed.text

    def test_embed_and_ingest_refuse_what_the_key_may_not_write(self, server):
        bob, alice = server.keys["bob"], server.keys["alice"]
        before = digest(server)
        # Bob's own tags, but the stored alice-notes is not his to replace.
        response = embed(server, bob, "art-bob", tags=["finance"], document_id="alice-notes")
        assert "alice-notes" in error_of(response, 403, "forbidden")
        # Tags outside the key.
        assert "hr" in error_of(embed(server, bob, "art-bob", tags=["hr"]), 403, "forbidden")
        # Public without the permission.
        assert "public" in error_of(embed(server, alice, "art-pub", tags=["hr"], scope="public"), 403, "forbidden")
        ingest = {"source_type": "document", "source_id": "notes.txt", "content": "Bob's replacement.",
                  "metadata": {"tags": ["finance"], "document_id": "alice-notes"}}  # fmt: skip
        response = server.client.post("/rag/ingest", json=ingest, headers=bearer(bob))
        assert "alice-notes" in error_of(response, 403, "forbidden")
        ingest = {**ingest, "source_id": "notes.md", "metadata": {"tags": ["finance"], "document_id": "alice-notes"}}
        response = server.client.post("/rag/ingest", json=ingest, headers=bearer(bob))  # the file (converter) path
        assert "alice-notes" in error_of(response, 403, "forbidden")
        assert digest(server) == before
        assert "alice-notes" in found(server, alice, "salary review notes band")


class TestConversationsBelongToTheKey:
    def test_another_key_of_the_same_user_finds_nothing(self, server):
        alice, other = bearer(server.keys["alice"]), bearer(server.alice_finance)
        created = server.client.post("/conversations", json={}, headers=alice).json()
        conversation_id = created["conversation_id"]
        answered = server.client.post(
            "/rag/run", json={"query": "When is the salary review due?", "conversation_id": conversation_id},
            headers=alice,
        )  # fmt: skip
        assert answered.status_code == 200, answered.text
        assert server.client.get(f"/conversations/{conversation_id}", headers=alice).status_code == 200
        mine = server.client.get(f"/conversations/{conversation_id}", headers=other)
        unknown = server.client.get("/conversations/conv-unknown", headers=other)
        assert mine.status_code == unknown.status_code == 404
        assert mine.json()["message"] == unknown.json()["message"].replace("conv-unknown", conversation_id)
        reused = server.client.post(
            "/rag/run", json={"query": "And the band?", "conversation_id": conversation_id}, headers=other
        )
        error_of(reused, 404, "not_found")
        assert server.client.delete(f"/conversations/{conversation_id}", headers=other).status_code == 404
        assert server.client.get(f"/conversations/{conversation_id}", headers=alice).status_code == 200


@pytest.fixture(scope="module")
def trusted(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("write-authority-trusted") / "data"
    with ApiServer(data_dir, env={"SOURCEBOUND_BOOTSTRAP_CORPUS": "false"}) as running:
        response = running.client.post("/index/run", json={"documents": [doc.body() for doc in DOCS]})
        assert response.status_code == 200, response.text
        yield running


class TestTrustedMode:
    """Trusted mode: the body's user_tags / user_id / project_id are the caller; the same rule applies."""

    def test_a_named_caller_changes_only_what_it_may_write(self, trusted):
        before = digest(trusted)
        bob = {"user_tags": ["finance"], "user_id": "u-bob"}
        for path, extra in (("/invalidate/run", {}), ("/flags/run", {"tainted": True})):
            refused = trusted.client.post(path, json={"tenant_id": "acme", "document_ids": ["alice-notes"], **bob,
                                                      **extra})  # fmt: skip
            missing = trusted.client.post(path, json={"tenant_id": "acme", "document_ids": [MISSING], **bob, **extra})
            assert refused.status_code == 200 and refused.content == missing.content
        overwrite = {"content": "Bob's.", "tenant_id": "acme", "tags": ["finance"], "document_id": "alice-notes"}
        error_of(trusted.client.post("/index/run", json={"documents": [overwrite], **bob}), 403, "forbidden")
        assert digest(trusted) == before

    def test_a_caller_needs_its_tags_and_a_write_naming_none_is_the_tenants(self, trusted):
        body = {"tenant_id": "acme", "document_ids": ["budget"], "verified": True, "user_id": "u-bob"}
        assert "user_tags" in error_of(trusted.client.post("/flags/run", json=body), 422, "validation_error")
        body.pop("user_id")
        assert trusted.client.post("/flags/run", json=body).json()["result"]["chunks_updated"] == 1
        body["verified"] = False
        assert trusted.client.post("/flags/run", json=body).json()["result"]["chunks_updated"] == 1
