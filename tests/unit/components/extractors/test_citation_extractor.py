"""CitationExtractor (specification test_extract_citations_valid / _invalid)."""

import logging

import pytest
from haystack import Document

from components.extractors.citation_extractor import CitationExtractor, answer_sentences


def _docs() -> list[Document]:
    return [
        Document(
            id="doc-abc123:2",
            content="A" * 250,
            score=0.81,
            meta={
                "document_id": "doc-abc123",
                "chunk_index": 2,
                "document_name": "hr-handbook.pdf",
                "page_number": 4,
                "section": "Vacation",
            },
        ),
        Document(
            id="faq:0",
            content="Short chunk.",
            score=0.45,
            meta={"document_id": "faq", "chunk_index": 0, "document_name": "faq.md"},
        ),
    ]


@pytest.mark.unit
class TestCitationExtractor:
    def test_init(self):
        assert CitationExtractor().snippet_chars == 200
        with pytest.raises(ValueError):
            CitationExtractor(snippet_chars=0)

    def test_to_dict(self):
        assert CitationExtractor().to_dict() == {
            "type": "components.extractors.citation_extractor.CitationExtractor",
            "init_parameters": {"snippet_chars": 200},
        }

    def test_from_dict(self):
        assert CitationExtractor.from_dict(CitationExtractor(50).to_dict()).snippet_chars == 50

    def test_extract_citations_valid(self):
        answer = (
            "According to the vacation policy [SourceId: doc-abc123:2], employees get 27 days. "
            "See also [SourceId:faq:0]."
        )
        out = CitationExtractor().run(answer=answer, documents=_docs())
        first, second = out["citations"]
        assert first == {
            "source_id": "doc-abc123:2",
            "document_id": "doc-abc123",
            "document_name": "hr-handbook.pdf",
            "chunk_index": 2,
            "url": None,
            "title": "hr-handbook.pdf",
            "page_number": 4,
            "section": "Vacation",
            "relevance_score": 0.81,
            "snippet": "A" * 200 + "...",
            "snippet_full": "A" * 250,
            "public": False,
            "language": None,
        }
        assert second["source_id"] == "faq:0" and second["snippet"] == "Short chunk." and second["page_number"] is None
        assert second["section"] is None and out["unknown_source_ids"] == []

    def test_citation_carries_the_chunks_language(self):
        documents = [Document(id="de-hb:0", content="Die Frist beträgt drei Monate.", meta={"language": "de"})]
        answer = "Die Frist beträgt drei Monate. [SourceId: de-hb:0]"
        assert CitationExtractor().run(answer=answer, documents=documents)["citations"][0]["language"] == "de"

    def test_cjk_and_german_answer_sentences(self):
        answer = "员工食堂在三楼。 [SourceId: zh:0] 午餐时间为十一点半。 [SourceId: zh:1]"
        # Each marker moves before its sentence's 。 as before an English full stop.
        assert answer_sentences(answer) == [
            "员工食堂在三楼 [SourceId: zh:0]。",
            "午餐时间为十一点半 [SourceId: zh:1]。",
        ]
        # An ordinal date ("31. März") ends no German sentence: the marker after it cites the whole sentence.
        german = "Resturlaub muss bis zum 31. März genommen werden. [SourceId: de:0]"
        assert answer_sentences(german) == ["Resturlaub muss bis zum 31. März genommen werden [SourceId: de:0]."]

    def test_run_citation_links_only_web_sources(self):
        web, local = _docs()
        web.meta["source_uri"] = "https://intranet.example.com/hr/handbook"
        local.meta["source_uri"] = "file:///srv/corpus/faq.md"
        out = CitationExtractor().run(
            answer="Yes [SourceId: doc-abc123:2] and [SourceId: faq:0].", documents=[web, local]
        )
        assert [c["url"] for c in out["citations"]] == ["https://intranet.example.com/hr/handbook", None]

    def test_extract_citations_invalid(self, caplog):
        answer = (
            "Made up [SourceId: doc-zzz:9]. Real [SourceId: faq:0]. Malformed [SourceId: not valid] [Source: faq:0]."
        )
        with caplog.at_level(logging.WARNING, logger="components.extractors.citation_extractor"):
            out = CitationExtractor().run(answer=answer, documents=_docs())
        assert [c["source_id"] for c in out["citations"]] == ["faq:0"]
        assert out["unknown_source_ids"] == ["doc-zzz:9"]
        assert "doc-zzz:9" in caplog.text
        assert out["all_sentences_cited"] is False

    def test_duplicates_merged_in_order_of_first_appearance(self):
        answer = "One [SourceId: faq:0]. Two [SourceId: doc-abc123:2]. Three [SourceId: faq:0]."
        out = CitationExtractor().run(answer=answer, documents=_docs())
        assert [c["source_id"] for c in out["citations"]] == ["faq:0", "doc-abc123:2"]

    def test_all_sentences_cited(self):
        run = CitationExtractor().run
        assert run(answer="One. [SourceId: faq:0] Two fact. [SourceId: doc-abc123:2]", documents=_docs())[
            "all_sentences_cited"
        ]
        assert run(answer="One [SourceId: faq:0]. Two [SourceId: faq:0].", documents=_docs())["all_sentences_cited"]
        assert not run(answer="One [SourceId: faq:0]. Uncited claim.", documents=_docs())["all_sentences_cited"]
        assert not run(answer="No citations at all.", documents=_docs())["all_sentences_cited"]
        assert not run(answer="", documents=_docs())["all_sentences_cited"]

    def test_answer_sentences_keep_trailing_markers(self):
        assert answer_sentences("A fact. [SourceId: a:1] [SourceId: b:2] Next one.") == [
            "A fact [SourceId: a:1] [SourceId: b:2].",
            "Next one.",
        ]
