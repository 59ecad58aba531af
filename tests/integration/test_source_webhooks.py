"""
Git sources over HTTP: GitHub-shaped push webhooks signed in the test, bad and missing signatures,
replays, branch and path filters, a force-push, the signed-JWT trigger (HS256 and RS256), job status
for admins only, ``embedding_queue`` in /health and /metrics, links back in search and chat, and the
reconcile interval applying a push nobody announced. Real git repositories (``file://`` remotes), the
real server, embedder and store; no network.
"""

import time
import uuid

import jwt
import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from support.api_server import ApiServer, error_of
from support.git_repos import GitRepo, github_signature, push_payload

from components.stores import key_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SECRET = "handbook-webhook-secret"
JWT_SECRET = "a-shared-jwt-secret-of-enough-length"
AUDIENCE = "sourcebound-test"
README = (
    "# Handbook\n\nThe deploy freeze starts every Friday at noon.\n\n## Reviews\n\nEvery change needs two reviewers.\n"
)


def _rsa_pair():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return private, public


def _write_sources(path, repo, **extra):
    source = {
        "name": "handbook", "type": "git", "url": repo.url, "branch": "main",
        "include": ["**/*.md", "**/*.yaml"], "exclude": ["drafts/**"],
        "tenant_id": "acme", "tags": ["eng"], "webhook_secret": "${HANDBOOK_WEBHOOK_SECRET}", **extra,
    }  # fmt: skip
    path.write_text(yaml.safe_dump({"sources": [source]}), encoding="utf-8")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("sources")
    repo = GitRepo(root / "repo")
    first = repo.commit({"README.md": README, "specs/billing.yaml": "service: billing\nowner: payments-team\n"})
    sources = root / "sources.yml"
    _write_sources(sources, repo)
    private, public = _rsa_pair()
    public_file = root / "jwt.pub"
    public_file.write_bytes(public)
    data_dir = root / "data"
    keys_file = data_dir / "api_keys.json"
    data_dir.mkdir()
    keys = {
        "reader": key_store.register_key(keys_file, tenant_id="acme", tags=["eng"])[0],
        "writer": key_store.register_key(keys_file, tenant_id="acme", tags=["eng"], permissions=["read", "write"])[0],
        "admin": key_store.register_key(keys_file, tenant_id="acme", tags=["eng"], permissions=["admin"])[0],
        "globex_admin": key_store.register_key(keys_file, tenant_id="globex", tags=["ops"], permissions=["admin"])[0],
    }
    env = {
        "SOURCEBOUND_AUTH_MODE": "api_key",
        "SOURCEBOUND_BOOTSTRAP_CORPUS": "false",
        "SOURCEBOUND_SOURCES": str(sources),
        "HANDBOOK_WEBHOOK_SECRET": SECRET,
        "SOURCEBOUND_RECONCILE_INTERVAL": "0",
        "SOURCEBOUND_WEBHOOK_MAX_BYTES": "65536",
        "SOURCEBOUND_WEBHOOK_JWT_SECRET": JWT_SECRET,
        "SOURCEBOUND_WEBHOOK_JWT_PUBLIC_KEY": str(public_file),
        "SOURCEBOUND_WEBHOOK_JWT_AUDIENCE": AUDIENCE,
    }
    with ApiServer(data_dir, env=env) as server:
        yield {"server": server, "repo": repo, "first": first, "keys": keys, "private": private, "public": public}


def bearer(key):
    return {"Authorization": f"Bearer {key}"}


def deliver(server, body, secret=SECRET, event="push", delivery=None, source="handbook", signature=None):
    headers = {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "Content-Type": "application/json",
    }
    if signature is not False:
        headers["X-Hub-Signature-256"] = signature or github_signature(secret, body)
    return server.client.post(f"/webhooks/github/{source}", content=body, headers=headers)


