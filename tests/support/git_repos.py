"""Real git repositories for the source-sync tests: a working clone that commits and pushes to a bare remote."""

import hashlib
import hmac
import json
import os
import subprocess
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
}


def git(cwd: Path, *args: str) -> str:
    completed = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, env={**os.environ, **GIT_ENV}
    )
    return completed.stdout.strip()


class GitRepo:
    """A bare remote (served as a ``file://`` URL) and a working clone that commits to it."""

    def __init__(self, root: Path, branch: str = "main") -> None:
        self.root = root
        self.branch = branch
        self.remote = root / "remote.git"
        self.work = root / "work"
        root.mkdir(parents=True, exist_ok=True)
        git(root, "init", "--quiet", "--bare", f"--initial-branch={branch}", str(self.remote))
        git(root, "init", "--quiet", f"--initial-branch={branch}", str(self.work))
        git(self.work, "remote", "add", "origin", str(self.remote))

    @property
    def url(self) -> str:
        return self.remote.as_uri()

    def write(self, files: dict[str, str | bytes | None]) -> None:
        """Write (str/bytes) or delete (None) files in the working tree."""
        for path, content in files.items():
            target = self.work / path
            if content is None:
                git(self.work, "rm", "--quiet", path)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content, encoding="utf-8")

    def commit(self, files: dict[str, str | bytes | None], message: str = "change", push: bool = True) -> str:
        """Write the files, commit everything and push; returns the new commit id."""
        self.write(files)
        git(self.work, "add", "--all")
        git(self.work, "commit", "--quiet", "--allow-empty", "-m", message)
        if push:
            self.push()
        return self.head()

    def rename(self, old: str, new: str, message: str = "rename") -> str:
        (self.work / new).parent.mkdir(parents=True, exist_ok=True)
        git(self.work, "mv", old, new)
        return self.commit({}, message)

    def push(self, force: bool = False) -> None:
        git(self.work, "push", "--quiet", *(["--force"] if force else []), "origin", f"{self.branch}:{self.branch}")

    def head(self) -> str:
        return git(self.work, "rev-parse", "HEAD")

    def rewrite_history(self, keep: str, files: dict[str, str | bytes | None], message: str = "rewritten") -> str:
        """Reset to ``keep``, commit ``files`` on top and force-push: the old head leaves the branch's history."""
        git(self.work, "reset", "--quiet", "--hard", keep)
        head = self.commit(files, message, push=False)
        self.push(force=True)
        return head


def push_payload(
    repo: GitRepo,
    before: str,
    after: str,
    changed: dict[str, list[str]] | None = None,
    ref: str | None = None,
    forced: bool = False,
) -> bytes:
    """A push event body shaped like GitHub's (the fields sourcebound reads, and some it ignores)."""
    changed = changed or {}
    body = {
        "ref": ref or f"refs/heads/{repo.branch}",
        "before": before,
        "after": after,
        "forced": forced,
        "created": False,
        "deleted": False,
        "repository": {"full_name": "acme/handbook", "clone_url": repo.url, "default_branch": repo.branch},
        "pusher": {"name": "octocat"},
        "head_commit": {
            "id": after,
            "message": "change",
            "added": changed.get("added", []),
            "modified": changed.get("modified", []),
            "removed": changed.get("removed", []),
        },
        "commits": [
            {
                "id": after,
                "added": changed.get("added", []),
                "modified": changed.get("modified", []),
                "removed": changed.get("removed", []),
            }
        ],
    }
    return json.dumps(body).encode()


def github_signature(secret: str, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` value GitHub sends: ``sha256=`` and the hex HMAC-SHA256 of the raw body."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
