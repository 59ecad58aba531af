"""
Prometheus and Grafana in docker-compose.yml, structure-tested (images cannot be pulled here): Prometheus scrapes
every app replica's ``/metrics``; Grafana is provisioned with that data source and the dashboard, and every metric
the dashboard queries is one the application serves, the DATS specification's metric set and the quality metrics
included.
"""

import ipaddress
import json
import re
from pathlib import Path

import pytest
import yaml

from hayhooks_app.browser_guard import AllowedHosts, host_name
from hayhooks_app.metrics import Metrics

REPO = Path(__file__).resolve().parents[3]
COMPOSE = yaml.safe_load((REPO / "docker-compose.yml").read_text(encoding="utf-8"))
SERVICES = COMPOSE["services"]
DASHBOARD = json.loads((REPO / "deploy" / "grafana" / "dashboards" / "sourcebound.json").read_text(encoding="utf-8"))
# The DATS specification's metrics (Observability): each on the dashboard under our name for it.
DATS_METRICS = (
    "rag_query_latency_seconds", "rag_query_results_count", "rag_query_tokens_used", "rag_embedding_latency_seconds",
    "rag_embedding_chunks_created_total", "rag_embedding_queue_jobs_pending", "rag_invalidation_count_total",
    "rag_invalidation_chunks_removed_total", "rag_index_size_total", "process_resident_memory_bytes",
)  # fmt: skip
QUALITY_METRICS = (
    "rag_quality_answers_total", "rag_quality_searches_total", "rag_stale_documents", "rag_feedback_total",
    "rag_routed_events_total",
)  # fmt: skip


def _mounts(service: str) -> dict[str, str]:
    """Container path -> host path of a service's bind mounts."""
    mounts = {}
    for volume in SERVICES[service]["volumes"]:
        source, target, *_mode = volume.split(":")
        mounts[target] = source
    return mounts


def _expressions() -> list[str]:
    return [target["expr"] for panel in DASHBOARD["panels"] for target in panel.get("targets", [])]


def _served_metric_names() -> set[str]:
    """Every series name the application's registry serves (the embedding-queue gauges are added at start-up)."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
    names = {
        family.name + suffix for family in Metrics().registry.collect() for suffix in suffixes.get(family.type, ("",))
    }
    return names | {f"rag_embedding_queue_{kind}_pending" for kind in ("jobs", "files", "chunks")}


@pytest.mark.unit
class TestPrometheus:
    def test_scrapes_every_replica_of_the_app(self):
        prometheus = SERVICES["prometheus"]
        assert prometheus["image"].startswith("prom/prometheus:")
        host_config = _mounts("prometheus")["/etc/prometheus/prometheus.yml"]
        config = yaml.safe_load((REPO / host_config).read_text(encoding="utf-8"))
        (job,) = config["scrape_configs"]
        assert job["metrics_path"] == "/metrics"
        (discovery,) = job["dns_sd_configs"]
        # One A record per replica of the compose service: `--scale app=N` is scraped N times.
        assert discovery == {"names": ["app"], "type": "A", "port": 1416, "refresh_interval": "15s"}
        assert SERVICES["app"]["expose"] == [str(discovery["port"])]
        assert prometheus["ports"] == ["127.0.0.1:9090:9090"]
        assert "prometheus_data" in COMPOSE["volumes"] and prometheus["healthcheck"]["retries"] >= 3

    def test_the_app_allows_the_scrapes_host(self):
        # A scrape's Host is the replica's address: the compose network's fixed range must be an allowed host.
        subnet_setting = COMPOSE["networks"]["default"]["ipam"]["config"][0]["subnet"]
        subnet = subnet_setting.removeprefix("${SOURCEBOUND_COMPOSE_SUBNET:-").removesuffix("}")
        setting = SERVICES["app"]["environment"]["SOURCEBOUND_ALLOWED_HOSTS"]
        value = setting.replace("${SOURCEBOUND_ALLOWED_HOSTS:-}", "").replace(subnet_setting, subnet)
        hosts = AllowedHosts.from_setting(value, bind_host=SERVICES["app"]["environment"]["HAYHOOKS_HOST"])
        replica = str(next(ipaddress.ip_network(subnet).hosts()) + 5)
        assert hosts.allows(host_name(f"{replica}:1416"))
        assert not hosts.allows(host_name("attacker.example")) and not hosts.any_host


@pytest.mark.unit
class TestGrafana:
    def test_is_provisioned_local_and_quiet(self):
        grafana = SERVICES["grafana"]
        env = grafana["environment"]
        assert grafana["image"].startswith("grafana/grafana:") and grafana["ports"] == ["127.0.0.1:3000:3000"]
        assert env["GF_AUTH_ANONYMOUS_ENABLED"] == "false" and env["GF_ANALYTICS_REPORTING_ENABLED"] == "false"
        assert (
            env["GF_ANALYTICS_CHECK_FOR_UPDATES"] == "false"
            and "GRAFANA_ADMIN_PASSWORD" in env["GF_SECURITY_ADMIN_PASSWORD"]
        )
        assert grafana["depends_on"]["prometheus"]["condition"] == "service_healthy"
        mounts = _mounts("grafana")
        provisioning = REPO / mounts["/etc/grafana/provisioning"]
        datasource = yaml.safe_load((provisioning / "datasources" / "prometheus.yml").read_text(encoding="utf-8"))
        (source,) = datasource["datasources"]
        assert source["type"] == "prometheus" and source["url"] == "http://prometheus:9090"
        provider = yaml.safe_load((provisioning / "dashboards" / "sourcebound.yml").read_text(encoding="utf-8"))
        dashboards_dir = provider["providers"][0]["options"]["path"]
        assert mounts[dashboards_dir] == "./deploy/grafana/dashboards"
        assert env["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"] == f"{dashboards_dir}/sourcebound.json"
        used = {target["datasource"]["uid"] for panel in DASHBOARD["panels"] for target in panel.get("targets", [])} | {
            panel["datasource"]["uid"] for panel in DASHBOARD["panels"] if "datasource" in panel
        }
        assert used == {source["uid"]}

    def test_dashboard_panels_are_well_formed(self):
        ids = [panel["id"] for panel in DASHBOARD["panels"]]
        assert len(ids) == len(set(ids)) and DASHBOARD["uid"] == "sourcebound-overview"
        for panel in DASHBOARD["panels"]:
            if panel["type"] != "row":
                assert panel["targets"] and panel["title"] and panel["description"], panel["title"]
                assert all(target["expr"] for target in panel["targets"])
        # No two panels overlap on the grid.
        cells = set()
        for panel in DASHBOARD["panels"]:
            grid = panel["gridPos"]
            for x in range(grid["x"], grid["x"] + grid["w"]):
                for y in range(grid["y"], grid["y"] + grid["h"]):
                    assert (x, y) not in cells, panel["title"]
                    cells.add((x, y))

    def test_every_queried_metric_is_served_and_the_dats_set_is_shown(self):
        served = _served_metric_names()
        queried = set()
        for expression in _expressions():
            queried |= set(re.findall(r"\b((?:rag|process)_[a-z_]+)", expression))
        unknown = sorted(queried - served)
        assert unknown == []
        for name in (*DATS_METRICS, *QUALITY_METRICS):
            assert any(name in expression for expression in _expressions()), name
        # The quality panels follow the dashboard's tenant variable.
        assert DASHBOARD["templating"]["list"][0]["name"] == "tenant"
        assert all('tenant=~"$tenant"' in e for e in _expressions() if "rag_quality_answers_total" in e)
