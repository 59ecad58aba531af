"""
Git sources benchmark: how soon a push is searchable, and what a reconcile of an unchanged repository costs.

The real server (``python -m hayhooks_app serve``, embedded default pipelines) syncs a real git
repository of ``--files`` Markdown files (a ``file://`` remote in a temporary folder):

1. **initial sync**: one signed ``POST /webhooks/sync`` (HS256 JWT), then ``GET /jobs/{id}`` until done;
2. **push to searchable** (``--pushes`` times): ``--changed`` files get a new sentence with a unique
   word, the commit is pushed, and a GitHub-shaped push webhook signed with ``X-Hub-Signature-256`` is
   sent; the clock runs from the webhook request until every changed file's new word is found by
   ``/search/run`` at its file's link (target: p95 < 5 s over 20 pushes for 10 files in 1,000);
3. **reconcile of the unchanged repository** (``--reconciles`` times): a full reconcile job (JWT
   ``full: true``: fetch, the head's whole tree against the recorded files) from request to finished job
   (target: < 2 s for 1,000 files).

```bash
python -m bench.sources_bench                                  # 1,000 files, 20 pushes of 10 files
python -m bench.sources_bench --files 300 --pushes 10 --json bench/results/sources.json
```
"""

import argparse
import hashlib
import hmac
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from bench.report import latency_summary
from bench.service_bench import BenchServer

SECRET = "bench-webhook-secret"
JWT_SECRET = "bench-jwt-secret-of-a-decent-length"
IDENTITY = {"tenant_id": "acme", "user_tags": ["eng"]}
TOPICS = ("deploys", "reviews", "on-call", "releases", "budgets", "hiring", "security", "backups", "docs", "testing")
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.com", "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com", "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
}  # fmt: skip


def _git(cwd: Path, *args: str) -> str:
    completed = subprocess.run(  # noqa: S603 - fixed binary, arguments as a list
        ["git", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **_GIT_ENV},  # noqa: S607
    )
    return completed.stdout.strip()


def _page(number: int, extra: str = "") -> str:
    topic = TOPICS[number % len(TOPICS)]
    body = " ".join(
        f"Team {number % 37} handles {topic} case {number * 7 + line} with checklist item {line}." for line in range(8)
    )
    return f"# Page {number}: {topic}\n\n{extra}{body}\n"  # new text first: the result's snippet shows it


def _path(number: int) -> str:
    return f"docs/area-{number % 20:02d}/page-{number:04d}.md"


