"""``sourcebound crawl``: its settings from this shell's environment, carried to a running server."""

import pytest

from hayhooks_app.cli import build_parser, main
from hayhooks_app.cli.sources import _crawl_argv

pytestmark = pytest.mark.unit


class TestCrawlCommand:
    def test_the_shells_settings_are_made_explicit_for_the_server(self, monkeypatch):
        monkeypatch.setenv("RAG_CRAWL_START_URLS", "https://help.example.com/, https://help.example.com/faq")
        monkeypatch.setenv("RAG_ALLOWLIST_DOMAINS", "help.example.com")
        monkeypatch.setenv("RAG_MAX_PAGES", "40")
        monkeypatch.delenv("RAG_CRAWL_MAX_DEPTH", raising=False)
        monkeypatch.delenv("RAG_CRAWL_TAGS", raising=False)
        argv = ["crawl", "--tenant", "acme", "--json"]
        carried = _crawl_argv(build_parser().parse_args(argv), argv)
        assert carried == [
            "crawl", "--tenant", "acme", "--json", "--allowed-domains", "help.example.com", "--max-pages", "40",
            "--", "https://help.example.com/", "https://help.example.com/faq",
        ]  # fmt: skip
        parsed = build_parser().parse_args(carried)  # what the server parses
        assert parsed.urls == ["https://help.example.com/", "https://help.example.com/faq"]
        assert (parsed.tenant, parsed.max_pages, parsed.allowed_domains) == ("acme", "40", "help.example.com")

    def test_urls_given_are_not_replaced(self, monkeypatch):
        monkeypatch.setenv("RAG_CRAWL_START_URLS", "https://a.example/")
        argv = ["crawl", "https://b.example/"]
        assert _crawl_argv(build_parser().parse_args(argv), argv)[-1] == "https://b.example/"

    def test_nothing_to_crawl_is_invalid_input(self, monkeypatch, tmp_path, capsys):
        monkeypatch.delenv("RAG_CRAWL_START_URLS", raising=False)
        assert main(["crawl", "--data-dir", str(tmp_path)]) == 2
        assert "set RAG_CRAWL_START_URLS" in capsys.readouterr().err
