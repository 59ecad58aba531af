"""ExtractiveAnswerer: the deterministic, LLM-free answer backend."""

import pytest
from haystack import Document

from components.core.errors import ModelUnavailableError
from components.core.models import INSUFFICIENT_INFORMATION_ANSWER
from components.generators.extractive_answerer import ExtractiveAnswerer


def _docs() -> list[Document]:
    return [
        Document(
            id="hr:2",
            score=0.62,
            content="## Annual leave\nFull-time employees receive 27 days of paid annual leave per calendar year.\n"
            "Up to 5 unused days may be carried over into the next year.",
            meta={"document_id": "hr", "chunk_index": 2},
        ),
        Document(
            id="hr:4",
            score=0.48,
            content="Acme offers 20 weeks of fully paid parental leave to every new parent. Notify the People team early.",
            meta={"document_id": "hr", "chunk_index": 4},
        ),
        Document(
            id="travel:1",
            score=0.35,
            content="Economy class is required for flights under six hours. Book through the travel portal.",
            meta={"document_id": "travel", "chunk_index": 1},
        ),
    ]


@pytest.mark.unit
class TestExtractiveAnswerer:
    def test_init(self):
        answerer = ExtractiveAnswerer()
        assert answerer.max_sentences == 3 and answerer.insufficient_answer == INSUFFICIENT_INFORMATION_ANSWER
        with pytest.raises(ValueError):
            ExtractiveAnswerer(min_query_coverage=0)

    def test_to_dict(self):
        params = ExtractiveAnswerer(max_sentences=2).to_dict()["init_parameters"]
        assert params["max_sentences"] == 2 and params["model_name"] == "extractive"

    def test_from_dict(self):
        assert ExtractiveAnswerer.from_dict(ExtractiveAnswerer(max_answer_chars=300).to_dict()).max_answer_chars == 300

    def test_run_answers_with_cited_sentences(self):
        out = ExtractiveAnswerer().run(
            query="How many days of annual leave do full-time employees get?", documents=_docs()
        )
        assert out["answer"].startswith(
            "Full-time employees receive 27 days of paid annual leave per calendar year. [SourceId: hr:2]"
        )
        assert out["model_used"] == "extractive" and out["generation_time_ms"] >= 0
        assert "Economy class" not in out["answer"]

    def test_run_every_sentence_is_followed_by_its_source_id(self):
        answer = ExtractiveAnswerer().run(query="parental leave weeks new parent", documents=_docs())["answer"]
        assert answer.startswith(
            "Acme offers 20 weeks of fully paid parental leave to every new parent. [SourceId: hr:4]"
        )
        assert answer.count("[SourceId:") == len([s for s in answer.split("] ") if s])

    def test_run_not_enough_information(self):
        for query in ["What is the policy on pets in the office?", "hello!", "the and of"]:
            assert ExtractiveAnswerer().run(query=query, documents=_docs())["answer"] == INSUFFICIENT_INFORMATION_ANSWER
        assert ExtractiveAnswerer().run(query="annual leave", documents=[])["answer"] == INSUFFICIENT_INFORMATION_ANSWER

    def test_run_length_budget(self):
        answer = ExtractiveAnswerer(max_answer_chars=120).run(query="leave days employees parental", documents=_docs())[
            "answer"
        ]
        assert answer.count("[SourceId:") == 1

    def test_run_is_deterministic(self):
        answerer = ExtractiveAnswerer()
        answers = {answerer.run(query="leave days", documents=_docs())["answer"] for _ in range(5)}
        answers.add(ExtractiveAnswerer().run(query="leave days", documents=list(_docs()))["answer"])
        assert len(answers) == 1

    def test_run_refuses_llm_models(self):
        assert (
            ExtractiveAnswerer().run(query="leave", documents=_docs(), model="extractive")["model_used"] == "extractive"
        )
        with pytest.raises(ModelUnavailableError, match="query_ollama.yml"):
            ExtractiveAnswerer().run(query="leave", documents=_docs(), model="llama3.2")

    def test_health(self):
        assert ExtractiveAnswerer().health() == {"backend": "extractive", "model": "extractive", "reachable": True}
