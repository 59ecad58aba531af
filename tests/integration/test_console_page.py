"""
The operators' console at ``/admin`` in a real browser (Debian's Chromium through Playwright, as
``tests/integration/test_web_page.py``), against a real ``api_key`` server on the sample corpus with a declared
git source and kept questions: each panel shows what the public API answers, an action and its effect, and a
key without the ``admin`` permission sees the refusal.

Every step leaves a screenshot in ``tests/results/console/`` (git-ignored); docs/images/ holds copies of some.
"""

from pathlib import Path

import pytest
import yaml
from playwright.sync_api import expect
from support.api_server import REPO, ApiServer
from support.chromium import launch_chromium
from support.git_repos import GitRepo

from components.stores import key_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCREENSHOTS = REPO / "tests" / "results" / "console"
ROUTED = "How much bereavement leave do employees get?"
MEAL = "What is the daily meal per diem when travelling for business within the Netherlands?"
MARKUP_QUESTION = 'Is the <img src=x onerror="window.__xss = 1"> badge policy for the zeppelin hangar written down?'
GLOSSARY = "term,aliases,definition\nPeoplebase,HR portal|HRIS,The HR system\n"


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def console_server(tmp_path_factory):
    """api_key mode, kept questions, the sample corpus and a git source of acme; an admin and a reader key."""
    root = tmp_path_factory.mktemp("console")
    repo = GitRepo(root / "repo")
    repo.commit({"runbooks/oncall.md": "# On-call\n\nThe on-call engineer answers pages within 15 minutes.\n"})
    sources = root / "sources.yml"
    source = {"name": "runbooks", "type": "git", "url": repo.url, "branch": "main", "include": ["**/*.md"],
              "tenant_id": "acme", "tags": ["engineering"]}  # fmt: skip
    sources.write_text(yaml.safe_dump({"sources": [source]}), encoding="utf-8")
    data_dir = root / "data"
    data_dir.mkdir()
    keys_file = data_dir / "api_keys.json"
    keys = {
        "admin": key_store.register_key(keys_file, tenant_id="acme", tags=["hr", "finance", "all-staff", "engineering"],
                                        permissions=["read", "admin"], label="console admin")[0],
        "reader": key_store.register_key(keys_file, tenant_id="acme", tags=["hr", "finance", "all-staff"],
                                         user_id="u-sam", label="sam")[0],
    }  # fmt: skip
    env = {
        "SOURCEBOUND_AUTH_MODE": "api_key",
        "SOURCEBOUND_KEEP_UNANSWERED_QUESTIONS": "true",
        "SOURCEBOUND_SOURCES": str(sources),
        "SOURCEBOUND_RECONCILE_INTERVAL": "3600",  # one reconcile at start: the panel's sync job
    }
    with ApiServer(data_dir, env=env) as server:
        server.keys = keys
        reader = bearer(keys["reader"])
        # Each question with the one tag it is about: the tag it is filed under (the router's primary tag).
        for question in (ROUTED, MARKUP_QUESTION):
            asked = {"query": question, "user_tags": ["hr"]}
            answer = server.client.post("/rag/run", json=asked, headers=reader).json()["result"]
            assert answer["action"] == "ROUTE", answer
        asked = {"query": MEAL, "user_tags": ["finance"]}
        meal = server.client.post("/rag/run", json=asked, headers=reader).json()["result"]
        rated = {"query_id": meal["query_id"], "rating": "down", "comment": "The per diem rose to EUR 50 in May."}
        assert server.client.post("/feedback", json=rated, headers=reader).status_code == 200
        yield server


@pytest.fixture(scope="module")
def browser():
    with launch_chromium(SCREENSHOTS) as launched:
        yield launched


class Console:
    """One browser context on ``/admin`` signed in with a key, with what it saw: dialogs and script errors."""

    def __init__(self, browser, server, name: str, key: str):
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = self.context.new_page()
        self.name, self.step = name, 0
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))
        self.page.goto(server.url + "/admin")
        self.page.wait_for_selector("body[data-ready='true']")
        assert self.page.locator("#identity").is_visible()  # no key yet: the identity form is open
        self.page.fill("#id-key", key)
        self.page.click("#identity-save")
        assert self.page.locator("#identity").is_hidden()

    def open(self, panel: str):
        self.page.click(f"#tab-{panel}")
        expect(self.page.locator(f"#panel-{panel}")).to_have_attribute("data-loaded", "true", timeout=30_000)
        return self.page.locator(f"#panel-{panel}")

    def shot(self, label: str) -> Path:
        self.step += 1
        path = SCREENSHOTS / f"{self.name}-{self.step:02d}-{label}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def close(self) -> None:
        assert self.errors == [], self.errors
        self.context.close()


