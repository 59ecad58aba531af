"""
The web page at ``/`` in a real browser: headless Chromium (Debian's, ``SOURCEBOUND_CHROMIUM``, default
``/usr/bin/chromium``; ``make test`` installs it when missing) driven by Playwright for Python, against
the real server (one per module) on the bundled sample corpus.

Every step leaves a screenshot in ``tests/results/web/`` (git-ignored), named after the test and step.
"""

from pathlib import Path

import pytest
import yaml
from playwright.sync_api import expect
from support.api_server import REPO, ApiServer
from support.chromium import launch_chromium

from components.stores import key_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCREENSHOTS = REPO / "tests" / "results" / "web"
MEAL = "What is the daily meal per diem when travelling for business within the Netherlands?"
# With only the hr tag, this finds weak hr context: routed to the hr tag's owner (examples/sample_corpus/directory.yml).
ROUTED = "How much bereavement leave do employees get?"
SECRET = "ZEBRA-9931"
SECRET_DOC = f"Vault procedures\n\nThe Globex vault passphrase is {SECRET} and it rotates every quarter.\n"
QUOKKA_DOC = "Quokka garden\n\nThe quokka garden on the roof opens at 07:30 on weekdays and closes at 18:00.\n"
XSS_DOC = (
    "Storage rooms\n\nThe xylophone storage room code is 4417 "
    '<script>window.__xss = 1; alert("script")</script>'
    '<img src=x onerror="window.__xss = 2; alert(1)"> and it changes every month.\n'
)
XSS_FILE_NAME = '<img src=x onerror="window.__xss=3">storage.txt'
XSS_NAMED = {  # markup in the fields a JSON index request sets freely: the name and the section
    "document_id": "xylophone-annex",
    "document_name": '<img src=x onerror="window.__xss = 4">Xylophone annex',
    "content": "# <script>window.__xss = 5</script>Annex\n\nFacilities keeps the xylophone key in the annex cabinet.",
    "tenant_id": "acme",
    "tags": ["all-staff"],
}
PANELS = "#panel-ask, #panel-search, #panel-upload, #tooltip, #chunk-dialog"


