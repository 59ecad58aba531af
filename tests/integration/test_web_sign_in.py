"""
The web page signing in with OpenID Connect in a real browser (headless Chromium driven by Playwright, as in
test_web_page.py) against a live ``oidc,api_key`` server and the test provider (tests/support/oidc_provider.py):
the authorization code flow with PKCE, who is signed in, groups limiting what is seen, renewal with the refresh
token, asking again when renewal is refused, and signing out at the provider.

Every step leaves a screenshot in ``tests/results/web/`` (git-ignored).
"""

import time

import pytest
from playwright.sync_api import expect
from support.api_server import REPO, ApiServer
from support.chromium import launch_chromium
from support.oidc_provider import OidcProvider

from components.stores import key_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCREENSHOTS = REPO / "tests" / "results" / "web"
CLIENT_ID = "sourcebound-web"
DOCUMENTS = [
    ("payroll-calendar", ["finance"], "Payroll calendar: salaries are paid on the 25th; the wombat bonus in March."),
    ("leave-policy", ["hr"], "Leave policy: parental leave is sixteen weeks; ask the wombat desk for forms."),
    ("canteen-menu", ["all-staff"], "Canteen menu: the wombat curry is served every Thursday."),
]


@pytest.fixture(scope="module")
def provider():
    with OidcProvider(audience="sourcebound", client_id=CLIENT_ID) as running:
        running.users.update(
            {
                "alice": {"groups": ["hr", "all-staff"], "name": "Alice Example"},
                "bob": {"groups": ["finance"], "name": "Bob Example"},
            }
        )
        yield running


@pytest.fixture(scope="module")
def server(tmp_path_factory, provider):
    data_dir = tmp_path_factory.mktemp("web-oidc") / "data"
    data_dir.mkdir(parents=True)
    service_key, _ = key_store.register_key(
        data_dir / "api_keys.json", tenant_id="acme", tags=["finance", "hr", "all-staff"], permissions=["read", "write"]
    )
    env = {
        "SOURCEBOUND_AUTH_MODE": "oidc,api_key",
        "SOURCEBOUND_BOOTSTRAP_CORPUS": "false",
        "SOURCEBOUND_OIDC_ISSUER": provider.issuer,
        "SOURCEBOUND_OIDC_CLIENT_ID": CLIENT_ID,  # the page sends ID tokens: their audience is the client id
        "SOURCEBOUND_OIDC_TENANT": "acme",
        "SOURCEBOUND_OIDC_LEEWAY_SECONDS": "0",
    }
    with ApiServer(data_dir, env=env) as running:
        documents = [
            {"document_id": doc_id, "tags": tags, "content": text, "tenant_id": "acme"}
            for doc_id, tags, text in DOCUMENTS
        ]
        response = running.client.post(
            "/index/run", json={"documents": documents}, headers={"Authorization": f"Bearer {service_key}"}
        )
        assert response.status_code == 200, response.text
        yield running


@pytest.fixture(scope="module")
def browser():
    with launch_chromium(SCREENSHOTS) as launched:
        yield launched


class SignInPage:
    """One browser context on the page, with the script errors and CSP refusals it saw."""

    def __init__(self, browser, server, name: str):
        self.context = browser.new_context(viewport={"width": 1100, "height": 900})
        self.page = self.context.new_page()
        self.server = server
        self.name = name
        self.step = 0
        self.errors: list[str] = []
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        # A refused request is logged too (the provider's 400 when renewal is refused): only CSP refusals count.
        self.page.on(
            "console", lambda message: "Content Security Policy" in message.text and self.errors.append(message.text)
        )
        self.response = self.page.goto(server.url + "/")
        self.page.wait_for_selector("body[data-ready='true']")

    def shot(self, label: str) -> None:
        self.step += 1
        self.page.screenshot(path=str(SCREENSHOTS / f"{self.name}-{self.step:02d}-{label}.png"), full_page=True)

    def sign_in(self, user: str) -> None:
        page = self.page
        expect(page.locator("#sign-in")).to_be_visible()
        page.click("#sign-in")  # to the provider and back with a code
        expect(page.locator("#identity-toggle")).to_contain_text(user, timeout=30_000)
        page.wait_for_selector("body[data-ready='true']")

    def session(self) -> str | None:
        return self.page.evaluate("() => sessionStorage.getItem('sourcebound.oidc')")

    def search(self, query: str = "wombat") -> set[str]:
        page = self.page
        page.click("#tab-search")
        page.fill("#search-query", query)
        page.press("#search-query", "Enter")
        expect(page.locator("#search-status")).to_contain_text("result", timeout=30_000)
        ids = page.eval_on_selector_all("#search-results .result", "n => n.map(e => e.dataset.sourceId)")
        return {source_id.split(":")[0] for source_id in ids}

    def close(self) -> None:
        assert self.errors == [], self.errors
        self.context.close()


