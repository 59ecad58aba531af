"""
The documents of a tenant as an operator sees them (``GET /documents``, the console's documents panel), and which
of them are stale (docs/contract.md, "Feedback and knowledge gaps"):

* **not re-indexed**: written more than ``SOURCEBOUND_STALE_AFTER_DAYS`` ago (the chunks' ``indexed_at``; a
  document indexed before chunks carried it counts as not re-indexed);
* **source changed** / **source missing**: a document indexed from a file (``file://`` ``source_uri``) inside one
  of ``SOURCEBOUND_STALE_SOURCE_DIRS`` whose bytes no longer hash to its ``source_hash``, or that is gone. Only
  those folders are read: a ``source_uri`` is caller-supplied text, and the server must not become a way to ask
  whether some other file exists.

Private documents (``user`` and ``project`` scope) of other users are counted, never listed: an operator manages
the tenant's documents, not its people's private ones (docs/contract.md, "Access rule").

Usage:

```python
from components.services.document_catalog import StaleRule, document_catalog

catalog = document_catalog(store, "acme", StaleRule(max_age_days=180), viewer_user_id=None)
catalog["documents"][0]  # {"document_id", "title", "source", "chunks", "language", "indexed_at", "stale", ...}
```
"""

import hashlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from components.core.document_identity import tenant_filter

STALE_REASONS = ("not_reindexed", "source_changed", "source_missing")
# Files above this are not re-hashed (their staleness is then judged by age alone).
MAX_HASHED_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class StaleRule:
    """
    When a document is stale.

    :param max_age_days: Not re-indexed for this many days (0: age never makes a document stale).
    :param source_dirs: Folders whose ``file://`` sources are re-hashed (resolved paths).
    """

    max_age_days: int = 180
    source_dirs: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        if self.max_age_days < 0:
            raise ValueError(f"max_age_days must be >= 0, got {self.max_age_days}")


def chunk_meta(store: Any, filters: dict[str, Any] | None) -> Iterator[dict[str, Any]]:
    """Every matching chunk's meta: the store's vector-free scan when it has one, else its documents."""
    scan = getattr(store, "filter_meta", None)
    if callable(scan):
        yield from scan(filters)
        return
    for document in store.filter_documents(filters):
        yield dict(document.meta or {})


def _file_path(source_uri: Any, roots: tuple[Path, ...]) -> Path | None:
    """The local file a ``file://`` source names, when it lies inside one of ``roots`` (symlinks resolved)."""
    if not roots or not isinstance(source_uri, str) or not source_uri.startswith("file://"):
        return None
    path = Path(os.path.realpath(unquote(urlparse(source_uri).path)))
    return path if any(path.is_relative_to(root) for root in roots) else None


def _source_state(meta: dict[str, Any], roots: tuple[Path, ...]) -> str | None:
    """``source_changed``, ``source_missing`` or ``None`` (unchanged, or not a file this rule reads)."""
    path = _file_path(meta.get("source_uri"), roots)
    if path is None:
        return None
    try:
        if path.stat().st_size > MAX_HASHED_BYTES:
            return None
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return "source_missing"
    except OSError:
        return None
    return None if digest == meta.get("source_hash") else "source_changed"


def stale_reasons(document: dict[str, Any], rule: StaleRule, now: datetime) -> list[str]:
    """Why a catalog entry is stale (empty: it is not)."""
    reasons = []
    if rule.max_age_days:
        indexed = document.get("indexed_at")
        try:
            indexed_at = datetime.fromisoformat(indexed) if isinstance(indexed, str) else None
        except ValueError:
            indexed_at = None
        if indexed_at is None or indexed_at < now - timedelta(days=rule.max_age_days):
            reasons.append("not_reindexed")
    source = _source_state(document, rule.source_dirs)
    if source is not None:
        reasons.append(source)
    return reasons


def _source_label(meta: dict[str, Any]) -> str:
    """Where a document came from, as an operator reads it; an upload's server-side path is never shown."""
    if meta.get("source_name") and meta.get("source_path"):
        return f"{meta['source_name']}:{meta['source_path']}"
    uri = meta.get("source_uri")
    if isinstance(uri, str) and uri.lower().startswith(("http://", "https://")):
        return uri
    if isinstance(uri, str) and uri.startswith("file://"):
        return Path(unquote(urlparse(uri).path)).name  # the file's name, not where the server keeps it
    return meta.get("source_type") or "text"


