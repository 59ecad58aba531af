"""How the CLI finds a running server: the server file, its rights, stale files and the credential check."""

import argparse
import json
import os
import subprocess
import sys

import pytest

from hayhooks_app.cli.server_link import LocalAdmin, discover, forward_to_server
from tests.support.api_server import free_port

pytestmark = pytest.mark.unit


class TestServerFile:
    def test_publish_writes_an_owner_only_file_that_discover_reads(self, tmp_path):
        admin = LocalAdmin(tmp_path, "0.0.0.0", 8123)  # noqa: S104 - a wildcard bind is reached on loopback
        admin.publish()
        path = tmp_path / "server.json"
        assert path.stat().st_mode & 0o777 == 0o600
        info = discover(tmp_path)
        assert info["url"] == "http://127.0.0.1:8123" and info["token"] == admin.token and len(admin.token) >= 40
        admin.withdraw()
        assert not path.exists() and discover(tmp_path) is None

    def test_withdraw_leaves_another_servers_file(self, tmp_path):
        first, second = LocalAdmin(tmp_path, "127.0.0.1", 1), LocalAdmin(tmp_path, "127.0.0.1", 2)
        first.publish()
        second.publish()
        first.withdraw()
        assert discover(tmp_path)["token"] == second.token

    def test_a_file_left_by_a_killed_server_is_ignored(self, tmp_path):
        finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
        pid = int(finished.stdout)
        (tmp_path / "server.json").write_text(json.dumps({"url": "http://127.0.0.1:9", "pid": pid, "token": "t"}))
        assert discover(tmp_path) is None

    def test_the_credential_is_compared_exactly(self, tmp_path):
        admin = LocalAdmin(tmp_path, "127.0.0.1", 1)
        assert admin.allows(admin.token)
        for presented in (None, "", admin.token[:-1], admin.token + "x", "Bearer " + admin.token):
            assert not admin.allows(presented)


class TestForwarding:
    def test_no_server_file_runs_offline(self, tmp_path):
        args = argparse.Namespace(data_dir=str(tmp_path))
        assert forward_to_server(args, ["stats"]) is None

    def test_a_server_that_does_not_answer_runs_offline(self, tmp_path):
        # A live pid (this process) but nothing listening on the port: the offline path (and its shard lock) decides.
        info = {"url": f"http://127.0.0.1:{free_port()}", "pid": os.getpid(), "token": "t"}
        (tmp_path / "server.json").write_text(json.dumps(info))
        assert forward_to_server(argparse.Namespace(data_dir=str(tmp_path)), ["stats"]) is None

    def test_a_port_reused_by_another_server_runs_offline(self, tmp_path):
        # Another HTTP server on the file's port answers 404/403 to the route: not ours, so run offline.
        import http.server
        import threading

        server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            info = {"url": f"http://127.0.0.1:{server.server_port}", "pid": os.getpid(), "token": "t"}
            (tmp_path / "server.json").write_text(json.dumps(info))
            assert forward_to_server(argparse.Namespace(data_dir=str(tmp_path)), ["stats"]) is None
        finally:
            server.shutdown()
