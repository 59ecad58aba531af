"""ContextSentenceSplitter: context chunks -> one Document per sentence, keeping where each came from."""

import pytest
from haystack import Document

from components.preprocessors.context_sentence_splitter import ContextSentenceSplitter


def _chunks() -> list[Document]:
    return [
        Document(
            id="hr:2",
            score=0.62,
            meta={"document_id": "hr", "chunk_index": 2},
            content="## Annual leave\nFull-time employees receive 27 days of paid annual\nleave per year. "
            "Up to 5 unused days may be carried over.\n\nYOUR ONBOARDING BUDDY\n- Ask HR.",
        ),
        Document(
            id="travel:1",
            score=0.35,
            meta={"document_id": "travel", "chunk_index": 1},
            content="Economy class is required for flights under six hours.",
        ),
    ]


@pytest.mark.unit
class TestContextSentenceSplitter:
    def test_init(self):
        splitter = ContextSentenceSplitter()
        assert (splitter.min_sentence_words, splitter.max_sentences) == (3, 256)
        for bad in ({"min_sentence_words": 0}, {"max_sentences": 0}, {"max_sentences": True}):
            with pytest.raises(ValueError):
                ContextSentenceSplitter(**bad)

    def test_to_dict(self):
        assert ContextSentenceSplitter(min_sentence_words=4).to_dict()["init_parameters"] == {
            "min_sentence_words": 4,
            "max_sentences": 256,
        }

    def test_from_dict(self):
        assert ContextSentenceSplitter.from_dict(ContextSentenceSplitter(max_sentences=9).to_dict()).max_sentences == 9

    def test_run_one_document_per_sentence_with_its_origin(self):
        sentences = ContextSentenceSplitter().run(documents=_chunks())["sentences"]
        # The heading, the ALL-CAPS label and the two-word list item are dropped; hard-wrapped lines are joined.
        assert [s.content for s in sentences] == [
            "Full-time employees receive 27 days of paid annual leave per year.",
            "Up to 5 unused days may be carried over.",
            "Economy class is required for flights under six hours.",
        ]
        assert [
            (s.meta["source_id"], s.meta["chunk_rank"], s.meta["position"], s.meta["chunk_score"]) for s in sentences
        ] == [
            ("hr:2", 0, 1, 0.62),
            ("hr:2", 0, 2, 0.62),
            ("travel:1", 1, 0, 0.35),
        ]
        assert len({s.id for s in sentences}) == 3 and all(s.embedding is None for s in sentences)
        # The two leave sentences share one block (a paragraph); its first one is block position 0.
        assert [(s.meta["block"], s.meta["block_position"]) for s in sentences][:2] in (
            [(1, 0), (1, 1)],
            [(0, 1), (0, 2)],
        )

    def test_run_records_the_chunks_contextual_header(self):
        chunks = [
            Document(
                id="dpkg-1:4", content="--force-all turns on every force option.", meta={"document_name": "dpkg(1)"}
            ),
            Document(
                id="hr:2",
                content="Full-time employees receive 27 days of leave.",
                meta={"document_name": "Handbook", "context_header": "Handbook › Leave"},
            ),
        ]
        sentences = ContextSentenceSplitter().run(documents=chunks)["sentences"]
        assert [s.meta["context_header"] for s in sentences] == ["dpkg(1)", "Handbook › Leave"]

    def test_run_marks_reference_entries_as_blocks(self):
        entry = (
            "use-vc\n    Sets RES_USEVC. This option forces TCP.\n\nno-reload\n    Disables automatic reloading now."
        )
        sentences = ContextSentenceSplitter().run(documents=[Document(id="r:0", content=entry)])["sentences"]
        assert [(s.content, s.meta["block"], s.meta["block_position"]) for s in sentences] == [
            ("use-vc Sets RES_USEVC.", 0, 0),
            ("This option forces TCP.", 0, 1),
            ("no-reload Disables automatic reloading now.", 1, 0),
        ]

    def test_run_bounds_and_empty_input(self):
        assert len(ContextSentenceSplitter(max_sentences=2).run(documents=_chunks())["sentences"]) == 2
        assert ContextSentenceSplitter().run(documents=[])["sentences"] == []
        assert ContextSentenceSplitter().run(documents=[Document(id="x:0", content=None)])["sentences"] == []