@pytest.fixture
def console(browser, console_server):
    opened = []

    def opener(name: str, key: str = "admin") -> Console:
        opened.append(Console(browser, console_server, name, console_server.keys[key]))
        return opened[-1]

    yield opener
    for page in opened:
        page.close()


class TestConsolePanels:
    def test_the_page_is_served_like_the_chat_page(self, console_server):
        page = console_server.client.get("/admin")
        assert page.status_code == 200 and '<script src="/web/admin.js"' in page.text
        policy = page.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "connect-src 'self'" in policy and "unsafe" not in policy
        assert "/admin" not in console_server.client.get("/openapi.json").json()["paths"]

    def test_overview_shows_the_service_at_a_glance(self, console):
        view = console("overview")
        expect(view.page.locator("#panel-overview")).to_have_attribute("data-loaded", "true", timeout=30_000)
        health = view.page.locator("#overview-health").inner_text()
        assert "healthy" in health and "acme" in health and "api_key" in health
        answers = int(view.page.locator("#overview-quality dd").first.inner_text())
        assert answers >= 3  # the fixture's three questions (other tests may add more)
        assert "Not re-indexed" in view.page.locator("#overview-stale").inner_text()
        view.shot("overview")

    def test_documents_taint_and_invalidate_take_effect(self, console, console_server):
        view = console("documents")
        panel = view.open("documents")
        expect(panel.locator("tr[data-document-id='acme-hr-handbook']")).to_have_count(1)
        assert panel.locator("tr[data-document-id^='globex-']").count() == 0
        row = panel.locator("tr[data-document-id='acme-travel-policy']")
        row.get_by_role("button", name="Taint").click()
        expect(panel.locator("tr[data-document-id='acme-travel-policy']")).to_have_attribute("data-tainted", "true")
        admin = bearer(console_server.keys["admin"])
        listed = console_server.client.get("/documents", headers=admin).json()["result"]["documents"]
        assert next(doc for doc in listed if doc["document_id"] == "acme-travel-policy")["tainted"] is True
        view.shot("documents-tainted")
        target = panel.locator("tr[data-document-id='acme-travel-policy']")
        target.get_by_role("button", name="Invalidate").click()
        target.get_by_role("button", name="Confirm invalidate").click()  # two steps, no modal
        expect(panel.locator("tr[data-document-id='acme-travel-policy']")).to_have_count(0, timeout=30_000)
        expect(view.page.locator("#documents-status")).to_contain_text("chunk(s) removed")
        listed = console_server.client.get("/documents", headers=admin).json()["result"]["documents"]
        assert all(doc["document_id"] != "acme-travel-policy" for doc in listed)

    def test_sources_show_the_declared_source_and_its_sync_job(self, console):
        view = console("sources")
        panel = view.open("sources")
        card = panel.locator("li[data-source='runbooks']")
        expect(card).to_contain_text("git", timeout=30_000)
        for _ in range(30):  # the start-up reconcile may still be running
            if "succeeded" in card.inner_text():
                break
            view.page.click("#panel-sources .refresh")
            view.page.wait_for_timeout(1000)
        assert "succeeded" in card.inner_text() and "reconcile" in card.inner_text()
        view.shot("sources")

    def test_keys_create_shows_the_token_once_and_revoke_removes_it(self, console, console_server):
        view = console("keys")
        panel = view.open("keys")
        expect(panel.locator("#keys-table tbody tr")).to_have_count(2)
        view.page.fill("#key-label", "console-made")
        view.page.fill("#key-tags", "hr")
        view.page.click("#key-create")
        expect(view.page.locator("#key-token")).to_be_visible(timeout=30_000)
        token = view.page.locator("#key-token-value").inner_text()
        assert token.startswith("sb_")
        assert (
            console_server.client.post("/search/run", json={"query": "leave"}, headers=bearer(token)).status_code == 200
        )
        expect(panel.locator("#keys-table tbody tr")).to_have_count(3)
        assert token not in panel.locator("#keys-table").inner_text()  # listed by id and grants only
        view.shot("keys-token-shown-once")
        view.page.click("#key-token-done")
        assert view.page.locator("#key-token").is_hidden() and view.page.locator("#key-token-value").inner_text() == ""
        row = panel.locator("#keys-table tbody tr", has_text="console-made")
        row.get_by_role("button", name="Revoke").click()
        row.get_by_role("button", name="Confirm revoke").click()
        expect(panel.locator("#keys-table tbody tr")).to_have_count(2, timeout=30_000)
        for _ in range(50):  # the server re-reads the keys file when it changes
            if console_server.client.post("/search/run", json={"query": "q"}, headers=bearer(token)).status_code == 401:
                break
            view.page.wait_for_timeout(100)
        else:
            pytest.fail("the revoked key still works")

    def test_tag_owners(self, console):
        view = console("tags")
        panel = view.open("tags")
        expect(panel.locator("tr[data-tag='hr']")).to_contain_text("maria.lopez@acme.example")
        expect(panel.locator("tr[data-tag='all-staff']")).to_contain_text("routed to the administrator")
        assert "globex" not in panel.inner_text()

    def test_glossary_load_and_delete(self, console, console_server):
        view = console("glossary")
        panel = view.open("glossary")
        expect(view.page.locator("#glossary-status")).to_contain_text("No glossary yet")
        view.page.fill("#glossary-csv", GLOSSARY)
        view.page.click("#glossary-load")
        expect(panel.locator("#glossary-table tbody tr")).to_contain_text("Peoplebase", timeout=30_000)
        admin = bearer(console_server.keys["admin"])
        terms = console_server.client.get("/glossary", headers=admin).json()["vocabulary"]["terms"]
        assert [term["term"] for term in terms] == ["Peoplebase"]
        view.shot("glossary")
        view.page.click("#glossary-delete")
        expect(view.page.locator("#glossary-status")).to_contain_text("Glossary deleted", timeout=30_000)
        assert panel.locator("#glossary-table tbody tr").count() == 0
        assert console_server.client.get("/glossary", headers=admin).status_code == 404

    def test_knowledge_gaps_by_owner_with_questions_and_comments(self, console):
        view = console("gaps")
        panel = view.open("gaps")
        hr = panel.locator("li.gap[data-tag='hr']")
        expect(hr).to_contain_text("maria.lopez@acme.example")
        expect(hr.locator("li.question[data-kind='routed']", has_text=ROUTED)).to_have_count(1)
        finance = panel.locator("li.gap[data-tag='finance']")
        expect(finance).to_contain_text("jonas.berg@acme.example")
        expect(finance.locator("li.question[data-kind='thumbs_down']")).to_contain_text("EUR 50 in May")
        # A kept question's markup is shown as text, never run (the page's CSP is the second line).
        expect(panel).to_contain_text('<img src=x onerror="window.__xss = 1">')
        assert view.page.evaluate("window.__xss") is None
        assert panel.locator("li.question img").count() == 0
        view.shot("gaps")

    def test_feedback_lists_ratings_with_their_question(self, console):
        view = console("feedback")
        panel = view.open("feedback")
        row = panel.locator("#feedback-table tbody tr").first
        expect(row).to_contain_text("EUR 50 in May")
        expect(row).to_contain_text(MEAL)
        view.shot("feedback")


class TestConsoleRefusal:
    def test_a_key_without_admin_sees_the_refusal_and_no_data(self, console):
        view = console("refused", key="reader")
        expect(view.page.locator("#refusal")).to_be_visible(timeout=30_000)
        expect(view.page.locator("#refusal")).to_contain_text("lacks the 'admin' permission")
        view.page.click("#tab-documents")
        expect(view.page.locator("#documents-status")).to_contain_text("forbidden", timeout=30_000)
        assert view.page.locator("#documents-table tbody tr").count() == 0
        view.page.click("#tab-gaps")
        expect(view.page.locator("#gaps-status")).to_contain_text("forbidden", timeout=30_000)
        assert view.page.locator("#gaps-list li").count() == 0
        view.shot("refused")
