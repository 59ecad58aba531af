"""The sources YAML: env substitution, checks naming every problem, globs, stable document ids."""

import pytest

from components.services.source_config import SourceConfigError, crawl_source, glob_regex, load_sources, parse_sources

pytestmark = pytest.mark.unit

ISSUE_FORM = """
sources:
  - name: handbook
    type: git
    url: file:///srv/git/handbook.git      # or https://github.com/acme/handbook.git
    branch: main
    include: ['**/*.md', '**/*.yaml']
    tenant_id: acme
    tags: [eng]
    webhook_secret: ${HANDBOOK_WEBHOOK_SECRET}
"""


class TestLoadSources:
    def test_the_documented_form_loads_with_its_secret_substituted(self, tmp_path):
        path = tmp_path / "sources.yml"
        path.write_text(ISSUE_FORM, encoding="utf-8")
        sources = load_sources(path, env={"HANDBOOK_WEBHOOK_SECRET": "s3cret"})
        handbook = sources["handbook"]
        assert (handbook.url, handbook.branch, handbook.tenant_id, handbook.tags) == (
            "file:///srv/git/handbook.git", "main", "acme", ("eng",),
        )  # fmt: skip
        assert handbook.webhook_secret == "s3cret" and "s3cret" not in repr(handbook)
        assert handbook.scope == "tenant" and handbook.include == ("**/*.md", "**/*.yaml") and handbook.exclude == ()

    def test_an_unset_secret_variable_is_named(self, tmp_path):
        path = tmp_path / "sources.yml"
        path.write_text(ISSUE_FORM, encoding="utf-8")
        with pytest.raises(SourceConfigError, match="HANDBOOK_WEBHOOK_SECRET"):
            load_sources(path, env={})

    def test_missing_file_and_bad_yaml_are_named(self, tmp_path):
        with pytest.raises(SourceConfigError, match="SOURCEBOUND_SOURCES"):
            load_sources(tmp_path / "absent.yml")
        bad = tmp_path / "bad.yml"
        bad.write_text("sources: [\n", encoding="utf-8")
        with pytest.raises(SourceConfigError, match="not valid YAML"):
            load_sources(bad)

    def test_every_problem_is_listed_together(self):
        with pytest.raises(SourceConfigError) as raised:
            parse_sources(
                {
                    "sources": [
                        {"name": "bad name!", "type": "svn", "tenant_id": "acme", "tags": []},
                        {"name": "ok", "url": "file:///x", "tenant_id": "acme", "tags": ["a"], "colour": "red"},
                        {"name": "pub", "url": "file:///x", "tenant_id": "acme", "tags": ["a"], "scope": "user"},
                    ]
                }
            )
        message = str(raised.value)
        for expected in (
            "name must be", "type 'svn' is not supported", "url is required", "tags are required",
            "unknown fields colour", "scope 'user' needs a user_id",
        ):  # fmt: skip
            assert expected in message
        with pytest.raises(SourceConfigError, match="declared twice"):
            entry = {"name": "a", "url": "file:///x", "tenant_id": "acme", "tags": ["t"]}
            parse_sources({"sources": [entry, entry]})
        with pytest.raises(SourceConfigError, match="'sources:' list"):
            parse_sources({"source": []})


class TestGlobsAndIdentity:
    @pytest.mark.parametrize(
        ("glob", "path", "matched"),
        [
            ("**/*.md", "README.md", True),
            ("**/*.md", "docs/a/b.md", True),
            ("*.md", "docs/b.md", False),
            ("docs/**", "docs/a/b.yaml", True),
            ("docs/*.md", "docs/a/b.md", False),
            ("decisions/????-*.md", "decisions/0001-x.md", True),
            ("**/*.yaml", "spec.yml", False),
        ],
    )
    def test_glob(self, glob, path, matched):
        assert bool(glob_regex(glob).match(path)) is matched

    def test_include_exclude_and_stable_ids(self):
        source = parse_sources(
            {"sources": [{"name": "h", "url": "file:///x", "tenant_id": "acme", "tags": ["eng"],
                          "include": ["**/*.md"], "exclude": ["drafts/**"]}]}
        )["h"]  # fmt: skip
        assert source.matches("a/b.md") and not source.matches("drafts/b.md") and not source.matches("a.txt")
        assert source.document_id("a/b.md") == source.document_id("a/b.md") != source.document_id("a/c.md")
        public = parse_sources(
            {"sources": [{"name": "h", "url": "file:///x", "tenant_id": "acme", "tags": ["eng"], "scope": "public"}]}
        )["h"]
        assert public.document_id("a.md").startswith("public-doc-")
        assert source.access_meta() == {"tenant_id": "acme", "tags": ["eng"], "scope": "tenant"}


