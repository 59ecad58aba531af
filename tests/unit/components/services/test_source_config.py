"""The sources YAML: env substitution, checks naming every problem, globs, stable document ids."""

import pytest

from components.services.source_config import SourceConfigError, glob_regex, load_sources, parse_sources

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
