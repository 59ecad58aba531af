"""
``DomainAllowlistFilter``: the domain allowlist checked again at answer time (RAG Standard A4; docs/contract.md,
"Sources").

``RAG_ALLOWLIST_DOMAINS`` is applied when a document is indexed (``DocumentIdentifier``); a document indexed
before the list was tightened would stay citable. This filter sits after the access guard in the search, RAG and
enrichment pipelines and drops every retrieved chunk whose ``source_uri`` is an http(s) URL outside the list, so
neither search results nor citations nor enrichment context can name it. Chunks without a web address (uploads,
raw text, ``file://``) have no domain and pass; an empty list passes everything. ``sourcebound allowlist`` reports
(and with ``--remove`` removes) what the list now excludes.

The check costs one dictionary look-up per chunk once a ``source_uri`` has been seen (the decision is cached per
URI, up to :data:`CACHE_LIMIT` entries).

Usage:

```python
from components.filters.domain_allowlist_filter import DomainAllowlistFilter

allowlist = DomainAllowlistFilter(allowed_domains="docs.example.com,example.org")
kept = allowlist.run(documents=retrieved)["documents"]
```
"""

import logging
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.core.span_tags import documents_in_out, tag_span
from components.core.url_canonicalizer import DomainAllowlist

logger = logging.getLogger(__name__)

CACHE_LIMIT = 65_536


@component
class DomainAllowlistFilter:
    """Drops retrieved chunks whose web address is outside the allowed domains."""

    # run() changes none of its inputs and keeps none of them (the decision cache holds URI strings only): the
    # planned pipeline passes them without a defensive copy (docs/contract.md, "Pipeline runs").
    reads_inputs_only = True

    def __init__(self, allowed_domains: list[str] | str | None = None) -> None:
        """
        Create the filter.

        :param allowed_domains: Domains (and their subdomains) or ``host:port`` entries, as a list or a
            comma-separated string (``RAG_ALLOWLIST_DOMAINS``); empty allows every document.
        """
        if allowed_domains is not None and not isinstance(allowed_domains, str | list):
            raise ValueError("allowed_domains must be a list of domains or a comma-separated string")
        self.allowed_domains = allowed_domains
        self._allowlist = DomainAllowlist(allowed_domains)
        self._decisions: dict[str, bool] = {}
        self._warned = False

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self, allowed_domains=self.allowed_domains)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DomainAllowlistFilter":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    def allows(self, document: Document) -> bool:
        """Whether ``document`` may be returned and cited (its ``source_uri`` is inside the list, or not a URL)."""
        uri = (document.meta or {}).get("source_uri")
        if not isinstance(uri, str):
            return True
        decision = self._decisions.get(uri)
        if decision is None:
            decision = self._allowlist.allows(uri)
            if len(self._decisions) >= CACHE_LIMIT:
                self._decisions.clear()
            self._decisions[uri] = decision
        return decision

    @component.output_types(documents=list[Document], excluded=int)
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """
        Keep the chunks inside the allowlist.

        :param documents: Retrieved chunks, in rank order.
        :returns: ``documents``: the allowed ones, order kept; ``excluded``: how many were dropped.
        """
        kept = [document for document in documents if self.allows(document)] if self._allowlist else documents
        excluded = len(documents) - len(kept)
        if excluded and not self._warned:
            self._warned = True  # once per process: the index holds what the list excludes until it is removed
            dropped = next(document for document in documents if not self.allows(document))
            logger.warning(
                "The index holds documents outside RAG_ALLOWLIST_DOMAINS (such as %s); they are not returned or "
                "cited. `sourcebound allowlist` counts them and `sourcebound allowlist --remove` removes them.",
                dropped.meta.get("source_uri"),
            )
        tag_span(documents_in_out(documents, kept), {"sourcebound.allowlist.excluded": excluded})
        return {"documents": kept, "excluded": excluded}
