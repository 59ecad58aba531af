"""The git mirror over the real git binary: fetch, force-push detection, renames, trees, blobs, web links."""

import os

import pytest
from support.git_repos import GitRepo

from components.services.git_mirror import GitError, GitMirror, web_file_url

pytestmark = pytest.mark.unit


@pytest.fixture
def repo(tmp_path):
    return GitRepo(tmp_path / "repo")


class TestGitMirror:
    def test_fetch_tree_and_blobs(self, repo, tmp_path):
        first = repo.commit({"a.md": "# A\n", "docs/b name.yaml": "k: v\n", "bin.sh": "echo\n"})
        mirror = GitMirror(tmp_path / "mirror.git", repo.url, "main")
        assert mirror.fetch() == first
        tree = mirror.tree(first)
        assert sorted(tree) == ["a.md", "bin.sh", "docs/b name.yaml"]
        blobs = mirror.read_blobs([tree["a.md"], tree["docs/b name.yaml"]])
        assert blobs == {tree["a.md"]: b"# A\n", tree["docs/b name.yaml"]: b"k: v\n"}
        assert mirror.commit_time(first).startswith("20")

    def test_changes_with_rename_delete_and_force_push(self, repo, tmp_path):
        body = "# Guide\n\n" + "A long enough paragraph so git sees the rename. " * 5
        first = repo.commit({"guide.md": body, "old.md": "# Old\n", "keep.md": "# Keep\n"})
        mirror = GitMirror(tmp_path / "mirror.git", repo.url, "main")
        mirror.fetch()
        repo.rename("guide.md", "docs/guide.md")
        second = repo.commit({"old.md": None, "keep.md": "# Keep, edited\n", "new.md": "# New\n"})
        assert mirror.fetch() == second and mirror.is_ancestor(first, second)
        changes = {(change.status, change.path, change.old_path) for change in mirror.changes(first, second)}
        assert changes == {
            ("R", "docs/guide.md", "guide.md"), ("D", "old.md", None), ("M", "keep.md", None), ("A", "new.md", None),
        }  # fmt: skip
        rewritten = repo.rewrite_history(first, {"other.md": "# Other\n"})
        assert mirror.fetch() == rewritten
        assert not mirror.is_ancestor(second, rewritten) and mirror.is_ancestor(first, rewritten)
        assert not mirror.is_ancestor("0" * 40, rewritten)

    def test_a_missing_branch_or_remote_is_a_git_error(self, repo, tmp_path):
        repo.commit({"a.md": "# A\n"})
        with pytest.raises(GitError, match="fetch"):
            GitMirror(tmp_path / "m1.git", repo.url, "no-such-branch").fetch()
        with pytest.raises(GitError):
            GitMirror(tmp_path / "m2.git", (tmp_path / "absent.git").as_uri(), "main").fetch()


class TestWebFileUrl:
    @pytest.mark.parametrize(
        ("remote", "expected"),
        [
            ("https://github.com/acme/handbook.git", "https://github.com/acme/handbook/blob/abc/docs/a%20b.md"),
            ("git@github.com:acme/handbook.git", "https://github.com/acme/handbook/blob/abc/docs/a%20b.md"),
            ("ssh://git@github.com/acme/handbook.git", "https://github.com/acme/handbook/blob/abc/docs/a%20b.md"),
            (
                "https://gitlab.com/acme/eng/handbook.git",
                "https://gitlab.com/acme/eng/handbook/-/blob/abc/docs/a%20b.md",
            ),
            ("file:///srv/git/handbook.git", "file:///srv/git/handbook.git/docs/a%20b.md"),
        ],
    )
    def test_links(self, remote, expected):
        assert web_file_url(remote, "abc", "docs/a b.md") == expected

    def test_links_never_carry_the_clone_urls_credentials(self):
        link = web_file_url("https://deploy:TOKEN@git.example/acme/handbook.git", "abc", "a.md")
        assert link == "https://git.example/acme/handbook.git/a.md"
        github = web_file_url("https://x-access-token:TOKEN@github.com/acme/handbook.git", "abc", "a.md")
        assert github == "https://github.com/acme/handbook/blob/abc/a.md"

    def test_git_errors_never_quote_the_credentials(self, tmp_path, monkeypatch):
        # A git that quotes its whole command line in its error (older versions and some helpers do).
        fake = tmp_path / "bin" / "git"
        fake.parent.mkdir()
        fake.write_text('#!/bin/sh\ncase "$*" in *fetch*) echo "fatal: could not read from $*" >&2; exit 128;; esac\n')
        fake.chmod(0o755)
        monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
        mirror = GitMirror(tmp_path / "m.git", "http://deploy:TOKEN@git.example/acme/handbook.git", "main")
        with pytest.raises(GitError) as raised:
            mirror.fetch()
        assert "git.example/acme/handbook.git" in str(raised.value)
        assert "TOKEN" not in str(raised.value) and "deploy" not in str(raised.value)

    def test_configured_web_url(self):
        assert (
            web_file_url("file:///srv/git/h.git", "abc", "a.md", "https://git.acme.example/eng/h")
            == "https://git.acme.example/eng/h/blob/abc/a.md"
        )
