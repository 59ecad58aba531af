"""
``ExtractiveAnswerer``: the embedded answer backend (docs/contract.md, "Answers"). No LLM; the
same context and query always give the same answer.

It answers with the context sentences that best cover the query, each followed
by its chunk's ``[SourceId: ...]``:

1. The query's *terms* are its normalised content words (stopwords and question
   words removed, see :mod:`components.core.text_analysis`).
2. Every sentence of every context chunk is scored by the share of the query's
   term weight it contains, a term weighing its inverse sentence frequency in the
   context (``log(1 + N / (1 + df))``), so a rare, specific query word counts more
   than one that appears everywhere, and a query word absent from the context
   weighs most of all (which keeps an off-topic question from qualifying).
   Fragments shorter than ``min_sentence_words`` and ALL-CAPS headings never qualify.
3. Sentences scoring at least ``min_query_coverage`` qualify. The best ones are
   taken (score, then focus: the share of the sentence's content words that are
   query terms, then chunk similarity, then chunk rank, then position) until
   ``max_sentences`` or ``max_answer_chars`` is reached; repeated sentences are
   skipped.
4. When none qualifies, the answer is exactly the contract's (docs/contract.md, "Answers")
   "I don't have enough information in the available documents to answer this
   question."

It never falls back to, or from, an LLM backend.
"""

import math
import time
from collections import Counter
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.core.errors import ModelUnavailableError
from components.core.models import INSUFFICIENT_INFORMATION_ANSWER
from components.core.span_tags import DOCUMENTS_IN, tag_span
from components.core.text_analysis import content_words, source_id_marker, source_id_of, split_sentences, words

EXTRACTIVE_MODEL_NAME = "extractive"