def globex_corpus() -> list[dict]:
    manifest = yaml.safe_load((REPO / "examples" / "sample_corpus" / "manifest.yml").read_text(encoding="utf-8"))
    return [entry for entry in manifest["documents"] if entry["tenant_id"] == "globex"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with ApiServer(tmp_path_factory.mktemp("web") / "data") as running:
        yield running


@pytest.fixture(scope="module")
def key_server(tmp_path_factory):
    """An ``api_key`` mode server with an empty store (no corpus: the test uploads what it asks about)."""
    data_dir = tmp_path_factory.mktemp("web-keys") / "data"
    data_dir.mkdir(parents=True)
    key, _ = key_store.register_key(
        data_dir / "api_keys.json", tenant_id="acme", tags=["all-staff"], permissions=["read", "write"]
    )
    env = {"SOURCEBOUND_AUTH_MODE": "api_key", "SOURCEBOUND_BOOTSTRAP_CORPUS": "false"}
    with ApiServer(data_dir, env=env) as running:
        running.key = key
        yield running


@pytest.fixture(scope="module")
def browser():
    with launch_chromium(SCREENSHOTS) as launched:
        yield launched


class Page:
    """One browser context on the page, with what it saw: dialogs, script errors, requests."""

    def __init__(self, browser, server, name: str, **context_options):
        context_options.setdefault("viewport", {"width": 1100, "height": 900})
        self.context = browser.new_context(**context_options)
        self.page = self.context.new_page()
        self.name = name
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.goto(server.url + "/")
        self.page.wait_for_selector("body[data-ready='true']")
        self.step = 0

    def shot(self, label: str) -> Path:
        self.step += 1
        path = SCREENSHOTS / f"{self.name}-{self.step:02d}-{label}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def identify(self, tenant: str, tags: str, user: str = "") -> None:
        page = self.page
        if page.locator("#identity").is_hidden():
            page.click("#identity-toggle")
        page.fill("#id-tenant", tenant)
        page.fill("#id-tags", tags)
        page.fill("#id-user", user)
        page.click("#identity-save")
        assert page.locator("#identity").is_hidden()

    def ask(self, question: str):
        """Type and send with Enter; return the answer bubble once its sources arrived."""
        page = self.page
        before = page.locator(".message.assistant").count()
        page.fill("#question", question)
        page.press("#question", "Enter")
        bubble = page.locator(".message.assistant").nth(before)
        bubble.locator(".answer-details, .error-text").first.wait_for(timeout=60_000)
        assert bubble.locator(".error-text").count() == 0, bubble.inner_text()
        return bubble

    def search(self, query: str):
        page = self.page
        page.click("#tab-search")
        page.fill("#search-query", query)
        page.press("#search-query", "Enter")
        expect(page.locator("#search-status")).to_contain_text("result", timeout=30_000)
        return page.locator("#search-results .result")

    def upload(self, files: list[dict], tags: str) -> list[dict]:
        page = self.page
        page.click("#tab-upload")
        page.set_input_files("#upload-files", files)
        page.fill("#upload-tags", tags)
        page.click("#upload-button")
        # Locator waits, not wait_for_function: the page's CSP forbids the eval that one uses.
        pending = page.locator(".upload-item:not([data-status]), .upload-item[data-status='uploading']")
        expect(pending).to_have_count(0, timeout=60_000)
        return page.eval_on_selector_all(
            ".upload-item",
            "items => items.map(i => ({name: i.querySelector('.file-name').textContent, status: i.dataset.status,"
            " document_id: i.dataset.documentId, text: i.querySelector('.file-status').textContent}))",
        )

    def shown_source_ids(self) -> set[str]:
        return set(
            self.page.eval_on_selector_all(f":is({PANELS}) [data-source-id]", "n => n.map(e => e.dataset.sourceId)")
        )

    def close(self) -> None:
        assert self.errors == [], self.errors
        self.context.close()


@pytest.fixture
def open_page(browser, request):
    pages = []

    def opener(name: str, on: str = "server", **options) -> Page:
        pages.append(Page(browser, request.getfixturevalue(on), name, **options))
        return pages[-1]

    yield opener
    for page in pages:
        page.close()


def text_file(name: str, content: str) -> dict:
    return {"name": name, "mimeType": "text/plain", "buffer": content.encode("utf-8")}


class TestWebPage:
    def test_page_is_served_without_shadowing_the_api(self, server):
        page = server.client.get("/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert "http://" not in page.text and "https://" not in page.text  # nothing from a CDN
        for asset in ("/web/app.js", "/web/app.css"):
            assert server.client.get(asset).status_code == 200
        assert server.client.get("/health").json()["status"] == "healthy"
        assert server.client.get("/docs").status_code == 200 and server.client.get("/metrics").status_code == 200
        assert server.client.get("/openapi.json").json()["paths"]["/search/run"]
        missing = server.client.get("/no-such-page")
        assert missing.status_code == 404 and missing.json()["error"] == "not_found"

    def test_cited_answer_chip_snippet_and_full_chunk(self, open_page, server):
        expected = server.client.post(
            "/rag/run", json={"query": MEAL, "tenant_id": "acme", "user_tags": ["hr", "all-staff", "finance"]}
        ).json()["result"]
        citation = expected["citations"][0]
        view = open_page("cited-answer")
        view.shot("first-visit")  # what a first-time user sees: the identity form open
        view.identify("acme", "hr, all-staff, finance")
        bubble = view.ask(MEAL)
        answer = bubble.locator(".answer-text")
        assert "EUR 45" in answer.inner_text() and "[SourceId:" not in answer.inner_text()
        chip = answer.locator(".chip").first
        assert chip.get_attribute("data-source-id") == citation["source_id"] and chip.inner_text() == "1"
        overall = bubble.locator(".meter.overall [role=meter]")
        assert overall.get_attribute("aria-valuenow") == str(expected["confidence"]["overall"])
        parts = bubble.locator(".confidence-parts .meter")
        assert parts.count() == 3 and "Retrieval" in parts.nth(0).inner_text() and "n/a" in parts.nth(2).inner_text()
        assert bubble.locator(".route-card").count() == 0
        view.shot("answer")

        chip.hover()
        tooltip = view.page.locator("#tooltip")
        tooltip.wait_for(state="visible")
        tip = tooltip.inner_text()
        assert citation["document_name"] in tip and f"section {citation['section']}" in tip
        assert " ".join(citation["snippet"].split())[:80] in " ".join(tip.split())
        view.shot("chip-hover")

        chip.click()
        dialog = view.page.locator("#chunk-dialog")
        dialog.wait_for(state="visible")
        assert " ".join(citation["snippet_full"].split()) == " ".join(view.page.inner_text("#chunk-text").split())
        view.shot("full-chunk")
        view.page.keyboard.press("Escape")
        dialog.wait_for(state="hidden")

    def test_keyboard_history_and_narrow_dark_screen(self, open_page):
        view = open_page("keyboard-narrow", viewport={"width": 390, "height": 844}, color_scheme="dark")
        page = view.page
        assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(21, 23, 27)"
        view.identify("acme", "hr, all-staff, finance")
        page.click("#question")
        page.keyboard.type("first line")
        page.keyboard.press("Shift+Enter")
        page.keyboard.type("second line")
        assert page.input_value("#question") == "first line\nsecond line"
        assert page.locator(".message").count() == 0
        view.ask(MEAL)
        with page.expect_request("**/v1/chat/completions") as sent:
            second = view.ask("And abroad?")
        messages = sent.value.post_data_json["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "user"]
        assert messages[0]["content"] == MEAL and "EUR 45" in messages[1]["content"]
        assert second.locator(".answer-details").count() == 1

        # Tab reaches every chip: walking backwards from the question box visits each chip on the page.
        chips = page.locator(".chip").count()
        assert chips >= 2
        page.focus("#question")
        reached = set()
        for _ in range(chips + 10):
            page.keyboard.press("Shift+Tab")
            reached.add(
                page.evaluate(
                    "document.activeElement.className + '#'"
                    " + [...document.querySelectorAll('.chip')].indexOf(document.activeElement)"
                )
            )
        assert {f"chip#{index}" for index in range(chips)} <= reached
        page.locator(".chip").first.focus()
        assert page.locator("#tooltip").is_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= 390  # no sideways scrolling
        view.shot("narrow-dark")

    def test_route_card_names_the_owner(self, open_page, server):
        # The card shows the service's own routing reason (a decline or low confidence, whichever the answerer gave).
        expected = server.client.post(
            "/rag/run", json={"query": ROUTED, "tenant_id": "acme", "user_tags": ["hr"]}
        ).json()["result"]
        assert expected["action"] == "ROUTE"
        view = open_page("route")
        view.identify("acme", "hr")
        bubble = view.ask(ROUTED)
        card = bubble.locator(".route-card")
        assert card.count() == 1
        text = card.inner_text()
        assert "maria.lopez@acme.example" in text and "u-acme-maria" in text and "“hr”" in text
        assert expected["route_to"]["reason"] in text
        assert bubble.get_attribute("data-action") == "ROUTE"
        view.shot("route-card")

    def test_thumbs_down_with_a_comment_reaches_the_feedback(self, open_page, server):
        view = open_page("feedback")
        view.identify("acme", "finance")
        bubble = view.ask(MEAL)
        bar = bubble.locator(".feedback")
        assert bar.get_by_role("button", name="Helpful", exact=True).count() == 1
        bar.get_by_role("button", name="Not helpful").click()
        bar.locator(".feedback-comment").fill("The per diem changed in May.")
        view.shot("feedback-comment")
        bar.get_by_role("button", name="Send").click()
        expect(bar.locator(".feedback-status")).to_contain_text("Thanks", timeout=30_000)
        assert bar.get_attribute("data-sent") == "down"
        view.shot("feedback-sent")
        feedback = server.client.get("/insights/feedback", params={"tenant_id": "acme"}).json()["result"]["feedback"]
        assert any(
            entry["comment"] == "The per diem changed in May." and entry["rating"] == "down" for entry in feedback
        )

    def test_upload_then_answer_from_it(self, open_page):
        view = open_page("upload")
        view.identify("acme", "all-staff")
        statuses = view.upload(
            [text_file("quokka-garden.txt", QUOKKA_DOC), text_file("notes.docx", "not a supported type")], "all-staff"
        )
        assert statuses[0]["status"] == "indexed" and "1 chunk" in statuses[0]["text"]
        assert statuses[1]["status"] == "error" and "notes.docx" in statuses[1]["text"]
        view.shot("uploaded")
        view.page.click("#tab-ask")
        bubble = view.ask("When does the quokka garden open on weekdays?")
        assert "07:30" in bubble.locator(".answer-text").inner_text()
        chip = bubble.locator(f".answer-text .chip[data-source-id^='{statuses[0]['document_id']}:']").first
        chip.hover()
        assert "quokka-garden.txt" in view.page.inner_text("#tooltip")
        view.shot("answer-from-upload")

    def test_document_markup_never_executes(self, open_page, server):
        indexed = server.client.post("/index/run", json={"documents": [XSS_NAMED]})
        assert indexed.status_code == 200, indexed.text
        view = open_page("xss")
        view.identify("acme", "all-staff")
        statuses = view.upload([text_file(XSS_FILE_NAME, XSS_DOC)], "all-staff")
        assert statuses[0]["status"] == "indexed" and statuses[0]["name"] == XSS_FILE_NAME
        view.page.click("#tab-ask")
        bubble = view.ask("What is the xylophone storage room code and how often does it change?")
        assert '<img src=x onerror="window.__xss = 2; alert(1)">' in bubble.locator(".answer-text").inner_text()
        chip = bubble.locator(f".answer-text .chip[data-source-id^='{statuses[0]['document_id']}:']").first
        chip.hover()
        assert "<script>window.__xss = 1" in view.page.inner_text("#tooltip")
        view.shot("answer-with-markup")
        chip.click()
        assert "<script>window.__xss = 1" in view.page.inner_text("#chunk-text")
        view.shot("full-chunk-with-markup")
        view.page.keyboard.press("Escape")
        named = view.ask("Where does facilities keep the xylophone key?")
        assert XSS_NAMED["document_name"] in named.locator(".source-list").inner_text()
        named.locator(".answer-text .chip[data-source-id='xylophone-annex:0']").hover()
        assert XSS_NAMED["document_name"] in view.page.inner_text("#tooltip")
        view.shot("name-with-markup")
        results = view.search("xylophone storage room code and key")
        shown = " ".join(results.all_inner_texts())
        assert "<img src=x onerror" in shown and XSS_NAMED["document_name"] in shown
        view.shot("search-with-markup")
        assert view.page.evaluate("window.__xss") is None
        assert view.dialogs == []
        assert view.page.locator(f":is({PANELS}) :is(img, script)").count() == 0

    def test_sources_link_to_where_they_live(self, open_page, server):
        documents = [
            {
                "document_id": "ferry-timetable", "document_name": "Ferry timetable",
                "source_uri": "https://wiki.example.com/ferry?tab=winter",
                "content": "The staff ferry to the island office leaves the harbour pier at 06:45 on weekdays.",
                "tenant_id": "acme", "tags": ["all-staff"],
            },
            {
                "document_id": "ferry-scripted", "document_name": "Ferry notes",
                "source_uri": "javascript:window.__xss = 6",
                "content": "The staff ferry returns from the island office to the harbour pier at 18:10.",
                "tenant_id": "acme", "tags": ["all-staff"],
            },
        ]  # fmt: skip
        indexed = server.client.post("/index/run", json={"documents": documents})
        assert indexed.status_code == 200, indexed.text
        view = open_page("links")
        view.identify("acme", "all-staff")
        bubble = view.ask("When does the staff ferry leave the harbour pier for the island office?")
        link = bubble.locator(".source-list a.source-link")
        expect(link).to_have_count(1)
        assert link.get_attribute("href") == "https://wiki.example.com/ferry?tab=winter"
        assert link.get_attribute("rel") == "noopener noreferrer" and link.get_attribute("target") == "_blank"
        results = view.search("staff ferry harbour pier island office")
        expect(results.first).to_be_visible()
        shown = {source_id.split(":")[0] for source_id in view.shown_source_ids()}
        assert {"ferry-timetable", "ferry-scripted"} <= shown
        hrefs = view.page.eval_on_selector_all("#search-results a", "links => links.map(a => a.getAttribute('href'))")
        assert hrefs == ["https://wiki.example.com/ferry?tab=winter"]  # the javascript: address is no link
        view.shot("source-links")

    def test_tenant_never_sees_another_tenants_chunks(self, open_page):
        globex = open_page("tenant-globex")
        globex.identify("globex", "everyone")
        secret = globex.upload([text_file("vault.txt", SECRET_DOC)], "everyone")
        assert secret[0]["status"] == "indexed"
        globex.page.click("#tab-ask")
        assert SECRET in globex.ask("What is the Globex vault passphrase?").inner_text()  # it is there to leak
        globex.shot("globex-sees-its-own")
        globex_ids = {entry["document_id"] for entry in globex_corpus()} | {secret[0]["document_id"]}

        acme = open_page("tenant-acme")
        acme.identify("acme", "hr, all-staff, finance, everyone")
        bubble = acme.ask("What is the Globex vault passphrase and how often does it rotate?")
        for chip in bubble.locator(".chip").all():
            chip.hover()
            assert SECRET not in acme.page.inner_text("#tooltip")
        acme.ask("How many days of annual leave do Globex employees get?")
        acme.shot("acme-asks-about-globex")
        results = acme.search("Globex vault passphrase rotates every quarter")
        assert results.count() > 0  # acme's own chunks are shown, so the check below has something to check
        acme.shot("acme-searches-globex")
        shown = acme.shown_source_ids()
        assert shown and all(":" in source_id for source_id in shown)
        assert {source_id.rsplit(":", 1)[0] for source_id in shown}.isdisjoint(globex_ids)
        everything = acme.page.inner_text("body")
        assert SECRET not in everything and "vault.txt" not in everything
        assert not [entry["document_name"] for entry in globex_corpus() if entry["document_name"] in everything]


class TestWebPageApiKeyMode:
    def test_key_kept_in_the_session_and_sent_as_bearer(self, open_page, key_server):
        view = open_page("api-key", on="key_server")
        page = view.page
        assert page.inner_text("#mode-badge") == "API-key mode" and page.locator("#id-key").is_visible()
        page.fill("#id-key", "sb-not-a-real-key")
        view.identify("acme", "all-staff")
        view.page.click("#tab-ask")
        page.fill("#question", "Anything?")
        page.press("#question", "Enter")
        refused = page.locator(".message.assistant .error-text")
        refused.wait_for()
        assert refused.inner_text().startswith("unauthorized:")
        view.shot("wrong-key")

        page.click("#identity-toggle")
        page.fill("#id-key", key_server.key)
        view.identify("acme", "all-staff")
        assert page.evaluate("sessionStorage.getItem('sourcebound.apiKey')") == key_server.key
        assert key_server.key not in page.evaluate("JSON.stringify(localStorage) + document.cookie")
        statuses = view.upload([text_file("quokka-garden.txt", QUOKKA_DOC)], "all-staff")
        assert statuses[0]["status"] == "indexed", statuses
        page.click("#tab-ask")
        with page.expect_request("**/v1/chat/completions") as sent:
            bubble = view.ask("When does the quokka garden open on weekdays?")
        assert sent.value.headers["authorization"] == f"Bearer {key_server.key}"
        assert "07:30" in bubble.locator(".answer-text").inner_text()
        view.shot("answer-with-key")
        # The thumbs send the same key, and the server accepts the rating as this key's own query.
        with page.expect_request("**/feedback") as rated:
            bubble.locator(".feedback").get_by_role("button", name="Helpful", exact=True).click()
        assert rated.value.headers["authorization"] == f"Bearer {key_server.key}"
        expect(bubble.locator(".feedback-status")).to_contain_text("Thanks", timeout=30_000)
        assert bubble.locator(".feedback").get_attribute("data-sent") == "up"

        # A new browser session starts without the key.
        fresh = open_page("api-key-new-session", on="key_server")
        assert fresh.page.input_value("#id-key") == "" and fresh.page.locator("#identity").is_visible()