@pytest.fixture
def open_page(browser, server):
    pages = []

    def opener(name: str) -> SignInPage:
        pages.append(SignInPage(browser, server, name))
        return pages[-1]

    yield opener
    for page in pages:
        page.close()


class TestWebSignIn:
    def test_sign_in_shows_who_and_groups_limit_what_is_seen(self, open_page, provider, server):
        provider.token_lifetime_s = 300
        provider.login_as = "alice"
        view = open_page("oidc-sign-in")
        policy = view.response.headers["content-security-policy"]
        assert f"connect-src 'self' {provider.issuer};" in policy  # the token endpoint, nothing else
        assert "script-src 'self';" in policy and "unsafe" not in policy
        view.shot("signed-out")
        grants_before = len(provider.grants)
        view.sign_in("alice")
        view.shot("signed-in")
        assert provider.grants[grants_before:] == ["authorization_code"]
        assert "code=" not in view.page.url and "state=" not in view.page.url  # the single-use code is gone
        view.page.click("#identity-toggle")
        shown = view.page.locator("#signed-in-as")
        expect(shown).to_contain_text("Alice Example")
        expect(shown).to_contain_text("tenant acme")
        expect(shown).to_contain_text("tags: hr, all-staff")
        assert view.search() == {"leave-policy", "canteen-menu"}
        view.shot("searched")

    def test_another_user_sees_other_groups(self, open_page, provider):
        provider.token_lifetime_s = 300
        provider.login_as = "bob"
        view = open_page("oidc-bob")
        view.sign_in("bob")
        assert view.search() == {"payroll-calendar"}
        # An answer's thumbs send the token too: the rating is accepted as this user's own query.
        page = view.page
        page.click("#tab-ask")
        page.fill("#question", "When are salaries paid?")
        page.press("#question", "Enter")
        bubble = page.locator(".message.assistant").first
        bubble.locator(".answer-details, .error-text").first.wait_for(timeout=60_000)
        assert bubble.locator(".error-text").count() == 0, bubble.inner_text()
        with page.expect_request("**/feedback") as rated:
            bubble.locator(".feedback").get_by_role("button", name="Helpful", exact=True).click()
        assert rated.value.headers["authorization"].startswith("Bearer ey")
        expect(bubble.locator(".feedback-status")).to_contain_text("Thanks", timeout=30_000)

    def test_renews_then_asks_again_when_renewal_is_refused(self, open_page, provider):
        provider.token_lifetime_s = 12  # renewed 5 s before it expires
        provider.login_as = "alice"
        view = open_page("oidc-renew")
        view.sign_in("alice")
        first = view.session()
        deadline = time.monotonic() + 20
        while "refresh_token" not in provider.grants and time.monotonic() < deadline:
            time.sleep(0.5)
        assert "refresh_token" in provider.grants, provider.grants
        expect(view.page.locator("#identity-toggle")).to_contain_text("alice")
        assert view.session() != first  # a new token, without leaving the page
        assert view.search() == {"leave-policy", "canteen-menu"}
        provider.revoke_refresh_tokens()  # the next renewal is refused: the page must ask again
        expect(view.page.locator("#sign-in")).to_be_visible(timeout=20_000)
        expect(view.page.locator("#sign-in-status")).to_contain_text("refused")
        view.shot("asked-again")
        assert view.session() is None
        view.page.click("#tab-search")
        view.page.fill("#search-query", "wombat")
        view.page.press("#search-query", "Enter")
        expect(view.page.locator("#search-status")).to_contain_text("Sign in first")

    def test_sign_out_at_the_provider(self, open_page, provider, server):
        provider.token_lifetime_s = 300
        provider.login_as = "alice"
        view = open_page("oidc-sign-out")
        view.sign_in("alice")
        if view.page.locator("#identity").is_hidden():
            view.page.click("#identity-toggle")
        logouts = len(provider.logouts)
        view.page.click("#sign-out")
        expect(view.page.locator("#sign-in")).to_be_visible(timeout=30_000)
        view.page.wait_for_selector("body[data-ready='true']")
        view.shot("signed-out-again")
        assert len(provider.logouts) == logouts + 1
        logout = provider.logouts[-1]
        assert logout["post_logout_redirect_uri"] == server.url + "/" and logout["id_token_hint"].count(".") == 2
        assert view.session() is None
        expect(view.page.locator("#identity-toggle")).to_contain_text("sign in")
