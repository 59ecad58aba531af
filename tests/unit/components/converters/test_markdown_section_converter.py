import pytest
from haystack.dataclasses import ByteStream

from components.converters.markdown_section_converter import MarkdownSectionConverter
from components.core.document_identity import IndexingValidationError


@pytest.mark.unit
class TestMarkdownSectionConverter:
    def test_init(self):
        assert MarkdownSectionConverter().section_max_level == 2
        with pytest.raises(ValueError, match="section_max_level"):
            MarkdownSectionConverter(section_max_level=0)

    def test_to_dict(self):
        assert MarkdownSectionConverter(section_max_level=3).to_dict() == {
            "type": "components.converters.markdown_section_converter.MarkdownSectionConverter",
            "init_parameters": {"section_max_level": 3},
        }

    def test_from_dict(self):
        converter = MarkdownSectionConverter.from_dict(MarkdownSectionConverter(section_max_level=3).to_dict())
        assert converter.section_max_level == 3

    def test_run_one_document_per_section(self, tmp_path):
        path = tmp_path / "guide.md"
        path.write_text("# Guide\n\nIntro.\n\n## Install\n\nRun it.\n\n### Linux\n\napt.\n\n## Use\n\nUse it.\n")
        documents = MarkdownSectionConverter().run(sources=[path])["documents"]
        assert [doc.meta["section"] for doc in documents] == ["Guide", "Install", "Use"]
        assert all(doc.meta["document_name"] == "Guide" and doc.meta["source_type"] == "md" for doc in documents)
        assert "### Linux" in documents[1].content
        assert len({doc.meta["source_hash"] for doc in documents}) == 1

    def test_run_deeper_sections(self):
        stream = ByteStream(b"## A\n\nx\n\n### B\n\ny", meta={"file_path": "a.md"})
        documents = MarkdownSectionConverter(section_max_level=3).run(sources=[stream])["documents"]
        assert [doc.meta["section"] for doc in documents] == ["A", "B"]

    def test_run_rejects_empty(self):
        with pytest.raises(IndexingValidationError, match="a.md: the document is empty"):
            MarkdownSectionConverter().run(sources=[ByteStream(b"\n\n", meta={"file_path": "a.md"})])
