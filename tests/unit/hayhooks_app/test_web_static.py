"""
The web page's serving and its static files, without a browser (the browser tests are
``tests/integration/test_web_page.py``): the page at ``/``, its assets under ``/web/``, the API
routes untouched, nothing loaded from elsewhere, and no HTML-writing DOM call in the script.
"""

import re

import pytest
from fastapi.testclient import TestClient

from hayhooks_app.app import WEB_DIR, create_application
from hayhooks_app.config import Settings


@pytest.fixture
def client(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCEBOUND_DATA_DIR", str(tmp_path))
    return TestClient(
        create_application(Settings(data_dir=tmp_path)), base_url="http://localhost", raise_server_exceptions=False
    )


@pytest.mark.unit
class TestWebPage:
    def test_page_at_root_with_its_security_headers(self, client):
        page = client.get("/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        policy = page.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "connect-src 'self'" in policy and "unsafe" not in policy
        assert page.headers["x-content-type-options"] == "nosniff"
        assert client.head("/").status_code == 200
        assert '<script src="/web/app.js"' in page.text

    def test_assets_carry_the_pages_security_headers(self, client):
        page_policy = client.get("/").headers["content-security-policy"]
        for asset in ("/web/app.js", "/web/app.css", "/web/index.html"):
            response = client.get(asset)
            assert response.status_code == 200, asset
            assert response.headers["content-security-policy"] == page_policy, asset
            assert response.headers["x-content-type-options"] == "nosniff"
            assert response.headers["referrer-policy"] == "no-referrer"

    def test_assets_under_web_and_nothing_else(self, client):
        assert client.get("/web/app.js").headers["content-type"].startswith("text/javascript")
        assert client.get("/web/app.css").headers["content-type"].startswith("text/css")
        for escape in ("/web/../app.py", "/web/%2e%2e/app.py", "/web/missing.js"):
            assert client.get(escape).status_code == 404, escape
        not_found = client.get("/nope")
        assert not_found.status_code == 404 and not_found.json()["error"] == "not_found"

    def test_api_routes_are_not_shadowed(self, client):
        paths = set(client.get("/openapi.json").json()["paths"])
        assert "/" not in paths and {"/health", "/metrics", "/index/upload", "/v1/chat/completions"} <= paths
        assert client.get("/docs").status_code == 200
        assert client.get("/metrics").status_code == 200

    def test_files_are_self_contained(self):
        for path in WEB_DIR.iterdir():
            text = path.read_text(encoding="utf-8")
            assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", text, re.IGNORECASE), path.name

    def test_script_never_writes_html(self):
        for path in WEB_DIR.glob("*.js"):
            script = path.read_text(encoding="utf-8")
            for call in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
                assert call not in script, (path.name, call)

    def test_every_element_the_script_uses_exists(self):
        page = (WEB_DIR / "index.html").read_text(encoding="utf-8")
        script = (WEB_DIR / "app.js").read_text(encoding="utf-8")
        ids = set(re.findall(r'\bid="([^"]+)"', page))
        used = set(re.findall(r'\$\("([^"]+)"\)', script))
        used |= {f"{prefix}-{name}" for prefix in ("tab", "panel") for name in ("ask", "search", "upload")}
        assert len(used) > 20 and used <= ids, sorted(used - ids)
