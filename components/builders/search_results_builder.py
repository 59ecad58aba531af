"""
``SearchResultsBuilder``: the response of the retrieval-only search pipeline
(docs/contract.md, "Response fields", ``SearchResponse``; the DATS ``/query`` shape).

* ``results``: one entry per retrieved chunk, in rank order, with ``source_id``,
  ``document_id``, ``document_name``, ``chunk_index``, ``score`` (dense cosine
  similarity to the query, comparable across modes), ``snippet`` (200 characters,
  ``...`` if cut) and ``tags``.
* ``context``: the chunks in the SourceId format of the RAG prompt, in rank order,
  as many as fit in ``max_tokens`` (the first chunk that does not fit ends it);
  ``tokens_used`` is its tiktoken count.
* ``metadata``: ``vector_results`` / ``keyword_results`` count the returned results
  the dense / keyword retrieval found (``meta["retrieved_by"]``, set by
  :class:`components.joiners.search_mode_selector.SearchModeSelector`): in ``vector`` or
  ``keyword`` mode only that retrieval runs; in ``hybrid`` mode a result both stages of
  the fusion found counts for both. ``latency_ms`` is the search's wall time,
  which :class:`components.services.query_service.QueryService` measures and fills in (a bare
  pipeline run reports what its ``latency_ms`` input says, 0 by default).
"""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.core.models import SearchResponse
from components.core.prompts import CONTEXT_CHUNK_TEMPLATE, format_chunk, validate_chunk_template
from components.core.span_tags import tag_span
from components.core.text_analysis import (
    chunk_index_of,
    count_tokens,
    document_id_of,
    snippet,
    source_id_of,
    source_title_of,
    source_url_of,
    validate_encoding,
)


@component
class SearchResultsBuilder:
    """
    Usage:
    ```python
    builder = SearchResultsBuilder()
    builder.run(documents=docs, search_mode="hybrid", max_tokens=2000, latency_ms=1.2)["response"]
    ```
    """

    # run() changes none of its inputs and keeps none of them: the planned pipeline passes them without a defensive
    # copy (docs/contract.md, "Pipeline runs").
    reads_inputs_only = True

    def __init__(
        self,
        chunk_template: str = CONTEXT_CHUNK_TEMPLATE,
        chunk_separator: str = "\n\n",
        snippet_chars: int = 200,
        encoding: str = "cl100k_base",
        min_similarity: float | None = None,
    ) -> None:
        """
        :param chunk_template: Template of one context chunk (as in the RAG prompt).
        :param chunk_separator: Text between chunks.
        :param snippet_chars: Length of a result's snippet before ``...``.
        :param encoding: tiktoken encoding for ``tokens_used``.
        :param min_similarity: The pipeline's minimum similarity (``RAG_SEARCH_MIN_SIMILARITY``), named in
            ``empty_reason``.
        """
        validate_chunk_template(chunk_template)
        validate_encoding(encoding)
        if not isinstance(snippet_chars, int) or snippet_chars < 1:
            raise ValueError(f"snippet_chars must be a positive integer, got {snippet_chars!r}.")
        self.chunk_template = chunk_template
        self.chunk_separator = chunk_separator
        self.snippet_chars = snippet_chars
        self.encoding = encoding
        self.min_similarity = min_similarity

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(
            self,
            chunk_template=self.chunk_template,
            chunk_separator=self.chunk_separator,
            snippet_chars=self.snippet_chars,
            encoding=self.encoding,
            min_similarity=self.min_similarity,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SearchResultsBuilder":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    def empty_reason(self, dropped: int) -> str:
        """Why no result is returned (docs/contract.md, "Response fields")."""
        if dropped:
            floor = f"{self.min_similarity:g}" if self.min_similarity is not None else "the minimum"
            return (
                f"None of the {dropped} retrieved chunks reached the minimum similarity of {floor} "
                "(RAG_SEARCH_MIN_SIMILARITY): nothing you can access is close enough to the query."
            )
        return "No document this identity may see matches the query."

    def result(self, document: Document) -> dict[str, Any]:
        """One search result."""
        meta = document.meta or {}
        source_id = source_id_of(document)
        tags = meta.get("tags") or []
        return {
            "source_id": source_id,
            "document_id": document_id_of(document),
            "document_name": meta.get("document_name") or document_id_of(document),
            "chunk_index": chunk_index_of(document),
            "url": source_url_of(document),
            "title": source_title_of(document),
            "score": float(document.score) if document.score is not None else 0.0,
            "snippet": snippet(document.content or "", self.snippet_chars),
            "tags": [tags] if isinstance(tags, str) else list(tags),
            "public": meta.get("scope") == "public",
            "language": meta.get("language") or None,
            "artifact_id": _text_or_none(meta.get("artifact_id")),
            "provenance_id": _text_or_none(meta.get("provenance_id")),
        }

    def context(self, documents: list[Document], max_tokens: int) -> tuple[str, int]:
        """The rank-order prefix of chunks that fits ``max_tokens``, and its token count."""
        chunks = [format_chunk(document, self.chunk_template) for document in documents]
        # Usually every chunk fits: one count. Otherwise the longest fitting prefix, found chunk by chunk.
        text = self.chunk_separator.join(chunks)
        tokens = count_tokens(text, self.encoding)
        if tokens <= max_tokens:
            return text, tokens
        text, tokens = "", 0
        for end in range(1, len(chunks)):
            candidate = self.chunk_separator.join(chunks[:end])
            candidate_tokens = count_tokens(candidate, self.encoding)
            if candidate_tokens > max_tokens:
                break
            text, tokens = candidate, candidate_tokens
        return text, tokens

    @component.output_types(response=dict[str, Any])
    def run(
        self,
        documents: list[Document],
        search_mode: str,
        max_tokens: int = 2000,
        latency_ms: float = 0.0,
        glossary_terms: list[str] | None = None,
        dropped: int = 0,
    ) -> dict[str, Any]:
        """
        :param documents: Retrieved chunks in rank order (``score`` = dense similarity).
        :param search_mode: ``vector``, ``keyword`` or ``hybrid``.
        :param max_tokens: Token budget of ``context``.
        :param latency_ms: The search's latency, when known (``QueryService`` sets the measured wall time).
        :param glossary_terms: Glossary terms the query expander matched (reported in ``metadata``).
        :param dropped: Retrieved chunks the similarity scorer dropped below the minimum similarity.
        :returns: ``response``: the search response as a JSON-ready dict; ``empty_reason`` says why ``results`` is
            empty (``null`` otherwise).
        """
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive integer, got {max_tokens!r}.")
        context, tokens = self.context(documents, max_tokens)
        found_by = [set((doc.meta or {}).get("retrieved_by") or []) for doc in documents]
        response = SearchResponse(
            results=[self.result(document) for document in documents],
            context=context,
            tokens_used=tokens,
            search_mode=search_mode,
            empty_reason=None if documents else self.empty_reason(dropped),
            metadata={
                "vector_results": sum(1 for sides in found_by if "vector" in sides),
                "keyword_results": sum(1 for sides in found_by if "keyword" in sides),
                "latency_ms": round(float(latency_ms), 3),
                "glossary_terms": list(glossary_terms or []),
            },
        )
        tag_span(
            {
                "sourcebound.results": len(documents),
                "sourcebound.tokens.context": tokens,
                "sourcebound.search_mode": search_mode,
            }
        )
        return {"response": response.model_dump(mode="json")}


def _text_or_none(value: Any) -> str | None:
    """A metadata id as given at indexing (strings only), else ``None``."""
    return value if isinstance(value, str) and value else None