def wait_for_job(world, job_id, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        response = world["server"].client.get(f"/jobs/{job_id}", headers=bearer(world["keys"]["admin"]))
        assert response.status_code == 200, response.text
        job = response.json()
        if job["status"] in ("succeeded", "failed"):
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not finish")


def search(world, query, k=5):
    response = world["server"].client.post(
        "/search/run", json={"query": query, "k": k}, headers=bearer(world["keys"]["reader"])
    )
    assert response.status_code == 200, response.text
    return response.json()["result"]["results"]


def token(claims, key=JWT_SECRET, algorithm="HS256"):
    now = int(time.time())
    return jwt.encode({"aud": AUDIENCE, "exp": now + 300, "iat": now, **claims}, key, algorithm=algorithm)


class TestGithubWebhook:
    def test_bad_missing_signatures_and_unknown_sources_index_nothing(self, world):
        server, repo = world["server"], world["repo"]
        body = push_payload(repo, "0" * 40, world["first"], {"added": ["README.md"]})
        error_of(deliver(server, body, secret="wrong-secret"), 401, "unauthorized")
        error_of(deliver(server, body, signature=False), 401, "unauthorized")
        error_of(deliver(server, body, signature="sha1=" + "0" * 40), 401, "unauthorized")
        tampered = body.replace(b'"forced": false', b'"forced": true')
        error_of(deliver(server, tampered, signature=github_signature(SECRET, body)), 401, "unauthorized")
        # An unauthenticated 404 names no declared source (docs/api.md, "Webhooks").
        assert "handbook" not in error_of(deliver(server, body, source="nope"), 404, "not_found")
        error_of(deliver(server, b"{" + b" " * 70_000 + b"}"), 413, "payload_too_large")
        assert search(world, "deploy freeze Friday") == []
        assert server.client.get("/health").json()["embedding_queue"]["jobs_pending"] == 0

    def test_ping_other_branches_and_unindexed_paths_queue_nothing(self, world):
        server, repo = world["server"], world["repo"]
        ping = deliver(server, b'{"zen": "Keep it logically awesome.", "hook_id": 1}', event="ping")
        assert ping.status_code == 200 and ping.json()["event"] == "ping"
        other = push_payload(repo, "0" * 40, world["first"], {"added": ["README.md"]}, ref="refs/heads/dev")
        assert "ignored" in deliver(server, other).json()
        drafts = push_payload(repo, "0" * 40, world["first"], {"added": ["drafts/x.md", "logo.png"]})
        response = deliver(server, drafts)
        assert response.status_code == 200 and "ignored" in response.json()

    def test_push_is_indexed_in_the_background_with_links_back(self, world):
        server, repo = world["server"], world["repo"]
        body = push_payload(repo, "0" * 40, world["first"], {"added": ["README.md", "specs/billing.yaml"]})
        delivery = str(uuid.uuid4())
        started = time.monotonic()
        response = deliver(server, body, delivery=delivery)
        assert response.status_code == 202, response.text
        assert time.monotonic() - started < 2  # answered at once, synced in the background
        job = wait_for_job(world, response.json()["job_id"])
        assert job["status"] == "succeeded", job
        assert job["result"]["mode"] == "full" and job["result"]["to_commit"] == world["first"]
        assert sorted(job["result"]["indexed"]) == ["README.md", "specs/billing.yaml"]
        assert job["tenant_id"] == "acme" and job["trigger"] == "github"

        hits = search(world, "When does the deploy freeze start?")
        assert hits and hits[0]["title"] == "Handbook"
        assert hits[0]["url"] == f"{repo.url}/README.md" and hits[0]["tags"] == ["eng"]
        spec = search(world, "which team owns the billing service")
        assert any(hit["url"] == f"{repo.url}/specs/billing.yaml" for hit in spec)

        # The same delivery again: a no-op answering the first job's id.
        replay = deliver(server, body, delivery=delivery)
        assert replay.status_code == 200 and replay.json() == {
            "duplicate": True, "delivery": delivery, "job_id": job["job_id"], "source": "handbook",
        }  # fmt: skip

        # The OpenAI-compatible reply lists its sources with their links.
        chat = server.client.post(
            "/v1/chat/completions",
            json={"model": "rag", "messages": [{"role": "user", "content": "When does the deploy freeze start?"}]},
            headers=bearer(world["keys"]["reader"]),
        )
        assert chat.status_code == 200, chat.text
        sources = chat.json()["sourcebound"]["sources"]
        assert any(source["url"] == f"{repo.url}/README.md" and source["title"] == "Handbook" for source in sources)

    def test_next_push_modifies_and_deletes_then_a_force_push_reconciles(self, world):
        server, repo = world["server"], world["repo"]
        before = repo.head()
        after = repo.commit(
            {"README.md": README.replace("Friday at noon", "Thursday at five"), "specs/billing.yaml": None}
        )
        body = push_payload(repo, before, after, {"modified": ["README.md"], "removed": ["specs/billing.yaml"]})
        job = wait_for_job(world, deliver(server, body).json()["job_id"])
        assert job["result"]["mode"] == "incremental", job["result"]
        assert job["result"]["indexed"] == ["README.md"] and job["result"]["removed"] == ["specs/billing.yaml"]
        hits = search(world, "When does the deploy freeze start?")
        assert "Thursday at five" in hits[0]["snippet"] and not any("billing" in (hit["url"] or "") for hit in hits)
        # The removed spec is gone; what still mentions billing (if anything reaches the minimum similarity) is README.
        assert all(hit["url"].endswith("README.md") for hit in search(world, "billing service owner payments-team"))

        rewritten = repo.rewrite_history(
            world["first"], {"runbook.md": "# Runbook\n\nRestart the queue worker first.\n"}
        )
        forced = push_payload(repo, after, rewritten, {"added": ["runbook.md"]}, forced=True)
        job = wait_for_job(world, deliver(server, forced).json()["job_id"])
        assert job["result"]["mode"] == "full" and job["result"]["to_commit"] == rewritten
        assert job["result"]["indexed"] == ["README.md", "runbook.md", "specs/billing.yaml"]
        assert search(world, "restart the queue worker")[0]["url"] == f"{repo.url}/runbook.md"


class TestJwtWebhook:
    def test_signed_tokens_sync_and_bad_ones_are_401(self, world):
        server = world["server"]
        sync = "/webhooks/sync"
        ok = server.client.post(sync, headers=bearer(token({"source": "handbook", "jti": "t-1"})))
        assert ok.status_code == 202, ok.text
        assert wait_for_job(world, ok.json()["job_id"])["status"] == "succeeded"
        replay = server.client.post(sync, headers=bearer(token({"source": "handbook", "jti": "t-1"})))
        assert replay.status_code == 200 and replay.json()["duplicate"] is True

        rs256 = token({"source": "handbook", "full": True}, world["private"], "RS256")
        job = wait_for_job(world, server.client.post(sync, headers=bearer(rs256)).json()["job_id"])
        assert job["status"] == "succeeded" and job["result"]["mode"] == "full" and job["trigger"] == "jwt"

        now = int(time.time())
        other_private, _ = _rsa_pair()
        refused = {
            "expired": token({"source": "handbook", "exp": now - 120}),
            "not yet valid": token({"source": "handbook", "nbf": now + 600}),
            "wrong audience": token({"source": "handbook", "aud": "someone-else"}),
            "no expiry": jwt.encode({"source": "handbook", "aud": AUDIENCE}, JWT_SECRET, algorithm="HS256"),
            "wrong secret": token({"source": "handbook"}, "another-secret-of-enough-length-xx"),
            "other RSA key": token({"source": "handbook"}, other_private, "RS256"),
            "alg none": jwt.encode({"source": "handbook", "aud": AUDIENCE, "exp": now + 60}, None, algorithm="none"),
        }
        for what, bad in refused.items():
            response = server.client.post(sync, headers=bearer(bad))
            assert response.status_code == 401, (what, response.text)
        error_of(server.client.post(sync), 401, "unauthorized")
        unknown = error_of(server.client.post(sync, headers=bearer(token({"source": "nope"}))), 404, "not_found")
        assert "handbook" not in unknown


class TestJobsAndQueue:
    def test_job_status_is_for_the_tenants_admins(self, world):
        server = world["server"]
        response = server.client.post("/webhooks/sync", headers=bearer(token({"source": "handbook"})))
        job_id = response.json()["job_id"]
        wait_for_job(world, job_id)
        error_of(server.client.get(f"/jobs/{job_id}"), 401, "unauthorized")
        error_of(server.client.get(f"/jobs/{job_id}", headers=bearer(world["keys"]["writer"])), 403, "forbidden")
        error_of(server.client.get(f"/jobs/{job_id}", headers=bearer(world["keys"]["globex_admin"])), 404)
        error_of(server.client.get("/jobs/job-unknown", headers=bearer(world["keys"]["admin"])), 404)

    def test_yaml_upload_is_accepted(self, world):
        server = world["server"]
        spec = b"service: payroll\nowner: people-team\nschedule: monthly on the 25th\n"
        response = server.client.post(
            "/index/upload",
            files=[("files", ("payroll.project-spec.yaml", spec, "application/yaml"))],
            data={"tenant_id": "acme", "tags": "eng"},
            headers=bearer(world["keys"]["writer"]),
        )
        assert response.status_code == 200, response.text
        assert [entry["chunks"] for entry in response.json()["result"]["documents"]] == [1]
        hit = search(world, "when is payroll run")[0]
        assert hit["title"] == "payroll.project-spec.yaml" and hit["url"] is None  # an upload has no link

    def test_embedding_queue_in_health_and_metrics(self, world):
        server = world["server"]
        queue = server.client.get("/health").json()["embedding_queue"]
        assert set(queue) == {"jobs_pending", "files_pending", "chunks_pending"}
        metrics = server.client.get("/metrics").text
        for name in ("jobs_pending", "files_pending", "chunks_pending"):
            assert f"rag_embedding_queue_{name} " in metrics


def test_reconcile_interval_applies_unannounced_pushes(tmp_path):
    repo = GitRepo(tmp_path / "repo")
    repo.commit(
        {"a.md": "# Alpha\n\nThe alpha service rotates its keys monthly.\n", "b.md": "# Beta\n\nBeta is retired.\n"}
    )
    sources = tmp_path / "sources.yml"
    _write_sources(sources, repo)
    env = {
        "SOURCEBOUND_BOOTSTRAP_CORPUS": "false",
        "SOURCEBOUND_SOURCES": str(sources),
        "HANDBOOK_WEBHOOK_SECRET": SECRET,
        "SOURCEBOUND_RECONCILE_INTERVAL": "1",
    }
    identity = {"tenant_id": "acme", "user_tags": ["eng"]}

    def urls(client, query):
        response = client.post("/search/run", json={"query": query, "k": 5, **identity})
        assert response.status_code == 200, response.text
        return {hit["url"] for hit in response.json()["result"]["results"]}

    def eventually(check, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return
            time.sleep(0.3)
        raise AssertionError("the reconcile did not catch up")

    with ApiServer(tmp_path / "data", env=env) as server:
        eventually(lambda: urls(server.client, "alpha keys") >= {f"{repo.url}/a.md", f"{repo.url}/b.md"})
        repo.commit({"b.md": None, "c.md": "# Gamma\n\nGamma pages the on-call engineer.\n"})  # no webhook
        eventually(lambda: f"{repo.url}/c.md" in urls(server.client, "who does gamma page"))
        assert f"{repo.url}/b.md" not in urls(server.client, "beta retired")
