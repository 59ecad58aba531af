"""
Host allowlist and cross-site refusal (hayhooks_app.browser_guard; docs/operations.md, "Hosts and browsers"), on a
small ASGI app and on the MCP transports, whose own DNS-rebinding protection gets the same lists.
"""

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from hayhooks_app.browser_guard import AllowedHosts, BrowserGuard, host_name
from hayhooks_app.config import ConfigError, Settings

pytestmark = pytest.mark.unit


@pytest.fixture
def client():
    app = FastAPI()

    @app.api_route("/thing", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
    async def thing() -> dict:
        return {"ok": True}

    app.add_middleware(BrowserGuard, hosts=AllowedHosts.from_setting("rag.example.com", bind_host="0.0.0.0"))
    return TestClient(app, base_url="http://localhost")


class TestAllowedHosts:
    def test_from_setting(self):
        hosts = AllowedHosts.from_setting(" rag.example.com ,10.0.0.5, [fd00::1]", bind_host="192.168.1.4")
        assert hosts.names == frozenset({"rag.example.com", "10.0.0.5", "fd00::1", "192.168.1.4"})
        assert AllowedHosts.from_setting("*").any_host and AllowedHosts.from_setting("").names == frozenset()
        assert AllowedHosts.from_setting(None, bind_host="0.0.0.0").names == frozenset()

    @pytest.mark.parametrize("bad", ["https://rag.example.com", "rag.example.com/x", "user@host", "*.example.com"])
    def test_bad_entries_are_refused_naming_the_setting(self, bad, monkeypatch, tmp_path):
        with pytest.raises(ValueError, match="SOURCEBOUND_ALLOWED_HOSTS"):
            AllowedHosts.from_setting(bad)
        monkeypatch.setenv("SOURCEBOUND_ALLOWED_HOSTS", bad)
        monkeypatch.setenv("SOURCEBOUND_DATA_DIR", str(tmp_path))
        with pytest.raises(ConfigError):
            Settings.from_env()

    @pytest.mark.parametrize(
        "host, allowed",
        [
            ("localhost:1416", True), ("127.0.0.1", True), ("127.9.9.9:80", True), ("[::1]:1416", True),
            ("app.localhost", True), ("rag.example.com", True), ("RAG.Example.com.:443", True),
            ("attacker.example", False), ("rag.example.com.attacker.example", False), ("", False),
            ("localhost@attacker.example", False), ("10.0.0.5", False),
        ],
    )  # fmt: skip
    def test_hosts(self, host, allowed):
        assert AllowedHosts.from_setting("rag.example.com").allows(host_name(host)) is allowed

    def test_address_ranges_admit_literal_addresses_only(self):
        hosts = AllowedHosts.from_setting("rag.example.com, 172.30.86.0/24, fd00::/64")
        assert [str(network) for network in hosts.networks] == ["172.30.86.0/24", "fd00::/64"]
        assert hosts.allows(host_name("172.30.86.7:1416")) and hosts.allows(host_name("[fd00::5]:1416"))
        assert not hosts.allows(host_name("172.30.87.7:1416")) and not hosts.allows(host_name("[fd01::5]"))
        # A name never matches a range (a rebinding page's Host is its own name, whatever it resolves to).
        assert not hosts.allows(host_name("172.30.86.7.nip.io")) and not hosts.allows(host_name("attacker.example"))
        assert hosts.allows_origin("http://172.30.86.7:1416") and not hosts.allows_origin("http://10.0.0.1")
        assert "172.30.86.7" not in str(hosts.mcp_security().allowed_hosts)  # exact hosts only there
        with pytest.raises(ValueError, match="SOURCEBOUND_ALLOWED_HOSTS"):
            AllowedHosts.from_setting("172.30.86.0/99")

    def test_default_settings_serve_loopback_and_the_bind_address(self, tmp_path):
        hosts = Settings(data_dir=tmp_path, host="10.1.2.3").allowed_hosts
        assert hosts.allows("10.1.2.3") and hosts.allows("localhost") and not hosts.allows("attacker.example")


class TestBrowserGuard:
    def test_foreign_host_is_refused_before_any_route(self, client):
        for method in ("GET", "POST", "DELETE"):
            response = client.request(method, "/thing", headers={"Host": "attacker.example"})
            assert response.status_code == 403, method
            body = response.json()
            assert body["error"] == "forbidden" and "SOURCEBOUND_ALLOWED_HOSTS" in body["message"]
        assert client.get("/thing", headers={"Host": "rag.example.com"}).json() == {"ok": True}

    @pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
    def test_cross_site_state_changes_are_refused(self, client, method):
        for headers in (
            {"Origin": "https://attacker.example"},
            {"Origin": "null"},
            {"Origin": "https://rag.example.com.attacker.example"},
            {"Sec-Fetch-Site": "cross-site"},
            {"Origin": "http://localhost", "Sec-Fetch-Site": "cross-site"},
        ):
            response = client.request(method, "/thing", headers=headers)
            assert response.status_code == 403, headers
            assert "SOURCEBOUND_ALLOWED_HOSTS" in response.json()["message"]

    def test_same_site_browsers_and_clients_without_origin_pass(self, client):
        assert client.post("/thing").status_code == 200  # curl, SDKs: no Origin
        for headers in (
            {"Origin": "http://localhost:1416", "Sec-Fetch-Site": "same-origin"},
            {"Origin": "https://rag.example.com"},
            {"Sec-Fetch-Site": "same-site"},
            {"Sec-Fetch-Site": "none"},
        ):
            assert client.post("/thing", headers=headers).status_code == 200, headers
        # Reads are not state changes: a cross-site GET is the browser's (CORS keeps its answer from the page).
        assert client.get("/thing", headers={"Origin": "https://attacker.example"}).status_code == 200


class TestMcpTransportSecurity:
    """The MCP transports refuse a foreign Host or Origin themselves (the mcp package's DNS-rebinding protection)."""

    @pytest.fixture
    def mcp(self):
        from hayhooks_app.mcp_server import create_mcp_app

        app = create_mcp_app({}, AllowedHosts.from_setting("rag.example.com").mcp_security())
        with TestClient(app, base_url="http://localhost") as client:
            yield client

    INITIALIZE = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

    def test_allowed_hosts_initialise(self, mcp):
        for host in ("localhost:1416", "127.0.0.1:8000", "rag.example.com"):
            response = mcp.post("/mcp/", json=self.INITIALIZE, headers={**self.HEADERS, "Host": host})
            assert response.status_code == 200, (host, response.text)

    def test_foreign_host_or_origin_is_refused(self, mcp):
        response = mcp.post("/mcp/", json=self.INITIALIZE, headers={**self.HEADERS, "Host": "attacker.example"})
        assert response.status_code == 421
        response = mcp.post(
            "/mcp/", json=self.INITIALIZE, headers={**self.HEADERS, "Origin": "http://attacker.example"}
        )
        assert response.status_code == 403
