"""context_header: where a chunk belongs (docs/contract.md, "Documents, chunks and SourceIds")."""

import pytest

from components.core.chunk_context import MAX_HEADER_CHARS, context_header


@pytest.mark.unit
class TestContextHeader:
    def test_document_name_then_section(self):
        assert context_header({"document_name": "dpkg(1)", "section": "OPTIONS"}) == "dpkg(1) › OPTIONS"
        assert context_header({"document_name": "Slides", "section": None}) == "Slides"
        assert context_header({"section": "Meals"}) == "Meals"
        assert context_header({}) == ""

    def test_a_section_equal_to_the_name_is_not_repeated_and_whitespace_is_folded(self):
        assert context_header({"document_name": "Leave  policy", "section": "leave policy"}) == "Leave policy"

    def test_a_stored_header_wins(self):
        assert context_header({"document_name": "New", "context_header": "Old › Part"}) == "Old › Part"
        assert context_header({"document_name": "New", "context_header": ""}) == ""

    def test_long_headers_are_cut_at_a_word(self):
        header = context_header({"document_name": "word " * 100})
        assert len(header) <= MAX_HEADER_CHARS and not header.endswith(" ") and header.endswith("word")
