"""Shared text helpers: SourceIds, key phrases, shingles, sentences, snippets, tokens."""

import pytest
from haystack import Document

from components.core.text_analysis import (
    chunk_fields,
    content_words,
    count_tokens,
    find_source_ids,
    jaccard,
    key_phrases,
    normalize_word,
    phrase_index,
    sentence_blocks,
    shingles,
    snippet,
    source_id_of,
    split_sentences,
    strip_source_ids,
)


@pytest.mark.unit
class TestSourceIds:
    def test_find_and_strip(self):
        text = "A [SourceId: doc-1:0] and [SourceId:doc-2:13], not [SourceId: bad_id:1] nor [Source: x:1]."
        assert find_source_ids(text) == ["doc-1:0", "doc-2:13"]
        assert "SourceId: doc" not in strip_source_ids(text)

    def test_source_id_from_meta_or_id(self):
        assert source_id_of(Document(id="x", content="t", meta={"document_id": "hr-1", "chunk_index": 4})) == "hr-1:4"
        assert source_id_of(Document(id="hr-1:4", content="t")) == "hr-1:4"

    def test_chunk_fields_show_na(self):
        fields = chunk_fields(Document(id="d:0", content="text", meta={"document_id": "d", "chunk_index": 0}))
        assert fields["page_number"] == "N/A" and fields["section"] == "N/A" and fields["document_name"] == "d"


@pytest.mark.unit
class TestKeyPhrases:
    def test_runs_give_bigrams_and_unigrams(self):
        assert key_phrases("Employees receive 25 vacation days.") == [
            "employee receive",
            "receive 25",
            "25 vacation",
            "vacation day",
        ]
        assert key_phrases("It is the budget.") == ["budget"]

    def test_markers_and_stopwords_are_ignored(self):
        assert key_phrases("[SourceId: a:1] the and of") == []

    def test_phrase_index_matches_normalised_forms(self):
        index = phrase_index("Policies apply to every employee's vacation days\nin the year")
        assert {"policy", "policy apply", "vacation day", "day year"} - index == {"day year"}

    def test_normalisation(self):
        assert [normalize_word(w) for w in ["Policies", "days", "class", "status", "Employee's"]] == [
            "policy",
            "day",
            "class",
            "status",
            "employee",
        ]
        assert content_words("What is the vacation policy?") == ["vacation", "policy"]


@pytest.mark.unit
class TestShinglesAndSentences:
    def test_jaccard_of_shingles(self):
        text = "the quick brown fox jumps over the lazy dog"
        assert jaccard(shingles(text), shingles(text.upper() + "  ")) == 1.0
        assert jaccard(shingles(text), shingles("completely different words here")) == 0.0
        assert jaccard(shingles("short"), shingles("short")) == 1.0

    def test_split_sentences_joins_wrapped_lines(self):
        text = (
            "## Leave\nFull-time staff get 27 days\nof leave. Part-timers get less!\n- First item here\n- Second item"
        )
        assert split_sentences(text) == [
            "Leave",
            "Full-time staff get 27 days of leave.",
            "Part-timers get less!",
            "First item here",
            "Second item",
        ]

    def test_snippet(self):
        assert snippet("x" * 200) == "x" * 200
        assert snippet("x" * 201) == "x" * 200 + "..."


@pytest.mark.unit
class TestTokens:
    def test_count_tokens_offline_and_special_tokens_are_text(self):
        assert count_tokens("") == 0
        assert count_tokens("hello world") == 2
        assert count_tokens("<|endoftext|>") > 1


@pytest.mark.unit
class TestLenientMeta:
    def test_odd_meta_values_do_not_break_ids(self):
        from components.core.text_analysis import chunk_index_of, optional_int

        assert [optional_int(v) for v in (4, "4", 4.0, "4.5", "x", None, True)] == [4, 4, 4, None, None, None, None]
        odd = Document(id="doc-1:7", content="t", meta={"document_id": "doc-1", "chunk_index": "seven"})
        assert source_id_of(odd) == "doc-1:7" and chunk_index_of(odd) == 7


@pytest.mark.unit
class TestSentenceBlocks:
    def test_paragraphs_and_entries_are_blocks(self):
        text = (
            "First paragraph. It has two sentences.\n\n"
            "       use-vc (since glibc 2.14)\n"
            "              Sets RES_USEVC. This option forces TCP.\n\n"
            "- a list item. Second sentence of the item.\n"
        )
        assert sentence_blocks(text) == [
            ["First paragraph.", "It has two sentences."],
            ["use-vc (since glibc 2.14) Sets RES_USEVC.", "This option forces TCP."],
            ["a list item.", "Second sentence of the item."],
        ]

    def test_split_sentences_is_the_blocks_flattened(self):
        text = "# Heading\nOne. Two.\n\nThree four five.\n| a | b |\n"
        assert split_sentences(text) == [sentence for block in sentence_blocks(text) for sentence in block]
        assert sentence_blocks("") == []


@pytest.mark.unit
class TestLinksBack:
    def test_url_is_a_web_link_or_a_declared_source_never_an_upload_path(self):
        from components.core.text_analysis import source_title_of, source_url_of

        web = Document(content="x", meta={"document_id": "d1", "source_uri": "https://help.example.com/a"})
        upload = Document(content="x", meta={"document_id": "d2", "source_uri": "file:///srv/uploads/a.md"})
        synced = Document(
            content="x",
            meta={
                "document_id": "d3",
                "source_uri": "file:///srv/git/h.git/a.md",
                "commit_sha": "abc",
                "document_name": "A",
            },
        )
        assert source_url_of(web) == "https://help.example.com/a"
        assert source_url_of(upload) is None
        assert source_url_of(synced) == "file:///srv/git/h.git/a.md"
        assert source_title_of(synced) == "A" and source_title_of(web) == "d1"
