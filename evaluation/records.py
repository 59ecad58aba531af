"""
What the runner records for each question, and what the metrics read.

A :class:`QuestionRecord` is plain data (JSON round-trip), so metrics can be computed
and tested without running a pipeline, and a report can be recomputed from its JSON.

Usage:

```python
record = QuestionRecord(question_id="q1", question="...", answerable=True,
                        answer="27 days [SourceId: acme-hr-handbook:1]", action="CITE",
                        context=[ContextChunk("acme-hr-handbook:1", "acme-hr-handbook", "...", 0.71)],
                        citations=["acme-hr-handbook:1"])
```
"""

from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass
class ContextChunk:
    """One chunk the answerer saw (or one search hit): its SourceId, document and text."""

    source_id: str
    document_id: str
    content: str = ""
    score: float | None = None


@dataclass
class QuestionRecord:
    """
    The outcome of one question: the request, the RAG response, retrieval, timing.

    :param context: The chunks in the answer's context, in rank order.
    :param retrieved: Retrieval results for recall@k (the search pipeline's top-k; the
        context when no search ran), in rank order.
    :param citations: Cited SourceIds from the response's ``citations``.
    :param top3_repeat: Top-3 SourceIds of the determinism re-run, when one ran.
    :param reference_contexts: Texts of the gold chunks (for ragas' text-based context metrics).
    :param stage_ms: Wall time per pipeline component of the RAG run, in milliseconds.
    :param removed_sentences: The answer sentences the LLM path's verifier removed (only when the pipeline reports
        them: ``SOURCEBOUND_DEBUG_REMOVED_SENTENCES``).
    """

    question_id: str
    question: str
    answerable: bool
    category: str = ""
    requester: dict[str, Any] = field(default_factory=dict)
    gold_document_ids: list[str] = field(default_factory=list)
    gold_answers: list[str] = field(default_factory=list)
    reference_answer: str | None = None
    forbidden_document_ids: list[str] = field(default_factory=list)
    answer: str = ""
    action: str = ""
    route_to: dict[str, Any] | None = None
    confidence: dict[str, Any] = field(default_factory=dict)
    grounded: bool = False
    context: list[ContextChunk] = field(default_factory=list)
    retrieved: list[ContextChunk] = field(default_factory=list)
    retrieved_without_glossary: list[ContextChunk] | None = None
    citations: list[str] = field(default_factory=list)
    top3_repeat: list[str] | None = None
    reference_contexts: list[str] = field(default_factory=list)
    latency_ms: float = 0.0
    search_latency_ms: float | None = None
    stage_ms: dict[str, float] = field(default_factory=dict)
    removed_sentences: list[dict[str, Any]] | None = None
    error: str | None = None

    @property
    def overall_confidence(self) -> float | None:
        value = self.confidence.get("overall")
        return None if value is None else float(value)

    @property
    def top3(self) -> list[str]:
        """The first three retrieval results (SourceIds), what determinism compares."""
        return [chunk.source_id for chunk in (self.retrieved or self.context)[:3]]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "QuestionRecord":
        known = {item.name for item in fields(cls)}
        values = {key: value for key, value in data.items() if key in known}
        for key in ("context", "retrieved"):
            values[key] = [
                chunk if isinstance(chunk, ContextChunk) else ContextChunk(**chunk) for chunk in values.get(key, [])
            ]
        if values.get("retrieved_without_glossary") is not None:
            values["retrieved_without_glossary"] = [
                chunk if isinstance(chunk, ContextChunk) else ContextChunk(**chunk)
                for chunk in values["retrieved_without_glossary"]
            ]
        return cls(**values)