WEB_FORM = """
sources:
  - name: docs-site
    type: web
    start_urls: [https://docs.acme.internal/]
    allowed_domains: [docs.acme.internal]     # host or host:port
    max_depth: 3
    max_pages: 500
    tenant_id: acme
    tags: [eng]
"""


class TestWebSources:
    def test_the_issue_form_loads(self, tmp_path):
        path = tmp_path / "sources.yml"
        path.write_text(WEB_FORM, encoding="utf-8")
        source = load_sources(path, env={})["docs-site"]
        assert (source.type, source.tenant_id, source.tags) == ("web", "acme", ("eng",))
        crawl = source.crawl
        assert crawl.start_urls == ("https://docs.acme.internal/",)
        assert crawl.allowed_domains == ("docs.acme.internal",)
        assert (crawl.max_depth, crawl.max_pages, crawl.concurrency, crawl.requests_per_second) == (3, 500, 2, 5.0)
        assert crawl.robots_name == "sourcebound-crawler"
        # One page, one document: the id derives from the source and the canonical URL (A5).
        assert source.document_id("https://docs.acme.internal/a") != source.document_id("https://docs.acme.internal/b")

    def test_every_problem_is_named(self):
        with pytest.raises(SourceConfigError) as raised:
            parse_sources(
                {"sources": [
                    {"name": "a", "type": "web", "tenant_id": "acme", "tags": ["eng"]},
                    {"name": "b", "type": "web", "start_urls": ["file:///etc/passwd", "https://elsewhere.org/"],
                     "allowed_domains": ["docs.acme.internal"], "branch": "main", "max_pages": 0,
                     "max_depth": "deep", "requests_per_second": True, "tenant_id": "acme", "tags": ["eng"]},
                    {"name": "c", "type": "git", "url": "file:///r.git", "start_urls": ["https://x/"],
                     "tenant_id": "acme", "tags": ["eng"]},
                ]}
            )  # fmt: skip
        message = str(raised.value)
        for expected in (
            "source 'a': allowed_domains is required",
            "source 'a': start_urls is required",
            "source 'b': fields branch do not apply to a web source",
            "start URL file:///etc/passwd: scheme 'file' is not crawled",
            "start URL https://elsewhere.org/: elsewhere.org is outside allowed_domains",
            "max_pages must be between 1 and 1000000, got 0",
            "max_depth must be an integer",
            "requests_per_second must be a number",
            "source 'c': fields start_urls do not apply to a git source",
        ):
            assert expected in message, expected


class TestCrawlSource:
    def test_from_the_rag_standard_settings(self):
        env = {
            "RAG_CRAWL_START_URLS": "https://help.example.com/, http://127.0.0.1:8123/docs",
            "RAG_ALLOWLIST_DOMAINS": "help.example.com,127.0.0.1:8123",
            "RAG_MAX_PAGES": "40",
        }
        source = crawl_source(env)
        assert (source.name, source.type, source.tenant_id, source.tags) == ("crawl", "web", "default", ("web",))
        assert source.crawl.start_urls == ("https://help.example.com/", "http://127.0.0.1:8123/docs")
        assert source.crawl.allowed_domains == ("help.example.com", "127.0.0.1:8123")
        assert (source.crawl.max_pages, source.crawl.max_depth) == (40, 3)

    def test_without_an_allowlist_the_start_hosts_are_the_domains(self):
        source = crawl_source({"RAG_CRAWL_TENANT_ID": "acme", "RAG_CRAWL_TAGS": "help, all"}, ["http://localhost:81/a"])
        assert source.crawl.allowed_domains == ("localhost:81",)
        assert (source.tenant_id, source.tags) == ("acme", ("help", "all"))

    def test_problems_name_the_variables(self):
        with pytest.raises(SourceConfigError, match="set RAG_CRAWL_START_URLS"):
            crawl_source({})
        with pytest.raises(SourceConfigError, match="RAG_MAX_PAGES must be a whole number"):
            crawl_source({"RAG_CRAWL_START_URLS": "https://a.example/", "RAG_MAX_PAGES": "lots"})
        with pytest.raises(SourceConfigError, match="outside allowed_domains"):
            crawl_source({"RAG_CRAWL_START_URLS": "https://a.example/", "RAG_ALLOWLIST_DOMAINS": "b.example"})
