"""
Operating a served data directory: the CLI through the running server, online backup, restore refusals and a
verified restore, the admin route's credential, and a full disk during an index request. Real server process,
real CLI processes, real Qdrant Edge and SQLite files; the data directory lives on a small tmpfs.
"""

import json
import os
import subprocess
import sys
import threading

import httpx
import pytest

from tests.support.api_server import REPO, ApiServer
from tests.support.small_disk import fill, small_filesystem

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ACME = {"tenant_id": "acme", "user_tags": ["hr"]}
QUERIES = ("vacation days", "laptop replacement", "expense receipts")
ENV = {"SOURCEBOUND_BOOTSTRAP_CORPUS": "false"}


def cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith("SOURCEBOUND_")}
    env.update(PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env["SOURCEBOUND_BACKUP_KEY_FILE"] = os.environ["SOURCEBOUND_BACKUP_KEY_FILE"]  # the tests' key (conftest.py)
    return subprocess.run(
        [sys.executable, "-m", "hayhooks_app.cli", *args],
        cwd=cwd or REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def top5(client: httpx.Client) -> dict:
    found = {}
    for query in QUERIES:
        for mode in ("vector", "keyword"):
            body = {"query": query, "search_mode": mode, "k": 5, **ACME}
            response = client.post("/search/run", json=body)
            assert response.status_code == 200, response.text
            found[f"{mode}:{query}"] = [hit["source_id"] for hit in response.json()["result"]["results"]]
    return found


@pytest.fixture(scope="module")
def disk(tmp_path_factory):
    with small_filesystem(tmp_path_factory.mktemp("ops") / "disk", "512m") as mounted:
        yield mounted


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sources")
    (folder / "handbook.md").write_text(
        "# Vacation\n\nEvery employee has 25 vacation days a year.\n\n# Laptops\n\nLaptop replacement every 3 years.\n"
    )
    (folder / "expenses.md").write_text("# Expenses\n\nKeep the receipts of every expense for ten years.\n")
    later = tmp_path_factory.mktemp("later")
    (later / "after.md").write_text("# Parking\n\nThe parking garage opens at seven.\n")
    return folder, later


@pytest.mark.usefixtures("disk")
class TestOperations:
    def test_cli_backup_and_restore_around_a_running_server(self, disk, sources, tmp_path):
        data_dir = disk / "data"
        folder, later = sources
        with ApiServer(data_dir, env=ENV) as server:
            server_file = json.loads((data_dir / "server.json").read_text())
            assert (data_dir / "server.json").stat().st_mode & 0o777 == 0o600
            assert server_file["url"] == server.url

            # index through the server: relative paths are the caller's, the shard is not opened twice
            indexed = cli("index", folder.name, "--tenant", "acme", "--tags", "hr", "--data-dir", str(data_dir),
                          cwd=folder.parent)  # fmt: skip
            assert indexed.returncode == 0, indexed.stderr
            assert "2 indexed, 0 unchanged, 0 failed" in indexed.stdout
            assert "held by another process" not in indexed.stderr
            stats_online = cli("stats", "--data-dir", str(data_dir))
            assert stats_online.returncode == 0 and "acme: 2 documents" in stats_online.stdout
            before = top5(server.client)
            assert before["keyword:vacation days"]

            # online backup while queries keep being answered
            answered, failures, stop = [], [], threading.Event()

            def query_loop():
                with httpx.Client(base_url=server.url, timeout=30) as client:
                    while not stop.is_set():
                        response = client.post("/search/run", json={"query": "vacation", "k": 3, **ACME})
                        (answered if response.status_code == 200 else failures).append(response.status_code)

            thread = threading.Thread(target=query_loop)
            thread.start()
            try:
                backup = cli("backup", str(tmp_path / "backup"), "--data-dir", str(data_dir))
            finally:
                stop.set()
                thread.join()
            assert backup.returncode == 0, backup.stderr
            assert "writes paused" in backup.stdout and answered and not failures
            manifest = json.loads((tmp_path / "backup" / "manifest.json").read_text())
            assert manifest["counts"]["tenants"]["acme"]["documents"] == 2
            assert "server.json" not in manifest["files"] and "records.sqlite" in manifest["files"]

            # restore refuses while the server holds the target, and leaves it alone
            refused = cli("restore", str(tmp_path / "backup"), "--replace", "--data-dir", str(data_dir))
            assert refused.returncode == 1 and f"process {server.process.pid}" in refused.stderr
            assert "stop it before restoring" in refused.stderr

            # the admin route: only the server file's credential opens it
            for headers in ({}, {"X-Sourcebound-Admin": "guess"}, {"Authorization": "Bearer anything"}):
                response = server.client.post("/admin/cli", json={"argv": ["stats"], "cwd": "/"}, headers=headers)
                assert response.status_code == 403

            # a full disk fails the index request cleanly; the index stays as it was
            filler = fill(disk, leave_bytes=40 << 20)
            try:
                response = server.client.post(
                    "/index/run",
                    json={
                        "documents": [
                            {
                                "content": "Overflow. " * 50,
                                "document_id": "overflow",
                                "tenant_id": "acme",
                                "tags": ["hr"],
                            }
                        ]
                    },  # fmt: skip
                )
                assert response.status_code == 507, response.text
                assert response.json()["error"] == "insufficient_storage"
                assert "MiB are free" in response.json()["message"]
            finally:
                filler.unlink()
            assert top5(server.client) == before
            # indexed after the backup: must not come back with the restore
            assert (
                cli("index", str(later), "--tenant", "acme", "--tags", "hr", "--data-dir", str(data_dir)).returncode
                == 0
            )
        assert not (data_dir / "server.json").exists()

        # offline: the same output as through the server
        stats_offline = cli("stats", "--data-dir", str(data_dir))
        assert "acme: 3 documents" in stats_offline.stdout

        restored = cli("restore", str(tmp_path / "backup"), "--replace", "--data-dir", str(data_dir))
        assert restored.returncode == 0, restored.stderr
        assert "2 documents of 1 tenant(s)" in restored.stdout and "replaced" in restored.stdout
        assert cli("stats", "--data-dir", str(data_dir)).stdout == stats_online.stdout
        with ApiServer(data_dir, env=ENV) as server:
            assert top5(server.client) == before
            gone = server.client.post("/search/run", json={"query": "parking garage", "search_mode": "keyword", **ACME})
            assert all("after" not in hit["document_id"] for hit in gone.json()["result"]["results"])
