import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hayhooks_app.cli import build_parser
from hayhooks_app.events.runner import run_consumer, start_beside_server
from hayhooks_app.events.settings import EventSettings

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[4]


class TestRunner:
    def test_off_unless_configured(self):
        assert start_beside_server(container=None, settings=EventSettings(in_server=False)) is None

    def test_sourcebound_events_command_is_registered(self):
        args = build_parser().parse_args(["events", "--data-dir", "/tmp/x"])
        assert args.func is run_consumer and args.data_dir == "/tmp/x"

    def test_refuses_to_start_without_tenants(self, tmp_path):
        env = {"PATH": "/usr/bin:/bin", "SOURCEBOUND_DATA_DIR": str(tmp_path), "HF_HUB_OFFLINE": "1"}
        done = subprocess.run(
            [sys.executable, "-m", "hayhooks_app", "events"], cwd=REPO, env=env, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        assert done.returncode == 2 and "SOURCEBOUND_EVENTS_TENANTS" in done.stderr


class TestComposeEvents:
    def test_broker_and_consumer_services(self):
        services = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
        assert services["rabbitmq"]["healthcheck"]["test"]
        consumer = services["events"]
        assert consumer["command"] == ["python", "-m", "hayhooks_app", "events"]
        assert consumer["depends_on"]["rabbitmq"]["condition"] == "service_healthy"
        env = consumer["environment"]
        assert env["SOURCEBOUND_EVENTS_TENANTS"] and "@rabbitmq:5672" in env["SOURCEBOUND_EVENTS_URL"]
        assert env["QDRANT_URL"] == services["app"]["environment"]["QDRANT_URL"]  # one index for both