def _entries(metas: Iterable[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """One entry per (tenant, document) of the chunks' metas (only the documents are held, not the chunks)."""
    documents: dict[tuple[str, str], dict[str, Any]] = {}
    for meta in metas:
        document_id = str(meta.get("document_id"))
        key = (str(meta.get("tenant_id")), document_id)
        entry = documents.get(key)
        if entry is None:
            entry = documents[key] = {
                "tenant_id": key[0],
                "document_id": document_id,
                "title": meta.get("document_name") or document_id,
                "source": _source_label(meta),
                "source_type": meta.get("source_type"),
                "source_uri": meta.get("source_uri"),
                "source_hash": meta.get("source_hash"),
                "scope": meta.get("scope"),
                "user_id": meta.get("user_id"),
                "tags": set(),
                "languages": set(),
                "chunks": 0,
                "updated_at": meta.get("source_updated_at"),
                "indexed_at": meta.get("indexed_at"),
                "verified": True,
                "tainted": False,
            }
        entry["chunks"] += 1
        entry["tags"].update(meta.get("tags") or [])
        if meta.get("language"):
            entry["languages"].add(meta["language"])
        # Flags are set per document on every chunk; a partly flagged document shows as the weaker state.
        entry["verified"] = entry["verified"] and bool(meta.get("verified"))
        entry["tainted"] = entry["tainted"] or bool(meta.get("tainted"))
        if (meta.get("indexed_at") or "") < (entry["indexed_at"] or ""):
            entry["indexed_at"] = meta.get("indexed_at")  # the oldest chunk decides
    return documents


def document_catalog(
    store: Any,
    tenant_id: str,
    rule: StaleRule,
    *,
    viewer_user_id: str | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """
    The tenant's documents with their chunk counts, languages, times, flags and staleness.

    :param store: The document store.
    :param tenant_id: The tenant.
    :param rule: When a document is stale.
    :param viewer_user_id: The operator's own user: their private documents are listed, other users' only counted.
    :param now: The time staleness is measured at (default: now).
    :returns: ``{"tenant_id", "documents": [...] (by title), "private_documents_hidden": n,
        "stale": {reason: n}}``; each document ``{"document_id", "title", "source", "source_type", "scope",
        "tags", "languages", "chunks", "updated_at", "indexed_at", "verified", "tainted", "stale": [reasons]}``.
    """
    now = now or datetime.now(UTC)
    documents = _entries(chunk_meta(store, tenant_filter(tenant_id)))
    listed, hidden = [], 0
    for entry in documents.values():
        if entry["scope"] in ("user", "project") and entry["user_id"] != viewer_user_id:
            hidden += 1
            continue
        entry["stale"] = stale_reasons(entry, rule, now)
        entry["tags"] = sorted(entry["tags"])
        entry["languages"] = sorted(entry["languages"])
        for private in ("tenant_id", "source_uri", "source_hash", "user_id"):
            entry.pop(private)
        listed.append(entry)
    listed.sort(key=lambda entry: (str(entry["title"]).lower(), entry["document_id"]))
    stale = {reason: sum(reason in entry["stale"] for entry in listed) for reason in STALE_REASONS}
    return {"tenant_id": tenant_id, "documents": listed, "private_documents_hidden": hidden, "stale": stale}


def stale_counts(store: Any, rule: StaleRule, now: datetime | None = None) -> dict[str, dict[str, int]]:
    """
    Per tenant, how many documents are stale for each reason (every document, private ones included): the
    ``rag_stale_documents`` gauge, refreshed on the records-pruning schedule.
    """
    now = now or datetime.now(UTC)
    counts: dict[str, dict[str, int]] = {}
    for (tenant, _document), entry in sorted(_entries(chunk_meta(store, None)).items()):
        tenant_counts = counts.setdefault(tenant, dict.fromkeys(STALE_REASONS, 0))
        for reason in stale_reasons(entry, rule, now):
            tenant_counts[reason] += 1
    return counts
