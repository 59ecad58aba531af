"""
A local bare mirror of one branch of a git repository, driven through the ``git`` binary.

Every operation is one ``git`` command with arguments as a list (no shell), prompts disabled, and
paths read NUL-separated, so a file name with spaces or newlines is read as it is.

* :meth:`GitMirror.fetch` creates the bare repository on first use and force-fetches the branch
  (a force-push moves the ref back or sideways; :meth:`is_ancestor` then says so);
* :meth:`changes` lists what changed between two commits, renames detected (``git diff --raw -M``);
* :meth:`tree` lists every file of a commit with its blob id (``git ls-tree -r``);
* :meth:`read_blobs` reads many blobs in one ``git cat-file --batch`` process.

Usage:

```python
from components.services.git_mirror import GitMirror

mirror = GitMirror("data/sources/handbook.git", "file:///srv/git/handbook.git", "main")
head = mirror.fetch()
mirror.tree(head)  # {'README.md': '3b18e5…', ...}
```
"""

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

from components.core.errors import SourceboundError
from components.core.url_credentials import redact_url_credentials, strip_userinfo

GIT_TIMEOUT_S = 600
_NO_PROMPT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "SSH_ASKPASS": "true", "LC_ALL": "C"}
_BLOB_MODES = ("100644", "100755")  # symlinks (120000) and submodules (160000) are not files to index


class GitError(SourceboundError, RuntimeError):
    """A git command failed; the message has git's own words and the command."""


@dataclass(frozen=True)
class Change:
    """One changed path between two commits: ``status`` A, M, D, R (rename), C (copy) or T (type)."""

    status: str
    path: str
    blob: str | None
    old_path: str | None = None


def git_available() -> bool:
    """Whether a ``git`` binary can be run."""
    try:
        return subprocess.run(["git", "--version"], capture_output=True, check=False).returncode == 0  # noqa: S607
    except OSError:
        return False


