"""
Sources declared in YAML (``SOURCEBOUND_SOURCES``): where documents come from and what access they get.

The file is env-substituted like the pipeline YAML (``${NAME}``, ``${NAME:-default}``), then checked
as a whole; every problem is named in one :class:`SourceConfigError`. Each source has a ``type``;
``git`` is the one implemented, and the loader refuses an unknown type by name, so a later type
(websites) is one more entry in :data:`SOURCE_TYPES`.

The tenant, tags and scope of a source's documents come from this server-side file only
(docs/contract.md, "Sources"): nothing a webhook sends can change them.

```yaml
sources:
  - name: handbook
    type: git
    url: file:///srv/git/handbook.git      # or https://github.com/acme/handbook.git
    branch: main
    include: ['**/*.md', '**/*.yaml']
    exclude: ['drafts/**']
    tenant_id: acme
    tags: [eng]
    scope: tenant                          # tenant (default), user, project or public
    webhook_secret: ${HANDBOOK_WEBHOOK_SECRET}
    web_url: https://git.acme.example/eng/handbook   # optional: links for a self-hosted forge (GitHub-style)
```

Usage:

```python
from components.services.source_config import load_sources

sources = load_sources("sources.yml")
sources["handbook"].matches("docs/guide.md")  # True
```
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from components.core.document_identity import (
    DEFAULT_SCOPE,
    PUBLIC_ID_PREFIX,
    PUBLIC_SCOPE,
    access_meta_problems,
    derive_document_id,
    normalise_tags,
)
from components.core.errors import SourceboundError
from components.services.pipeline_loader import PipelineConfigError, resolve_references

SOURCE_TYPES = ("git",)
DEFAULT_INCLUDE = ("**/*",)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_FIELDS = frozenset(
    {
        "name", "type", "url", "branch", "include", "exclude", "tenant_id", "tags", "scope", "user_id",
        "project_id", "webhook_secret", "web_url",
    }
)  # fmt: skip


class SourceConfigError(SourceboundError, ValueError):
    """The sources file cannot be used; the message names every problem and the file."""


def glob_regex(pattern: str) -> re.Pattern:
    """
    A path glob as a regex over ``/``-separated repository paths: ``**`` spans folders (``**/`` also
    none), ``*`` and ``?`` stay within one folder.
    """
    out, index = [], 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif pattern.startswith("**", index):
            out.append(".*")
            index += 2
        elif pattern[index] == "*":
            out.append("[^/]*")
            index += 1
        elif pattern[index] == "?":
            out.append("[^/]")
            index += 1
        else:
            out.append(re.escape(pattern[index]))
            index += 1
    return re.compile("^" + "".join(out) + "$")


@dataclass(frozen=True)
class SourceConfig:
    """One declared source; see the module docstring for the fields."""

    name: str
    type: str
    url: str
    tenant_id: str
    tags: tuple[str, ...]
    branch: str = "main"
    include: tuple[str, ...] = DEFAULT_INCLUDE
    exclude: tuple[str, ...] = ()
    scope: str = DEFAULT_SCOPE
    user_id: str | None = None
    project_id: str | None = None
    webhook_secret: str | None = field(default=None, repr=False)
    web_url: str | None = None

    def matches(self, path: str) -> bool:
        """Whether a repository path passes the include and exclude globs."""
        return any(glob_regex(glob).match(path) for glob in self.include) and not any(
            glob_regex(glob).match(path) for glob in self.exclude
        )

    def document_id(self, path: str) -> str:
        """The stable ``document_id`` of a file: derived from the source's name and the path."""
        document_id = derive_document_id(self.tenant_id, f"source:{self.name}:{path}")
        return PUBLIC_ID_PREFIX + document_id if self.scope == PUBLIC_SCOPE else document_id

    def access_meta(self) -> dict[str, Any]:
        """The access fields every document of this source gets."""
        meta: dict[str, Any] = {"tenant_id": self.tenant_id, "tags": list(self.tags), "scope": self.scope}
        if self.user_id:
            meta["user_id"] = self.user_id
        if self.project_id:
            meta["project_id"] = self.project_id
        return meta


def _string_list(value: Any, label: str, problems: list[str], default: tuple[str, ...]) -> tuple[str, ...]:
    if value is None:
        return default
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        problems.append(f"{label} must be a list of non-empty strings")
        return default
    return tuple(item.strip() for item in value)


