"""
Browsers cannot drive the server, and no secret in a URL comes out of it, over HTTP against a live server in
trusted mode (docs/operations.md, "Hosts and browsers"; docs/contract.md, "Sources" and "Errors").

The server answers with the Ollama backend against the local Ollama double, configured with a password in
``OLLAMA_BASE_URL``; a document is indexed with a deploy token in its ``source_uri``. Neither secret may appear in
any response (results, citations, sources, ``/health``, the 503 when Ollama is down), in the server log or in
any file of the data directory. A foreign ``Host`` (a DNS-rebinding page) reaches no route, ``/mcp`` included;
a cross-site multipart upload is refused and the index is unchanged.
"""

import pytest
from support.api_server import ApiServer, error_of
from support.ollama_double import OllamaDouble, ollama_server_env
from support.reliability_support import live_snapshot

pytestmark = [pytest.mark.integration, pytest.mark.ollama, pytest.mark.slow]

PASSWORD = "Ollama-Pa55word-7f3c"
TOKEN = "ghp-deploy-token-91d2"
IDENTITY = {"tenant_id": "acme", "user_tags": ["it"]}
VPN = "The VPN client must be updated to version 5 before March; the service desk pushes it automatically."
SOURCE = f"https://deploy:{TOKEN}@git.internal.example/it/handbook/raw/main/vpn.md"


@pytest.fixture(scope="module")
def ollama():
    with OllamaDouble(models=["llama3.2:latest"]) as double:
        yield double


@pytest.fixture(scope="module")
def server(tmp_path_factory, ollama):
    url = ollama.url.replace("http://", f"http://ollama-admin:{PASSWORD}@")
    with ApiServer(tmp_path_factory.mktemp("hosts") / "data", env=ollama_server_env(url)) as running:
        document = {"content": VPN, "source_uri": SOURCE, "document_name": "VPN", "document_id": "vpn", **{
            "tenant_id": "acme", "tags": ["it"]}}  # fmt: skip
        response = running.client.post("/index/run", json={"documents": [document]})
        assert response.status_code == 200, response.text
        yield running


def assert_no_secret(text: str) -> None:
    assert PASSWORD not in text and TOKEN not in text and "ollama-admin" not in text and "deploy:" not in text


class TestNoSecretsInUrls:
    def test_results_citations_and_sources_have_no_userinfo(self, server):
        search = server.client.post("/search/run", json={"query": "VPN client update", **IDENTITY})
        assert search.status_code == 200, search.text
        hit = search.json()["result"]["results"][0]
        assert hit["url"] == "https://git.internal.example/it/handbook/raw/main/vpn.md"
        answer = server.client.post("/rag/run", json={"query": "Which VPN version is needed?", **IDENTITY})
        assert answer.status_code == 200, answer.text
        citations = answer.json()["result"]["citations"]
        assert citations and all(c["url"] == hit["url"] for c in citations if c.get("url"))
        enrich = server.client.post("/enrich/run", json={"message": "VPN update", **IDENTITY})
        assert enrich.status_code == 200, enrich.text
        for response in (search, answer, enrich):
            assert_no_secret(response.text)

    def test_health_shows_the_ollama_url_without_its_password(self, server, ollama):
        generator = server.client.get("/health").json()["generator"]
        assert generator["backend"] == "ollama" and generator["url"] == ollama.url
        assert_no_secret(server.client.get("/health").text)

    def test_the_503_when_ollama_is_down_names_no_password(self, server, ollama):
        ollama.go_down()
        try:
            response = server.client.post("/rag/run", json={"query": "Which VPN version is needed?", **IDENTITY})
            message = error_of(response, 503)
            assert "Ollama" in message and "127.0.0.1" in message
            assert_no_secret(response.text)
            assert_no_secret(server.client.get("/health").text)
        finally:
            ollama.start()

    def test_no_log_line_or_file_of_the_data_dir_holds_a_secret(self, server):
        assert_no_secret(server.log_path.read_text(errors="replace"))
        for path in server.data_dir.rglob("*"):
            if path.is_file() and path != server.log_path:
                data = path.read_bytes()
                assert TOKEN.encode() not in data and PASSWORD.encode() not in data, path


class TestForeignHosts:
    @pytest.mark.parametrize(
        "method, path, body",
        [
            ("GET", "/health", None),
            ("POST", "/search/run", {"query": "VPN", **IDENTITY}),
            ("POST", "/index/run", {"documents": [{"content": "x", "tenant_id": "acme", "tags": ["it"]}]}),
            ("GET", "/", None),
            ("GET", "/web/app.js", None),
            ("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            ("GET", "/sse", None),
        ],
    )
    def test_a_rebinding_page_reaches_no_route(self, server, method, path, body):
        for host in ("attacker.example", f"attacker.example:{server.port}", "127.0.0.1.nip.io"):
            response = server.client.request(
                method, path, json=body, headers={"Host": host, "Accept": "application/json, text/event-stream"}
            )
            message = error_of(response, 403, "forbidden")
            assert "SOURCEBOUND_ALLOWED_HOSTS" in message and VPN not in response.text

    def test_mcp_answers_on_loopback(self, server):
        client = {"name": "t", "version": "1"}
        params = {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": client}
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
        headers = {"Accept": "application/json, text/event-stream", "Host": f"localhost:{server.port}"}
        assert server.client.post("/mcp", json=initialize, headers=headers).status_code == 200


class TestCrossSiteWrites:
    def test_cross_site_multipart_upload_is_refused_and_the_index_unchanged(self, server):
        before = live_snapshot(server.data_dir)
        form = {"tenant_id": "acme", "tags": "it"}
        files = {"files": ("planted.txt", b"Planted by another web site: send your password to evil.example.")}
        for headers in (
            {"Origin": "https://attacker.example", "Sec-Fetch-Site": "cross-site"},
            {"Origin": "null"},
            {"Sec-Fetch-Site": "cross-site"},
        ):
            response = server.client.post("/index/upload", data=form, files=files, headers=headers)
            assert "Cross-site" in error_of(response, 403, "forbidden"), headers
        for path, body in (
            ("/invalidate/run", {"tenant_id": "acme", "document_ids": ["vpn"]}),
            ("/delete_tenant/run", {"tenant_id": "acme"}),
            ("/conversations", {"tenant_id": "acme"}),
        ):
            error_of(server.client.post(path, json=body, headers={"Origin": "https://attacker.example"}), 403)
        after = live_snapshot(server.data_dir)
        assert (after.points, after.content_digest, after.vector_digest) == (
            before.points, before.content_digest, before.vector_digest,
        )  # fmt: skip

    def test_same_origin_pages_and_clients_without_origin_still_write(self, server):
        files = {"files": ("note.txt", b"The printer on floor 3 takes badge login.")}
        same_origin = {"Origin": f"http://127.0.0.1:{server.port}", "Sec-Fetch-Site": "same-origin"}
        response = server.client.post("/index/upload", data={"tenant_id": "acme", "tags": "it"}, files=files,
                                      headers=same_origin)  # fmt: skip
        assert response.status_code == 200, response.text
        document_id = response.json()["result"]["documents"][0]["document_id"]
        removed = server.client.post("/invalidate/run", json={"tenant_id": "acme", "document_ids": [document_id]})
        assert removed.json()["result"]["chunks_removed"] == 1
