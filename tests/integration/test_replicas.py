"""
Two app processes on one PostgreSQL (docs/operations.md "Replicas"): each with its own data dir and local vector
engine (no Qdrant server runs here), sharing only ``SOURCEBOUND_DATABASE_URL``. A key made with the CLI works on
both, its revocation reaches both within the key cache's bound, a tag owner set from the CLI is seen by a tenant
delete on a replica, both write one query log (hashed alike, none lost on SIGTERM), a conversation or glossary
made on one replica is read on the other, and one GitHub delivery sent to both is accepted once.
"""

import os
import subprocess
import sys
import threading
import time
import uuid

import pytest
import sqlalchemy as sa
import yaml
from support.api_server import REPO, ApiServer
from support.git_repos import GitRepo, github_signature, push_payload

pytestmark = [pytest.mark.integration, pytest.mark.slow]

KEY_CACHE_SECONDS = 1.0


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def world(postgres_cluster, tmp_path_factory):
    url = postgres_cluster.create_database()
    root = tmp_path_factory.mktemp("replicas")
    env = {
        "SOURCEBOUND_DATABASE_URL": url,
        "SOURCEBOUND_AUTH_MODE": "api_key",
        "SOURCEBOUND_BOOTSTRAP_CORPUS": "false",
        "SOURCEBOUND_KEY_CACHE_SECONDS": str(KEY_CACHE_SECONDS),
    }
    cli_env = {
        **{key: value for key, value in os.environ.items() if not key.startswith("SOURCEBOUND_")},
        "SOURCEBOUND_DATABASE_URL": url,
        "SOURCEBOUND_DATA_DIR": str(root / "operator"),
    }

    def cli(*argv: str) -> str:
        result = subprocess.run(
            [sys.executable, "-m", "hayhooks_app.cli", *argv], cwd=REPO, env=cli_env, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    def new_key(*argv: str) -> str:
        return cli("keys", "add", *argv).strip().splitlines()[-1]

    one, two = ApiServer(root / "one", env=env).start(), ApiServer(root / "two", env=env).start()
    try:
        yield {"url": url, "one": one, "two": two, "cli": cli, "new_key": new_key, "engine": sa.create_engine(url)}
    finally:
        for server in (one, two):
            server.stop()


def _search(server, key, query, status=200):
    response = server.client.post("/search/run", json={"query": query, "k": 3}, headers=bearer(key))
    assert response.status_code == status, response.text
    return response


class TestSharedState:
    def test_a_key_made_once_works_on_both_and_its_revocation_reaches_both(self, world):
        key = world["new_key"]("--tenant", "acme", "--user", "u-alice", "--tags", "hr")
        for server in (world["one"], world["two"]):
            _search(server, key, "leave policy")
        key_id = next(line.split("\t")[0] for line in world["cli"]("keys", "list").splitlines() if "u-alice" in line)
        world["cli"]("keys", "revoke", key_id)
        revoked_at = time.monotonic()
        refused = {}
        while len(refused) < 2 and time.monotonic() - revoked_at < 10:
            for name in ("one", "two"):
                if name not in refused:
                    response = world[name].client.post("/search/run", json={"query": "q"}, headers=bearer(key))
                    if response.status_code == 401:
                        refused[name] = time.monotonic() - revoked_at
            time.sleep(0.05)
        assert set(refused) == {"one", "two"}
        # The documented bound: the key cache's lifetime (plus one request).
        assert max(refused.values()) <= KEY_CACHE_SECONDS + 0.5, refused

    def test_a_tag_owner_set_from_the_cli_is_the_replicas(self, world):
        world["cli"]("tags", "add-user", "u-lead", "lead@globex.example")
        world["cli"]("tags", "set-owner", "--tenant", "globex", "legal", "u-lead")
        admin = world["new_key"]("--tenant", "globex", "--tags", "legal", "--permissions", "read,write,admin")
        response = world["two"].client.post("/delete_tenant/run", json={"tenant_id": "globex"}, headers=bearer(admin))
        assert response.status_code == 200, response.text
        assert response.json()["result"]["removed"]["tag_owners"] == 1
        assert response.json()["result"]["removed"]["api_keys"] == 1  # the admin key itself, on every replica
        assert "legal" not in world["cli"]("tags", "list", "--tenant", "globex")
        _search(world["one"], admin, "anything", status=401)

    def test_one_query_log_hashed_alike(self, world):
        key = world["new_key"]("--tenant", "initech", "--user", "u-bob", "--tags", "ops")
        _search(world["one"], key, "shared query log probe")
        _search(world["two"], key, "shared query log probe")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with world["engine"].connect() as connection:
                rows = connection.execute(
                    sa.text("SELECT query_hash, key_id FROM query_log WHERE tenant_id = 'initech'")
                ).all()
            if len(rows) == 2:
                break
            time.sleep(0.1)
        assert len(rows) == 2 and rows[0] == rows[1]
        for server in (world["one"], world["two"]):
            metrics = server.client.get("/metrics").text
            assert "rag_query_log_dropped_rows 0.0" in metrics

    def test_a_conversation_and_a_glossary_made_on_one_replica_are_read_on_the_other(self, world):
        admin = world["new_key"]("--tenant", "umbrella", "--tags", "hr", "--permissions", "read,write,admin")
        user = world["new_key"]("--tenant", "umbrella", "--user", "u-carol", "--tags", "hr")
        created = world["one"].client.post("/conversations", json={}, headers=bearer(user))
        assert created.status_code == 200, created.text
        conversation = created.json()["conversation_id"]
        read = world["two"].client.get(f"/conversations/{conversation}", headers=bearer(user))
        assert read.status_code == 200 and read.json()["conversation_id"] == conversation
        loaded = world["two"].client.post(
            "/glossary",
            json={"tenant_id": "umbrella", "csv": "term,aliases\nPTO,paid time off\n"},
            headers=bearer(admin),
        )
        assert loaded.status_code == 200, loaded.text
        shown = world["one"].client.get("/glossary", headers=bearer(user))
        assert shown.status_code == 200 and shown.json()["vocabulary"]["terms"][0]["term"] == "PTO"

    def test_sigterm_writes_every_queued_row(self, world):
        key = world["new_key"]("--tenant", "hooli", "--user", "u-dan", "--tags", "eng")
        for n in range(40):
            _search(world["two"], key, f"burst {n}")
        assert world["two"].stop() in (0, -15)  # uvicorn re-raises SIGTERM after its graceful shutdown
        with world["engine"].connect() as connection:
            count = connection.execute(sa.text("SELECT count(*) FROM query_log WHERE tenant_id = 'hooli'")).scalar()
        assert count == 40


WEBHOOK_SECRET = "replicas-webhook-secret"


@pytest.fixture(scope="module")
def sourced(postgres_cluster, tmp_path_factory):
    """Two replicas declaring one git source (a ``file://`` repository), on one PostgreSQL."""
    url = postgres_cluster.create_database()
    root = tmp_path_factory.mktemp("replica-sources")
    repo = GitRepo(root / "repo")
    first = repo.commit({"README.md": "# Handbook\n\nThe deploy freeze starts every Friday at noon.\n"})
    sources = root / "sources.yml"
    source = {"name": "handbook", "type": "git", "url": repo.url, "branch": "main", "include": ["**/*.md"],
              "tenant_id": "acme", "tags": ["eng"], "webhook_secret": "${HANDBOOK_WEBHOOK_SECRET}"}  # fmt: skip
    sources.write_text(yaml.safe_dump({"sources": [source]}), encoding="utf-8")
    env = {
        "SOURCEBOUND_DATABASE_URL": url,
        "SOURCEBOUND_AUTH_MODE": "api_key",
        "SOURCEBOUND_BOOTSTRAP_CORPUS": "false",
        "SOURCEBOUND_SOURCES": str(sources),
        "HANDBOOK_WEBHOOK_SECRET": WEBHOOK_SECRET,
        "SOURCEBOUND_RECONCILE_INTERVAL": "0",
    }
    cli_env = {
        **{key: value for key, value in os.environ.items() if not key.startswith("SOURCEBOUND_")},
        "SOURCEBOUND_DATABASE_URL": url,
        "SOURCEBOUND_DATA_DIR": str(root / "operator"),
    }
    admin = subprocess.run(
        [sys.executable, "-m", "hayhooks_app", "keys", "add", "--tenant", "acme", "--tags", "eng",
         "--permissions", "read,write,admin"],
        cwd=REPO, env=cli_env, capture_output=True, text=True, check=True,
    ).stdout.strip().splitlines()[-1]  # fmt: skip
    one, two = ApiServer(root / "one", env=env).start(), ApiServer(root / "two", env=env).start()
    try:
        yield {"one": one, "two": two, "repo": repo, "first": first, "admin": admin}
    finally:
        for server in (one, two):
            server.stop()


class TestSharedSources:
    def test_one_delivery_sent_to_both_replicas_is_accepted_once_and_its_job_is_seen_by_both(self, sourced):
        body = push_payload(sourced["repo"], "0" * 40, sourced["first"], {"added": ["README.md"]})
        delivery = str(uuid.uuid4())
        headers = {"X-GitHub-Event": "push", "X-GitHub-Delivery": delivery, "Content-Type": "application/json",
                   "X-Hub-Signature-256": github_signature(WEBHOOK_SECRET, body)}  # fmt: skip
        barrier, responses = threading.Barrier(2), {}

        def send(name: str) -> None:
            barrier.wait()
            responses[name] = sourced[name].client.post("/webhooks/github/handbook", content=body, headers=headers)

        threads = [threading.Thread(target=send, args=(name,)) for name in ("one", "two")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        codes = sorted(response.status_code for response in responses.values())
        assert codes == [200, 202], {name: response.text for name, response in responses.items()}
        accepted = next(response.json() for response in responses.values() if response.status_code == 202)
        duplicate = next(response.json() for response in responses.values() if response.status_code == 200)
        assert duplicate["duplicate"] is True and duplicate["delivery"] == delivery
        deadline, jobs = time.monotonic() + 120, {}
        while time.monotonic() < deadline:
            jobs = {
                name: sourced[name].client.get(f"/jobs/{accepted['job_id']}", headers=bearer(sourced["admin"])).json()
                for name in ("one", "two")
            }
            if all(job["status"] in ("succeeded", "failed") for job in jobs.values()):
                break
            time.sleep(0.2)
        assert jobs["one"] == jobs["two"] and jobs["one"]["status"] == "succeeded", jobs
