"""
``AnswerSentenceVerifier``: every sentence of an LLM answer must be supported by the chunk it cites
(docs/contract.md, "Answers").

Each sentence of the answer (as :func:`components.extractors.citation_extractor.answer_sentences` cuts it, with
the SourceId markers that follow it) is kept only when

* it cites at least one chunk of the context (a SourceId the context does not hold counts as no citation);
* the reader's own support score for it, read against the sentences of the chunks it cites, reaches
  ``min_support``: :meth:`components.generators.sentence_reader.SentenceReader.score_sentences` with the answer
  sentence as the query, i.e. the cosine similarity of the closest cited sentence plus the reader's weighted
  share of the answer sentence's rare terms and exact terms it holds;
* every exact term it states (a number, a name, an option, a path) occurs in a chunk it cites or that chunk's
  contextual header: a figure the cited text does not hold is not supported, however similar the sentence.

Unsupported and uncited sentences are removed; when nothing supported remains the answer becomes the
"not enough information" sentence, which cites nothing, so the router declines (ROUTE). What was removed and why
is returned in ``removed_sentences`` (the assembler shows it only when the operator turns the debug field on).

Usage:
```python
verifier = AnswerSentenceVerifier()
out = verifier.run(answer=llm_answer, documents=context_chunks, sentences=embedded_context_sentences)
out["answer"]              # only the supported, cited sentences
out["removed_sentences"]   # [{"sentence": ..., "reason": "unsupported", "support": 0.41, "source_ids": [...]}]
```
"""

import logging
import re
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.core.chunk_context import context_header
from components.core.models import INSUFFICIENT_INFORMATION_ANSWER
from components.core.span_tags import tag_span
from components.core.text_analysis import SOURCE_ID_PATTERN, find_source_ids, source_id_of, words
from components.embedders.onnx_embedding import load_encoder
from components.extractors.citation_extractor import answer_sentences
from components.generators.sentence_reader import SentenceReader, contains_exact, exact_terms

logger = logging.getLogger(__name__)