@component
class ExtractiveAnswerer:
    """
    Usage:
    ```python
    answerer = ExtractiveAnswerer(max_sentences=3)
    out = answerer.run(query="How many vacation days do employees get?", documents=context_chunks)
    out["answer"]  # "Employees receive 25 vacation days per year. [SourceId: hr-handbook:2]"
    ```
    """

    def __init__(
        self,
        max_sentences: int = 3,
        max_answer_chars: int = 700,
        min_query_coverage: float = 0.5,
        min_sentence_words: int = 4,
        insufficient_answer: str = INSUFFICIENT_INFORMATION_ANSWER,
        model_name: str = EXTRACTIVE_MODEL_NAME,
    ) -> None:
        """
        :param max_sentences: Most sentences in an answer.
        :param max_answer_chars: Length budget of an answer (SourceId markers included); the best sentence is
            always kept, later ones only if they fit.
        :param min_query_coverage: Minimum share of the query's term weight a sentence must contain (0-1].
        :param min_sentence_words: Shorter fragments (headings, labels) are never answers.
        :param insufficient_answer: The answer when nothing qualifies.
        :param model_name: Reported as ``model_used``; the only ``model`` a request may name for this backend.
        """
        if not isinstance(max_sentences, int) or max_sentences < 1:
            raise ValueError(f"max_sentences must be a positive integer, got {max_sentences!r}.")
        if not isinstance(max_answer_chars, int) or max_answer_chars < 50:
            raise ValueError(f"max_answer_chars must be an integer >= 50, got {max_answer_chars!r}.")
        if not isinstance(min_query_coverage, (int, float)) or not 0.0 < float(min_query_coverage) <= 1.0:
            raise ValueError(f"min_query_coverage must be in (0, 1], got {min_query_coverage!r}.")
        if not isinstance(min_sentence_words, int) or min_sentence_words < 1:
            raise ValueError(f"min_sentence_words must be a positive integer, got {min_sentence_words!r}.")
        if not insufficient_answer or not model_name:
            raise ValueError("insufficient_answer and model_name must be non-empty.")
        self.max_sentences = max_sentences
        self.max_answer_chars = max_answer_chars
        self.min_query_coverage = float(min_query_coverage)
        self.min_sentence_words = min_sentence_words
        self.insufficient_answer = insufficient_answer
        self.model_name = model_name

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(
            self,
            max_sentences=self.max_sentences,
            max_answer_chars=self.max_answer_chars,
            min_query_coverage=self.min_query_coverage,
            min_sentence_words=self.min_sentence_words,
            insufficient_answer=self.insufficient_answer,
            model_name=self.model_name,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ExtractiveAnswerer":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    def health(self) -> dict[str, Any]:
        """The backend's health, for the service's health check (always reachable: it is in-process)."""
        return {"backend": "extractive", "model": self.model_name, "reachable": True}

    def rank_sentences(self, query: str, documents: list[Document]) -> list[tuple[float, str, str]]:
        """
        Qualifying sentences, best first, as ``(score, sentence, source_id)``.
        """
        query_terms = list(dict.fromkeys(content_words(query)))
        if not query_terms:
            return []
        candidates: list[tuple[str, str, float, int, int, set[str]]] = []
        for rank, document in enumerate(documents):
            similarity = document.score if document.score is not None else 0.0
            for position, sentence in enumerate(split_sentences(document.content or "")):
                # Fragments and ALL-CAPS headings ("YOUR ONBOARDING BUDDY") are labels, not answers.
                if len(words(sentence)) < self.min_sentence_words or sentence.upper() == sentence:
                    continue
                candidates.append(
                    (sentence, source_id_of(document), similarity, rank, position, set(content_words(sentence)))
                )
        if not candidates:
            return []
        frequency = Counter(term for *_, terms in candidates for term in set(query_terms) & terms)
        weights = {term: math.log(1.0 + len(candidates) / (1.0 + frequency[term])) for term in query_terms}
        total = sum(weights.values())
        scored = []
        for sentence, source_id, similarity, rank, position, terms in candidates:
            matched = [term for term in query_terms if term in terms]
            score = sum(weights[term] for term in matched) / total
            if score >= self.min_query_coverage:
                # Focus: the share of the sentence's own content words that the query asks about.
                focus = len(matched) / max(1, len(terms))
                scored.append((-round(score, 9), -round(focus, 9), -similarity, rank, position, sentence, source_id))
        scored.sort()
        return [(-neg_score, sentence, source_id) for neg_score, _, _, _, _, sentence, source_id in scored]

    def answer(self, query: str, documents: list[Document]) -> str:
        """The extractive answer for ``query`` from ``documents``."""
        parts: list[str] = []
        seen: set[str] = set()
        length = 0
        for _, sentence, source_id in self.rank_sentences(query, documents):
            key = " ".join(words(sentence))
            if key in seen:
                continue
            part = f"{sentence} {source_id_marker(source_id)}"
            added = len(part) + (1 if parts else 0)
            if parts and length + added > self.max_answer_chars:
                continue
            parts.append(part)
            seen.add(key)
            length += added
            if len(parts) == self.max_sentences:
                break
        return " ".join(parts) if parts else self.insufficient_answer

    @component.output_types(answer=str, model_used=str, generation_time_ms=float)
    def run(self, query: str, documents: list[Document], model: str | None = None) -> dict[str, Any]:
        """
        :param query: The question (the retrieval query, which folds in a clarified turn).
        :param documents: The budgeted context chunks.
        :param model: Must be ``None`` or this backend's ``model_name``: an LLM name is refused, never served
            silently by extraction.
        :returns: ``answer``, ``model_used`` and ``generation_time_ms``.
        :raises ModelUnavailableError: If a request names an LLM.
        """
        if model not in (None, self.model_name):
            raise ModelUnavailableError(
                f"Model '{model}' is not served: this pipeline answers with the built-in extractive backend. "
                "Omit `model`, or run the Ollama pipeline (pipelines/query_ollama.yml) to use an LLM."
            )
        started = time.perf_counter()
        answer = self.answer(query, documents)
        tag_span(
            {"sourcebound.model": self.model_name, "sourcebound.llm_called": False}, {DOCUMENTS_IN: len(documents)}
        )
        return {
            "answer": answer,
            "model_used": self.model_name,
            "generation_time_ms": (time.perf_counter() - started) * 1000.0,
        }
