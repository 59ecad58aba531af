"""AnswerSentenceVerifier: every LLM answer sentence checked against the chunk it cites (docs/contract.md,
"Answers")."""

import pytest
from haystack import Document
from support.indexing_support import roundtrip

from components.core.models import INSUFFICIENT_INFORMATION_ANSWER
from components.embedders.onnx_document_embedder import OnnxDocumentEmbedder
from components.preprocessors.context_sentence_splitter import ContextSentenceSplitter
from components.validators.answer_sentence_verifier import AnswerSentenceVerifier

CHUNKS = [
    Document(
        id="hr:2",
        content="Full-time employees receive 27 days of paid annual leave per year. Up to 5 unused days may be "
        "carried over to the next year.",
        meta={"document_name": "Employee Handbook", "section": "Leave"},
    ),
    Document(
        id="travel:1",
        content="Economy class is required for flights under six hours. The daily meal allowance abroad is EUR 60.",
        meta={"document_name": "Travel policy"},
    ),
]


@pytest.fixture(scope="module")
def sentences():
    embedder = OnnxDocumentEmbedder()
    embedder.warm_up()
    return embedder.run(documents=ContextSentenceSplitter().run(documents=CHUNKS)["sentences"])["documents"]


def _verify(answer: str, sentences) -> dict:
    return AnswerSentenceVerifier().run(answer=answer, documents=CHUNKS, sentences=sentences)


@pytest.mark.integration
class TestAnswerSentenceVerifier:
    def test_init(self):
        verifier = AnswerSentenceVerifier()
        assert verifier.min_support == 0.6 and verifier.insufficient_answer == INSUFFICIENT_INFORMATION_ANSWER
        for bad in ({"min_support": "high"}, {"model": ""}, {"insufficient_answer": ""}):
            with pytest.raises(ValueError):
                AnswerSentenceVerifier(**bad)

    def test_to_dict(self):
        params = AnswerSentenceVerifier(min_support=0.7).to_dict()["init_parameters"]
        assert params["min_support"] == 0.7 and params["model"] == "packaged:all-MiniLM-L6-v2"

    def test_from_dict(self):
        assert roundtrip(AnswerSentenceVerifier(min_support=0.55)).min_support == 0.55

    def test_run_keeps_supported_cited_sentences_as_written(self, sentences):
        answer = "Employees get 27 days of paid annual leave per year [SourceId: hr:2]."
        out = _verify(answer, sentences)
        assert out == {"answer": answer, "removed_sentences": []}

    def test_run_removes_uncited_unsupported_and_wrongly_cited_sentences(self, sentences):
        answer = (
            "Employees get 27 days of paid annual leave per year. [SourceId: hr:2] "
            "Pets are welcome in the office on Fridays. [SourceId: hr:2] "
            "The meal allowance abroad is EUR 60. "
            "Economy class is required for short flights. [SourceId: globex:9]"
        )
        out = _verify(answer, sentences)
        assert out["answer"] == "Employees get 27 days of paid annual leave per year. [SourceId: hr:2]"
        reasons = [(entry["reason"], entry["source_ids"]) for entry in out["removed_sentences"]]
        assert reasons == [("unsupported", ["hr:2"]), ("uncited", []), ("uncited", [])]
        assert out["removed_sentences"][0]["support"] < 0.6

    def test_run_a_figure_the_cited_chunk_does_not_hold_is_unsupported(self, sentences):
        # Close in meaning to the cited sentence, but 31 is not what the chunk says; 60 is in another chunk.
        out = _verify(
            "Employees get 31 days of paid annual leave per year. [SourceId: hr:2] "
            "The meal allowance abroad is EUR 60. [SourceId: hr:2]",
            sentences,
        )
        assert out["answer"] == INSUFFICIENT_INFORMATION_ANSWER
        assert [entry["reason"] for entry in out["removed_sentences"]] == ["unsupported", "unsupported"]

    def test_run_the_chunk_header_counts_as_the_chunks_text(self, sentences):
        # "Travel policy" is only the chunk's document name.
        answer = "The Travel policy sets the daily meal allowance abroad at EUR 60. [SourceId: travel:1]"
        assert _verify(answer, sentences)["answer"] == answer

    def test_run_nothing_supported_is_the_insufficient_answer(self, sentences):
        assert _verify("", sentences) == {"answer": INSUFFICIENT_INFORMATION_ANSWER, "removed_sentences": []}
        declined = _verify(INSUFFICIENT_INFORMATION_ANSWER, sentences)
        assert declined["answer"] == INSUFFICIENT_INFORMATION_ANSWER
        assert [entry["reason"] for entry in declined["removed_sentences"]] == ["declined"]