@component
class AnswerSentenceVerifier:
    """Keeps the answer sentences the chunks they cite support (see the module doc)."""

    def __init__(
        self,
        model: str = "packaged:all-MiniLM-L6-v2",
        min_support: float = 0.6,
        lexical_weight: float = 0.2,
        exact_weight: float = 0.1,
        insufficient_answer: str = INSUFFICIENT_INFORMATION_ANSWER,
    ) -> None:
        """
        :param model: The embedding model of the context sentences' vectors (the query embedder's).
        :param min_support: The lowest support score (the reader's sentence score) a kept sentence has.
        :param lexical_weight: The reader's weight of term coverage in the score (as in ``query.yml``'s reader).
        :param exact_weight: The reader's weight of exact terms in the score.
        :param insufficient_answer: The answer when no sentence is supported.
        :raises ValueError: If a parameter is out of range.
        """
        if not isinstance(min_support, (int, float)) or isinstance(min_support, bool):
            raise ValueError(f"min_support must be a number, got {min_support!r}.")
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a model name, got {model!r}.")
        if not insufficient_answer:
            raise ValueError("insufficient_answer must be non-empty.")
        self.model = model
        self.min_support = float(min_support)
        self.lexical_weight = lexical_weight
        self.exact_weight = exact_weight
        self.insufficient_answer = insufficient_answer
        # The reader's sentence score, without answer types (an answer sentence asks for nothing).
        self._reader = SentenceReader(lexical_weight=lexical_weight, exact_weight=exact_weight, answer_type_weight=0.0)
        self._encoder = None

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(
            self,
            model=self.model,
            min_support=self.min_support,
            lexical_weight=self.lexical_weight,
            exact_weight=self.exact_weight,
            insufficient_answer=self.insufficient_answer,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "AnswerSentenceVerifier":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Load the shared ONNX session (one per process, shared with the embedders)."""
        if self._encoder is None:
            self._encoder = load_encoder(self.model)

    def _embed(self, texts: list[str]) -> list[list[float]]:
        self.warm_up()
        return [vector.tolist() for vector in self._encoder.encode(texts)]

    def check(
        self, sentence: str, cited: list[str], chunks: dict[str, Document], by_chunk: dict[str, list[Document]], vector
    ) -> tuple[str | None, float]:
        """``(reason, support)``: ``reason`` is ``None`` when the sentence is supported."""
        if not cited:
            return "uncited", 0.0
        claim = re.sub(SOURCE_ID_PATTERN, " ", sentence).strip()
        texts = [f"{context_header(chunks[i].meta or {})}\n{chunks[i].content or ''}" for i in cited]
        missing = [term for term in exact_terms(claim) if not any(contains_exact(text, term) for text in texts)]
        candidates = [document for source_id in cited for document in by_chunk.get(source_id, [])]
        scored = self._reader.score_sentences(claim, vector, candidates) if candidates else []
        support = max((entry["score"] for entry in scored), default=0.0)
        if missing:
            return "unsupported", support
        return (None if support >= self.min_support else "unsupported"), support

    @component.output_types(answer=str, removed_sentences=list[dict[str, Any]])
    def run(self, answer: str, documents: list[Document], sentences: list[Document]) -> dict[str, Any]:
        """
        :param answer: The LLM's answer with ``[SourceId: ...]`` markers.
        :param documents: The context chunks the answer was written from.
        :param sentences: The context's sentences with their embeddings (``ContextSentenceSplitter`` then the
            sentence embedder), each with ``meta.source_id``.
        :returns: ``answer``: the supported sentences, or the insufficient-information answer when none is;
            ``removed_sentences``: ``{sentence, reason ("uncited" | "unsupported"), support, source_ids}`` each.
        """
        parts = answer_sentences(answer or "")
        if not parts:
            return {"answer": self.insufficient_answer, "removed_sentences": []}
        chunks = {source_id_of(document): document for document in documents}
        by_chunk: dict[str, list[Document]] = {}
        for sentence in sentences:
            by_chunk.setdefault(str((sentence.meta or {}).get("source_id", "")), []).append(sentence)
        claims = [re.sub(SOURCE_ID_PATTERN, " ", part).strip() for part in parts]
        vectors = self._embed(claims)
        kept: list[str] = []
        removed: list[dict[str, Any]] = []
        for part, claim, vector in zip(parts, claims, vectors, strict=True):
            cited = [source_id for source_id in dict.fromkeys(find_source_ids(part)) if source_id in chunks]
            if words(claim) == words(self.insufficient_answer):
                removed.append({"sentence": part, "reason": "declined", "support": 0.0, "source_ids": cited})
                continue
            reason, support = self.check(part, cited, chunks, by_chunk, vector)
            if reason is None:
                kept.append(part)
            else:
                removed.append({"sentence": part, "reason": reason, "support": round(support, 4), "source_ids": cited})
        if removed:
            logger.info("AnswerSentenceVerifier removed %d of %d answer sentences.", len(removed), len(parts))
        tag_span({"sourcebound.verifier.kept": len(kept), "sourcebound.verifier.removed": len(removed)})
        if not removed:
            return {"answer": answer, "removed_sentences": []}  # every sentence holds: the model's text as written
        if not kept:
            return {"answer": self.insufficient_answer, "removed_sentences": removed}
        return {"answer": " ".join(_marker_after_punctuation(part) for part in kept), "removed_sentences": removed}


_MARKERS_BEFORE_END_RE = re.compile(r"((?:\s*" + SOURCE_ID_PATTERN.replace("(", "(?:", 1) + r")+)\s*([.!?。！？])$")


def _marker_after_punctuation(sentence: str) -> str:
    """``"... holidays [SourceId: a:2]."`` -> ``"... holidays. [SourceId: a:2]"`` (the reader's form)."""
    return _MARKERS_BEFORE_END_RE.sub(lambda match: f"{match.group(2)} {match.group(1).strip()}", sentence)
