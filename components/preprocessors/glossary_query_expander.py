"""
Expands a query with the aliases of the requester's tenant glossary (docs/contract.md, "Glossary").

The query's glossary phrases (a term or any of its aliases, matched as normalised word sequences by
:class:`components.core.vocabulary.Vocabulary`) pull in the other phrases of the same term: "How many
days of PTO do I get?" with ``PTO -> paid time off | vacation days`` becomes the keyword query "How
many days of PTO do I get? paid time off vacation days". The keyword (BM25) side always gets the
expansion; the dense side only with ``expand_dense`` (a long list of synonyms can pull an embedding off
its topic). ``glossary_terms`` lists the matched canonical terms for the response metadata.

The tenant is a pipeline input fed from the server-side identity, never from the request body, and the
vocabulary is read for that tenant only, so one tenant's glossary never changes another's queries. A
tenant without a glossary (or no glossary file at all) gets its query unchanged. Vocabularies are
cached per tenant and re-read when the stored digest changes, so a glossary loaded by the CLI or the
admin endpoint applies to the next query.

Usage:

```python
from components.preprocessors.glossary_query_expander import GlossaryQueryExpander

expander = GlossaryQueryExpander(glossary_path="data/glossary.sqlite")
out = expander.run(query="How much PTO do I get?", tenant_id="acme")
out["keyword_query"], out["dense_query"], out["glossary_terms"]
```
"""

import threading
from pathlib import Path
from typing import Any

from haystack import component, default_from_dict, default_to_dict

from components.core.span_tags import tag_span
from components.core.vocabulary import Vocabulary
from components.stores.glossary_store import GlossaryStore


@component
class GlossaryQueryExpander:
    """Adds the aliases of matched glossary terms to the keyword query (and optionally the dense one)."""

    def __init__(self, glossary_path: str, expand_dense: bool = False, max_added_phrases: int = 20) -> None:
        """
        Create the expander.

        :param glossary_path: The SQLite glossary file (``$SOURCEBOUND_DATA_DIR/glossary.sqlite``); it may not
            exist yet (no tenant has a glossary).
        :param expand_dense: Also add the aliases to the text the dense embedder sees.
        :param max_added_phrases: Cap on phrases added to one query (1..200).
        :raises ValueError: On an empty path, a non-boolean ``expand_dense`` or an out-of-range cap.
        """
        if not isinstance(glossary_path, str | Path) or not str(glossary_path).strip():
            raise ValueError("glossary_path must name the glossary SQLite file, e.g. ./data/glossary.sqlite")
        if not isinstance(expand_dense, bool):
            raise ValueError(f"expand_dense must be true or false (RAG_GLOSSARY_EXPAND_DENSE), got {expand_dense!r}.")
        if isinstance(max_added_phrases, bool) or not isinstance(max_added_phrases, int):
            raise ValueError(f"max_added_phrases must be an integer, got {max_added_phrases!r}.")
        if not 1 <= max_added_phrases <= 200:
            raise ValueError(f"max_added_phrases must be within 1..200, got {max_added_phrases}.")
        self.glossary_path = str(glossary_path)
        self.expand_dense = expand_dense
        self.max_added_phrases = max_added_phrases
        self._store = GlossaryStore(self.glossary_path)
        self._cache: dict[str, tuple[str, Vocabulary]] = {}
        self._lock = threading.Lock()

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(
            self,
            glossary_path=self.glossary_path,
            expand_dense=self.expand_dense,
            max_added_phrases=self.max_added_phrases,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GlossaryQueryExpander":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    def vocabulary_for(self, tenant_id: str) -> Vocabulary | None:
        """The tenant's vocabulary (cached until its stored digest changes), or ``None``."""
        digest = self._store.digest(tenant_id)
        if digest is None:
            with self._lock:
                self._cache.pop(tenant_id, None)
            return None
        cached = self._cache.get(tenant_id)
        if cached is not None and cached[0] == digest:
            return cached[1]
        compiled = self._store.vocabulary(tenant_id)
        if compiled is None:
            return None
        vocabulary = Vocabulary(compiled)
        with self._lock:
            self._cache[tenant_id] = (digest, vocabulary)
        return vocabulary

    @component.output_types(keyword_query=str, dense_query=str, glossary_terms=list[str])
    def run(self, query: str, tenant_id: str) -> dict[str, Any]:
        """
        Expand a query with the tenant's glossary.

        :param query: The retrieval query.
        :param tenant_id: The requester's tenant (from the server-side identity).
        :returns: ``keyword_query`` (the query plus added aliases), ``dense_query`` (the same with
            ``expand_dense``, else the query unchanged) and ``glossary_terms`` (matched canonical terms).
        """
        vocabulary = self.vocabulary_for(tenant_id)
        if vocabulary is None:
            return {"keyword_query": query, "dense_query": query, "glossary_terms": []}
        terms, added = vocabulary.expansions(query)
        added = added[: self.max_added_phrases]
        expanded = f"{query} {' '.join(added)}" if added else query
        tag_span({"sourcebound.glossary.terms": len(terms), "sourcebound.glossary.added": len(added)})
        return {
            "keyword_query": expanded,
            "dense_query": expanded if self.expand_dense else query,
            "glossary_terms": terms,
        }