def parse_source(raw: Any, position: int, problems: list[str]) -> SourceConfig | None:
    """One entry of ``sources:`` as a :class:`SourceConfig`, or ``None`` with its problems appended."""
    if not isinstance(raw, Mapping):
        problems.append(f"source #{position + 1} must be a mapping with name, type, url, tenant_id and tags")
        return None
    label = f"source {raw.get('name')!r}" if raw.get("name") else f"source #{position + 1}"
    found: list[str] = []
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        found.append(f"unknown fields {', '.join(unknown)} (known: {', '.join(sorted(_FIELDS))})")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        found.append("name must be 1-64 letters, digits, '.', '_' or '-' (it appears in webhook URLs)")
    kind = raw.get("type", "git")
    if kind not in SOURCE_TYPES:
        found.append(f"type {kind!r} is not supported; use one of {', '.join(SOURCE_TYPES)}")
    url = raw.get("url")
    if not isinstance(url, str) or not url.strip():
        found.append("url is required (the clone URL)")
    branch = raw.get("branch", "main")
    if not isinstance(branch, str) or not branch.strip() or branch.startswith("-") or ".." in branch:
        found.append("branch must be a branch name")
    found.extend(
        access_meta_problems({key: raw.get(key) for key in ("tenant_id", "tags", "scope", "user_id", "project_id")})
    )
    secret = raw.get("webhook_secret")
    if secret is not None and (not isinstance(secret, str) or not secret):
        found.append("webhook_secret must be a non-empty string (or left out: then the GitHub webhook is refused)")
    web_url = raw.get("web_url")
    if web_url is not None and (not isinstance(web_url, str) or not web_url.startswith(("http://", "https://"))):
        found.append("web_url must be an http(s) URL")
    include = _string_list(raw.get("include"), "include", found, DEFAULT_INCLUDE)
    exclude = _string_list(raw.get("exclude"), "exclude", found, ())
    if found:
        problems.extend(f"{label}: {problem}" for problem in found)
        return None
    return SourceConfig(
        name=name,
        type=kind,
        url=url.strip(),
        tenant_id=raw["tenant_id"],
        tags=tuple(normalise_tags(raw["tags"]) or ()),
        branch=branch.strip(),
        include=include,
        exclude=exclude,
        scope=raw.get("scope") or DEFAULT_SCOPE,
        user_id=raw.get("user_id"),
        project_id=raw.get("project_id"),
        webhook_secret=secret,
        web_url=web_url.rstrip("/") if web_url else None,
    )


def parse_sources(data: Any, origin: str = "the sources file") -> dict[str, SourceConfig]:
    """
    Check a parsed sources document (``{"sources": [...]}``).

    :returns: The sources by name, in file order.
    :raises SourceConfigError: Naming every problem.
    """
    problems: list[str] = []
    if not isinstance(data, Mapping) or not isinstance(data.get("sources"), list):
        raise SourceConfigError(f"{origin} must hold a 'sources:' list")
    sources: dict[str, SourceConfig] = {}
    for position, raw in enumerate(data["sources"]):
        source = parse_source(raw, position, problems)
        if source is None:
            continue
        if source.name in sources:
            problems.append(f"source {source.name!r} is declared twice")
            continue
        sources[source.name] = source
    if problems:
        raise SourceConfigError(f"{origin} has problems:\n" + "\n".join(f"- {problem}" for problem in problems))
    return sources


def load_sources(path: str | Path, env: Mapping[str, str] | None = None) -> dict[str, SourceConfig]:
    """
    Read, env-substitute and check a sources YAML file.

    :param path: The file (``SOURCEBOUND_SOURCES``).
    :param env: Variables for ``${...}`` references; defaults to ``os.environ``.
    :raises SourceConfigError: If the file is missing, not YAML, references an unset variable or has bad entries.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise SourceConfigError(f"Cannot read the sources file {path} (SOURCEBOUND_SOURCES): {error}") from error
    try:
        data = yaml.safe_load(resolve_references(text, env))
    except PipelineConfigError as error:
        raise SourceConfigError(f"{path}: {str(error).replace('Pipeline YAML', 'The sources file')}") from error
    except yaml.YAMLError as error:
        raise SourceConfigError(f"{path} is not valid YAML: {error}") from error
    return parse_sources(data, str(path))
