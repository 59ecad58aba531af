"""evaluation.reader_replay: the reader replayed on recorded inputs (docs/reader.md, "How the model was fitted")."""

import pytest
from haystack import Document

from evaluation import reader_replay as rr


@pytest.mark.unit
class TestReaderReplay:
    def test_sentences_take_their_chunk_language(self):
        chunks = [
            Document(
                content="Отпуск составляет 28 дней.", meta={"document_id": "ru-hr", "chunk_index": 0, "language": "ru"}
            ),
            Document(content="Employees get 25 days.", meta={"document_id": "hr", "chunk_index": 2, "language": "en"}),
        ]
        sentences = [
            Document(content="Отпуск составляет 28 дней.", meta={"source_id": "ru-hr:0"}, embedding=[0.1, 0.2]),
            Document(content="Employees get 25 days.", meta={"source_id": "hr:2", "language": "de"}),
            Document(content="Orphan.", meta={"source_id": "other:0"}),
        ]
        out = rr.with_chunk_language(sentences, chunks)
        assert [s.meta.get("language") for s in out] == ["ru", "de", None]  # a recorded language is kept
        assert out[0].embedding == [0.1, 0.2] and "language" not in sentences[0].meta  # the recording is not changed

    def test_served_parameters_resolve_the_defaults(self):
        answerer = rr.served_parameters("answerer")
        assert answerer["abstention_model"] == "sentence_reader_abstention.json"
        assert "${" not in repr(answerer)

    def test_figures_are_the_evaluations_rates(self):
        rows = [
            {"answerable": True, "gold_answers": ["28 days"]},
            {"answerable": True, "gold_answers": ["Rollo"]},
            {"answerable": False, "gold_answers": []},
            {"answerable": False, "gold_answers": []},
        ]
        answers = [
            {"answer": "You get 28 days.", "action": "CITE", "grounded": True, "overall": 80},
            {"answer": "I don't have enough information.", "action": "ROUTE", "grounded": False, "overall": 30},
            {"answer": "Maybe 3.", "action": "CITE", "grounded": True, "overall": 70},
            {"answer": "I don't have enough information.", "action": "ROUTE", "grounded": False, "overall": 20},
        ]
        got = rr.figures(rows, answers)
        assert got["gold_span"] == 0.5 and got["cite"] == 0.5 and got["grounded"] == 0.5 and got["declines"] == 0.5
        assert got["auroc"] == 0.75