class GitMirror:
    """
    A bare mirror of ``branch`` of ``url`` at ``path``.

    :param path: The bare repository folder (created on the first fetch).
    :param url: The clone URL (``https://``, ``ssh://``, ``git@host:`` or ``file://``).
    :param branch: The branch to follow.
    """

    def __init__(self, path: str | Path, url: str, branch: str) -> None:
        self.path = Path(path)
        self.url = url
        self.branch = branch

    def _git(self, *args: str, input_bytes: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess:
        command = ["git", "-C", str(self.path), *args]
        try:
            completed = subprocess.run(  # noqa: S603 - fixed binary, arguments as a list
                command,
                input=input_bytes,
                capture_output=True,
                check=False,
                timeout=GIT_TIMEOUT_S,
                env={**os.environ, **_NO_PROMPT_ENV},
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            # The command line holds the clone URL: its credentials stay out of the message (contract, Sources).
            raise GitError(redact_url_credentials(f"git {args[0]} could not run: {error}")) from None
        if check and completed.returncode != 0:
            message = redact_url_credentials(completed.stderr.decode("utf-8", "replace").strip())
            raise GitError(f"git {' '.join(args[:2])} failed ({completed.returncode}): {message}")
        return completed

    def fetch(self) -> str:
        """
        Bring the mirror's branch to the remote's head and return that commit id.

        :raises GitError: If the remote cannot be read or has no such branch.
        """
        if not (self.path / "HEAD").exists():
            self.path.mkdir(parents=True, exist_ok=True)
            self._git("init", "--quiet", "--bare")
        ref = f"refs/heads/{self.branch}"
        self._git("fetch", "--quiet", "--force", "--no-tags", "--", self.url, f"+{ref}:{ref}")
        return self.resolve(ref)

    def resolve(self, ref: str) -> str:
        """The commit id a ref names."""
        return self._git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").stdout.decode().strip()

    def has_commit(self, sha: str) -> bool:
        return self._git("cat-file", "-e", f"{sha}^{{commit}}", check=False).returncode == 0

    def is_ancestor(self, older: str, newer: str) -> bool:
        """Whether ``older`` is in ``newer``'s history (false after a force-push rewrote it, or if unknown)."""
        if not self.has_commit(older):
            return False
        return self._git("merge-base", "--is-ancestor", older, newer, check=False).returncode == 0

    def commit_time(self, sha: str) -> str:
        """The committer date of a commit, ISO 8601 with its offset."""
        return self._git("show", "-s", "--format=%cI", sha).stdout.decode().strip()

    def changes(self, older: str, newer: str) -> list[Change]:
        """What changed from ``older`` to ``newer`` (renames detected)."""
        out = self._git("diff", "--raw", "-z", "-M", "--no-abbrev", older, newer).stdout.decode(
            "utf-8", "surrogateescape"
        )
        fields = out.split("\0")
        changes, index = [], 0
        while index < len(fields) and fields[index].startswith(":"):
            _old_mode, new_mode, _old_blob, new_blob, status = fields[index][1:].split(" ")
            kind = status[0]
            if kind in ("R", "C"):
                old_path, path = fields[index + 1], fields[index + 2]
                index += 3
            else:
                old_path, path = None, fields[index + 1]
                index += 2
            blob = new_blob if kind != "D" and new_mode in _BLOB_MODES else None
            changes.append(Change(kind, path, blob, old_path))
        return changes

    def tree(self, sha: str) -> dict[str, str]:
        """Every regular file of a commit: ``path -> blob id``."""
        out = self._git("ls-tree", "-r", "-z", "--full-tree", sha).stdout.decode("utf-8", "surrogateescape")
        files = {}
        for entry in out.split("\0"):
            if not entry:
                continue
            info, _, path = entry.partition("\t")
            mode, kind, blob = info.split(" ")
            if kind == "blob" and mode in _BLOB_MODES:
                files[path] = blob
        return files

    def blob_sizes(self, blobs: list[str]) -> dict[str, int]:
        """The sizes of many blobs in bytes (``git cat-file --batch-check``), without reading them."""
        if not blobs:
            return {}
        unique = list(dict.fromkeys(blobs))
        out = self._git("cat-file", "--batch-check", input_bytes="".join(f"{blob}\n" for blob in unique).encode())
        sizes = {}
        for line in out.stdout.decode().splitlines():
            parts = line.split(" ")
            if len(parts) == 3 and parts[1] == "blob":
                sizes[parts[0]] = int(parts[2])
        return sizes

    def read_blobs(self, blobs: list[str]) -> dict[str, bytes]:
        """The contents of many blobs, read in one ``git cat-file --batch``."""
        if not blobs:
            return {}
        unique = list(dict.fromkeys(blobs))
        out = self._git("cat-file", "--batch", input_bytes="".join(f"{blob}\n" for blob in unique).encode()).stdout
        contents, position = {}, 0
        for blob in unique:
            header_end = out.index(b"\n", position)
            header = out[position:header_end].decode().split(" ")
            if len(header) < 3 or header[1] != "blob":
                raise GitError(f"git cat-file could not read blob {blob}: {' '.join(header)}")
            size = int(header[2])
            contents[header[0]] = out[header_end + 1 : header_end + 1 + size]
            position = header_end + 1 + size + 1
        return contents


def web_file_url(remote: str, commit: str, path: str, web_url: str | None = None) -> str:
    """
    The link a person opens for ``path`` at ``commit``: the GitHub or GitLab page for those remotes (or a
    configured ``web_url``, GitHub-style), else the remote URL and the path.
    """
    quoted = quote(path)
    # A clone URL may carry a deploy token; the link every result shows must not (docs/contract.md, "Sources").
    remote, web_url = strip_userinfo(remote), strip_userinfo(web_url) if web_url else web_url
    if web_url:
        base, host = web_url.rstrip("/"), urlsplit(web_url).hostname or ""
    else:
        base, host = _web_base(remote)
    if base and "gitlab" in host:
        return f"{base}/-/blob/{commit}/{quoted}"
    if base and (host == "github.com" or web_url):
        return f"{base}/blob/{commit}/{quoted}"
    return f"{remote.rstrip('/')}/{quoted}"


def _web_base(remote: str) -> tuple[str | None, str]:
    """``(https://host/owner/repo, host)`` of a GitHub or GitLab clone URL, else ``(None, host)``."""
    remote = remote.strip()
    if "://" not in remote and ":" in remote and "@" in remote.split(":", 1)[0]:
        user_host, _, repo_path = remote.partition(":")  # scp-like git@github.com:acme/handbook.git
        host = user_host.rpartition("@")[2].lower()
    else:
        parts = urlsplit(remote)
        if parts.scheme not in ("http", "https", "ssh", "git"):
            return None, ""
        host, repo_path = (parts.hostname or "").lower(), parts.path
    repo_path = repo_path.strip("/").removesuffix(".git")
    if host in ("github.com", "gitlab.com") or "gitlab" in host:
        return f"https://{host}/{repo_path}", host
    return None, host