def _request(url: str, body: bytes | None = None, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(
        url, data=body, headers=headers or {}, method="POST" if body is not None else "GET"
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 - loopback
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def _jwt(claims: dict[str, Any]) -> str:
    import jwt

    now = int(time.time())
    return jwt.encode({"aud": "sourcebound", "exp": now + 300, **claims}, JWT_SECRET, algorithm="HS256")


def _wait_job(url: str, job_id: str, timeout_s: float = 1800, poll_s: float = 0.05) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status, job = _request(f"{url}/jobs/{job_id}")
        if status != 200:
            raise RuntimeError(f"GET /jobs/{job_id}: {status} {job}")
        if job["status"] in ("succeeded", "failed"):
            if job["status"] == "failed":
                raise RuntimeError(f"job {job_id} failed: {job['error']}")
            return job
        time.sleep(poll_s)
    raise RuntimeError(f"job {job_id} did not finish in {timeout_s} s")


def _found(url: str, word: str, link: str) -> bool:
    body = json.dumps({"query": word, "k": 5, **IDENTITY}).encode()
    status, answer = _request(f"{url}/search/run", body, {"Content-Type": "application/json"})
    if status != 200:
        raise RuntimeError(f"/search/run: {status} {answer}")
    return any(hit["url"] == link and word in hit["snippet"] for hit in answer["result"]["results"])


def _log(message: str) -> None:
    print(message, flush=True)


def run(files: int, pushes: int, changed: int, reconciles: int, log=_log) -> dict[str, Any]:
    """Run the benchmark; returns its figures."""
    root = Path(tempfile.mkdtemp(prefix="sources-bench-"))
    remote, work = root / "remote.git", root / "work"
    _git(root, "init", "--quiet", "--bare", "--initial-branch=main", str(remote))
    _git(root, "init", "--quiet", "--initial-branch=main", str(work))
    _git(work, "remote", "add", "origin", str(remote))
    for number in range(files):
        target = work / _path(number)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_page(number), encoding="utf-8")
    _git(work, "add", "--all")
    _git(work, "commit", "--quiet", "-m", "initial")
    _git(work, "push", "--quiet", "origin", "main")
    sources = root / "sources.yml"
    sources.write_text(
        json.dumps({"sources": [{"name": "handbook", "url": remote.as_uri(), "include": ["**/*.md"],
                                 "tenant_id": "acme", "tags": ["eng"], "webhook_secret": SECRET}]}),
        encoding="utf-8",
    )  # fmt: skip
    env = {
        "SOURCEBOUND_SOURCES": str(sources),
        "SOURCEBOUND_RECONCILE_INTERVAL": "0",
        "SOURCEBOUND_BOOTSTRAP_CORPUS": "false",
        "SOURCEBOUND_WEBHOOK_JWT_SECRET": JWT_SECRET,
    }
    server = BenchServer(root / "data", root / "server.log", extra_env=env).start(timeout_s=300)
    figures: dict[str, Any] = {"files": files, "pushes": pushes, "changed_per_push": changed}
    try:
        started = time.monotonic()
        status, queued = _request(
            f"{server.url}/webhooks/sync", b"", {"Authorization": f"Bearer {_jwt({'source': 'handbook'})}"}
        )
        job = _wait_job(server.url, queued["job_id"], poll_s=0.5)
        figures["initial_sync_s"] = round(time.monotonic() - started, 2)
        figures["initial_chunks"] = job["result"]["chunks_written"]
        log(f"initial sync of {files} files: {figures['initial_sync_s']} s, {figures['initial_chunks']} chunks")

        push_ms, job_ms = [], []
        for push in range(pushes):
            before = _git(work, "rev-parse", "HEAD")
            numbers = [(push * changed + offset) * 7919 % files for offset in range(changed)]
            words = {}
            for number in numbers:
                word = f"zq{push:03d}w{number:04d}"
                words[number] = word
                (work / _path(number)).write_text(
                    _page(number, f"New in push {push}: the keyword {word}. "), encoding="utf-8"
                )
            _git(work, "commit", "--quiet", "-am", f"push {push}")
            _git(work, "push", "--quiet", "origin", "main")
            after = _git(work, "rev-parse", "HEAD")
            listed = [_path(number) for number in numbers]
            payload = json.dumps(
                {"ref": "refs/heads/main", "before": before, "after": after, "forced": False,
                 "commits": [{"id": after, "added": [], "modified": listed, "removed": []}]}
            ).encode()  # fmt: skip
            headers = {
                "Content-Type": "application/json", "X-GitHub-Event": "push", "X-GitHub-Delivery": str(uuid.uuid4()),
                "X-Hub-Signature-256": "sha256=" + hmac.new(SECRET.encode(), payload, hashlib.sha256).hexdigest(),
            }  # fmt: skip
            started = time.monotonic()
            status, queued = _request(f"{server.url}/webhooks/github/handbook", payload, headers)
            if status != 202:
                raise RuntimeError(f"webhook: {status} {queued}")
            pending = {number: f"{remote.as_uri()}/{_path(number)}" for number in numbers}
            while pending:
                # One search per round, 50 ms apart: the polling must not take the CPU the sync needs.
                number, link = next(iter(pending.items()))
                if _found(server.url, words[number], link):
                    del pending[number]
                    continue
                time.sleep(0.05)
                if time.monotonic() - started > 120:
                    raise RuntimeError(f"push {push}: {len(pending)} files not searchable after 120 s")
            push_ms.append((time.monotonic() - started) * 1000)
            job = _wait_job(server.url, queued["job_id"])
            job_ms.append(job["result"]["latency_ms"])
            log(f"push {push + 1}/{pushes}: searchable in {push_ms[-1]:.0f} ms (sync job {job_ms[-1]:.0f} ms)")
        figures["push_to_searchable"] = latency_summary(push_ms)
        figures["push_sync_job"] = latency_summary(job_ms)

        reconcile_ms, reconcile_job_ms = [], []
        for _ in range(reconciles):
            started = time.monotonic()
            token = _jwt({"source": "handbook", "full": True})
            status, queued = _request(f"{server.url}/webhooks/sync", b"", {"Authorization": f"Bearer {token}"})
            job = _wait_job(server.url, queued["job_id"])
            reconcile_ms.append((time.monotonic() - started) * 1000)
            reconcile_job_ms.append(job["result"]["latency_ms"])
            assert job["result"]["mode"] == "full" and not job["result"]["indexed"] and not job["result"]["removed"]
        figures["reconcile_unchanged"] = latency_summary(reconcile_ms)
        figures["reconcile_unchanged_job"] = latency_summary(reconcile_job_ms)
        log(f"reconcile of the unchanged repository: {figures['reconcile_unchanged']}")
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    figures["targets"] = {
        "push_p95_under_5s": figures["push_to_searchable"]["p95_ms"] < 5000,
        "reconcile_under_2s": figures["reconcile_unchanged"]["p95_ms"] < 2000,
    }
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sources_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=1000, help="files in the repository (default: 1000)")
    parser.add_argument("--pushes", type=int, default=20, help="pushes timed (default: 20)")
    parser.add_argument("--changed", type=int, default=10, help="files changed per push (default: 10)")
    parser.add_argument("--reconciles", type=int, default=5, help="reconciles timed (default: 5)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    figures = run(args.files, args.pushes, args.changed, args.reconciles)
    text = json.dumps(figures, indent=2)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0 if all(figures["targets"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
