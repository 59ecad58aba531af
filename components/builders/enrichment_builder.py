"""
``EnrichmentBuilder``: the response of the enrichment pipeline (``pipelines/enrich.yml``).

The budgeted chunks become a context block in the answer prompt's SourceId format (the same
chunk template and separator as ``SourceIdPromptBuilder``), ready for another service to paste
into its own prompt, plus one source per chunk (SourceId, document, link where the document has
an http(s) ``source_uri``, dense similarity score) so that service can cite. The message is
returned exactly as received: enrichment adds context, it never rewrites the user's input
(docs/contract.md, "Enrichment").

An empty context carries ``empty_reason``, told apart from what the pipeline saw: nothing the
identity may see matched, nothing reached the minimum similarity, or nothing fitted the budget.
"""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.core.models import EnrichResponse
from components.core.prompts import CONTEXT_CHUNK_TEMPLATE, render_context, validate_chunk_template
from components.core.text_analysis import (
    chunk_index_of,
    document_id_of,
    optional_int,
    source_id_of,
    source_title_of,
    source_url_of,
)


@component
class EnrichmentBuilder:
    """
    Usage:
    ```python
    builder = EnrichmentBuilder(min_similarity=0.3)
    out = builder.run(message="How many vacation days?", documents=budgeted, relevant=scored,
                      candidates=retrieved, context_tokens_used=412)
    out["response"]["context"]   # "[SourceId: acme-hr-handbook:3]\\n[Document: ...]..."
    ```
    """

    def __init__(
        self,
        chunk_template: str = CONTEXT_CHUNK_TEMPLATE,
        chunk_separator: str = "\n\n",
        none_value: str = "N/A",
        min_similarity: float = 0.3,
    ) -> None:
        """
        :param chunk_template: Template of one context chunk (as in the answer prompt).
        :param chunk_separator: Text between chunks.
        :param none_value: Shown for a missing page or section.
        :param min_similarity: The pipeline's minimum similarity, named in ``empty_reason``.
        """
        validate_chunk_template(chunk_template)
        if not isinstance(min_similarity, int | float) or isinstance(min_similarity, bool):
            raise ValueError(f"min_similarity must be a number, got {min_similarity!r}.")
        self.chunk_template = chunk_template
        self.chunk_separator = chunk_separator
        self.none_value = none_value
        self.min_similarity = float(min_similarity)

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(
            self,
            chunk_template=self.chunk_template,
            chunk_separator=self.chunk_separator,
            none_value=self.none_value,
            min_similarity=self.min_similarity,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "EnrichmentBuilder":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    @staticmethod
    def source(document: Document) -> dict[str, Any]:
        """One source entry of the response."""
        meta = document.meta or {}
        section = meta.get("section")
        return {
            "source_id": source_id_of(document),
            "document_id": document_id_of(document),
            "document_name": meta.get("document_name") or document_id_of(document),
            "chunk_index": chunk_index_of(document),
            "url": source_url_of(document),
            "title": source_title_of(document),
            "page_number": optional_int(meta.get("page_number")),
            "section": section if isinstance(section, str) and section else None,
            "score": float(document.score) if document.score is not None else 0.0,
        }

    def empty_reason(self, candidates: int, relevant: int) -> str:
        """Why the context is empty."""
        if candidates == 0:
            return "No document this identity may see matches the message."
        if relevant == 0:
            return (
                f"None of the {candidates} retrieved chunks reached the minimum similarity of "
                f"{self.min_similarity:g} (RAG_MIN_SIMILARITY_SCORE)."
            )
        return "No chunk fitted the context token budget (RAG_MAX_CONTEXT_TOKENS)."

    @component.output_types(response=dict[str, Any])
    def run(
        self,
        message: str,
        documents: list[Document],
        relevant: list[Document],
        candidates: list[Document],
        context_tokens_used: int,
    ) -> dict[str, Any]:
        """
        :param message: The caller's message, returned unchanged.
        :param documents: The budgeted context chunks, in rank order (``score`` = dense similarity).
        :param relevant: The chunks that reached the minimum similarity (before dedup, limits and budget).
        :param candidates: Everything the access-filtered retrieval returned.
        :param context_tokens_used: Tokens of the context block (the budgeter's count of the same rendering).
        :returns: ``response``: the ``EnrichResponse`` as a JSON-ready dict.
        """
        context = render_context(documents, self.chunk_template, self.chunk_separator, self.none_value)
        response = EnrichResponse(
            message=message,
            context=context,
            sources=[self.source(document) for document in documents],
            context_chunks_used=len(documents),
            tokens_used=int(context_tokens_used) if documents else 0,
            empty_reason=None if documents else self.empty_reason(len(candidates), len(relevant)),
        )
        return {"response": response.model_dump(mode="json")}
