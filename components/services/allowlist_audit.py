"""
What the domain allowlist (``RAG_ALLOWLIST_DOMAINS``, RAG Standard A4) now excludes from the index, and removing it
(docs/contract.md, "Sources").

The list is checked when a document is indexed and again when one is retrieved
(``components.filters.domain_allowlist_filter``), so a tightened list hides documents indexed before at once; this
service reports them (``sourcebound allowlist``) and removes them (``--remove``), so the index does not keep
what nobody may cite. It reads every chunk's meta once: an operator's command, not a request.

Usage:

```python
from components.services.allowlist_audit import excluded_documents

report = excluded_documents(store, "docs.example.com")
report["documents"][0]  # {'tenant_id': 'acme', 'document_id': '...', 'source_uri': 'https://old.example.org/a', ...}
```
"""

from collections import Counter
from typing import Any

from components.core.url_canonicalizer import DomainAllowlist, url_host

REMOVE_REASON = "outside_allowlist"


def excluded_documents(store: Any, allowed_domains: str | list[str] | None) -> dict[str, Any]:
    """
    The indexed documents whose ``source_uri`` is an http(s) URL outside ``allowed_domains``.

    :param store: The document store.
    :param allowed_domains: The allowlist (``RAG_ALLOWLIST_DOMAINS``); empty excludes nothing.
    :returns: ``{"allowed_domains", "documents": [{"tenant_id", "document_id", "source_uri", "chunks"}], "chunks",
        "hosts": {host: documents}}``, documents sorted by tenant and URI.
    """
    allowlist = DomainAllowlist(allowed_domains)
    found: dict[tuple[str, str], dict[str, Any]] = {}
    if allowlist:
        for chunk in store.filter_documents(None):
            meta = chunk.meta or {}
            uri = meta.get("source_uri")
            if not isinstance(uri, str) or allowlist.allows(uri):
                continue
            key = (str(meta.get("tenant_id")), str(meta.get("document_id")))
            entry = found.setdefault(key, {"tenant_id": key[0], "document_id": key[1], "source_uri": uri, "chunks": 0})
            entry["chunks"] += 1
    documents = sorted(found.values(), key=lambda entry: (entry["tenant_id"], entry["source_uri"]))
    return {
        "allowed_domains": list(allowlist.domains),
        "documents": documents,
        "chunks": sum(entry["chunks"] for entry in documents),
        "hosts": dict(sorted(Counter(url_host(entry["source_uri"]) or "" for entry in documents).items())),
    }


def remove_excluded(report: dict[str, Any], invalidate: Any) -> dict[str, int]:
    """
    Remove the documents of a :func:`excluded_documents` report.

    :param invalidate: ``invalidate(tenant_id, document_ids, reason)`` (the lifecycle's, or the request service's).
    :returns: ``{"documents", "chunks_removed"}``.
    """
    by_tenant: dict[str, list[str]] = {}
    for entry in report["documents"]:
        by_tenant.setdefault(entry["tenant_id"], []).append(entry["document_id"])
    documents = chunks = 0
    for tenant_id, ids in sorted(by_tenant.items()):
        outcome = invalidate(tenant_id, ids, REMOVE_REASON) or {}
        documents += int(outcome.get("invalidated") or 0)
        chunks += int(outcome.get("chunks_removed") or 0)
    return {"documents": documents, "chunks_removed": chunks}
