"""
``CitationExtractor``: deterministic citations from SourceIds (docs/contract.md,
"Answers").

* The answer is scanned with the SourceId regex of docs/contract.md, "Documents, chunks and SourceIds":
  ``\\[SourceId:\\s*([a-zA-Z0-9-]+:\\d+)\\]``.
* A SourceId maps only to a chunk that was in the context; anything else
  (hallucinated, or a chunk the requester never saw) is dropped and logged as a
  warning.
* Repeated SourceIds are merged, in order of first appearance.
* Each citation carries ``source_id``, ``document_id``, ``document_name``,
  ``chunk_index``, ``page_number``, ``section``, ``relevance_score`` (the chunk's
  dense similarity, clamped to 0-1), ``snippet`` (first 200 characters, ``...`` if
  cut) and ``snippet_full``.

It also reports whether *every* sentence of the answer carries at least one valid
citation (``all_sentences_cited``), which the router uses for ``grounded``. For
that, a marker placed right after a sentence's final punctuation ("... per year.
[SourceId: a:1]") belongs to that sentence.
"""

import logging
import re
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.core.span_tags import tag_span
from components.core.text_analysis import (
    SOURCE_ID_PATTERN,
    chunk_index_of,
    document_id_of,
    find_source_ids,
    join_ordinals,
    optional_int,
    snippet,
    source_id_of,
    source_title_of,
    source_url_of,
    words,
)

logger = logging.getLogger(__name__)

# Markers that follow a sentence's end punctuation move in front of it, so that
# splitting at the punctuation keeps each marker with the sentence it cites.
_TRAILING_MARKERS_RE = re.compile(r"([.!?。！？])((?:\s*" + SOURCE_ID_PATTERN.replace("(", "(?:", 1) + r")+)")
_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?。！？])\s+|\n+")


def answer_sentences(answer: str) -> list[str]:
    """The answer's sentences, each with the SourceId markers that cite it; fragments without words are skipped."""
    moved = _TRAILING_MARKERS_RE.sub(lambda m: f"{m.group(2)}{m.group(1)}", answer or "")
    sentences = []
    for part in join_ordinals(_SENTENCE_SPLIT_RE.split(moved), moved):
        part = part.strip()
        if part and words(re.sub(SOURCE_ID_PATTERN, " ", part)):
            sentences.append(part)
    return sentences


@component
class CitationExtractor:
    """
    Usage:
    ```python
    extractor = CitationExtractor()
    out = extractor.run(answer="Employees get 25 days. [SourceId: hr-handbook:2]", documents=context_chunks)
    out["citations"][0]["document_id"]  # "hr-handbook"
    ```
    """

    # run() changes none of its inputs and keeps none of them: the planned pipeline passes them without a defensive
    # copy (docs/contract.md, "Pipeline runs").
    reads_inputs_only = True

    def __init__(self, snippet_chars: int = 200) -> None:
        """
        :param snippet_chars: Length of ``snippet`` before ``...`` is appended.
        """
        if not isinstance(snippet_chars, int) or snippet_chars < 1:
            raise ValueError(f"snippet_chars must be a positive integer, got {snippet_chars!r}.")
        self.snippet_chars = snippet_chars

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(self, snippet_chars=self.snippet_chars)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CitationExtractor":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    def citation_for(self, document: Document) -> dict[str, Any]:
        """The citation record of one context chunk."""
        meta = document.meta or {}
        source_id = source_id_of(document)
        content = document.content or ""
        score = document.score if document.score is not None else 0.0
        return {
            "source_id": source_id,
            "document_id": document_id_of(document),
            "document_name": meta.get("document_name") or document_id_of(document),
            "chunk_index": chunk_index_of(document),
            "url": source_url_of(document),
            "title": source_title_of(document),
            "page_number": optional_int(meta.get("page_number")),
            "section": meta.get("section") or None,
            "relevance_score": min(1.0, max(0.0, float(score))),
            "snippet": snippet(content, self.snippet_chars),
            "snippet_full": content,
            "public": meta.get("scope") == "public",
            "language": meta.get("language") or None,
        }

    @component.output_types(citations=list[dict[str, Any]], unknown_source_ids=list[str], all_sentences_cited=bool)
    def run(self, answer: str, documents: list[Document]) -> dict[str, Any]:
        """
        :param answer: The answer text.
        :param documents: The context chunks the answer was generated from.
        :returns: ``citations`` (valid, merged, in order of first appearance); ``unknown_source_ids`` (dropped);
            ``all_sentences_cited`` (every answer sentence carries at least one valid citation).
        """
        by_source_id = {source_id_of(document): document for document in documents}
        citations: dict[str, dict[str, Any]] = {}
        unknown: dict[str, None] = {}
        for source_id in find_source_ids(answer):
            if source_id in by_source_id:
                if source_id not in citations:
                    citations[source_id] = self.citation_for(by_source_id[source_id])
            elif source_id not in unknown:
                unknown[source_id] = None
                logger.warning("Answer cites SourceId %s, which was not in the context; citation dropped.", source_id)

        sentences = answer_sentences(answer)
        all_cited = bool(sentences) and all(
            any(source_id in by_source_id for source_id in find_source_ids(sentence)) for sentence in sentences
        )
        tag_span(
            {
                "sourcebound.citations": len(citations),
                "sourcebound.citations.unknown": len(unknown),
                "sourcebound.all_sentences_cited": all_cited,
            }
        )
        return {
            "citations": list(citations.values()),
            "unknown_source_ids": list(unknown),
            "all_sentences_cited": all_cited,
        }
