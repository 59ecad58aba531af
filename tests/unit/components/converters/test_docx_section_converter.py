import pytest
from haystack.dataclasses import ByteStream
from support.indexing_support import roundtrip
from support.office_files import FIXTURES, HANDBOOK_DOCX

from components.converters.docx_section_converter import DOCXSectionConverter
from components.core.document_identity import IndexingValidationError


@pytest.mark.unit
class TestDOCXSectionConverter:
    def test_init(self):
        assert DOCXSectionConverter().section_max_level == 2
        with pytest.raises(ValueError, match="between 1 and 6"):
            DOCXSectionConverter(section_max_level=0)

    def test_to_dict(self):
        assert DOCXSectionConverter(section_max_level=1).to_dict() == {
            "type": "components.converters.docx_section_converter.DOCXSectionConverter",
            "init_parameters": {"section_max_level": 1},
        }

    def test_from_dict(self):
        assert DOCXSectionConverter.from_dict(DOCXSectionConverter(3).to_dict()).section_max_level == 3
        assert roundtrip(DOCXSectionConverter()).section_max_level == 2

    def test_run_one_document_per_section_with_source_meta(self):
        documents = DOCXSectionConverter().run(sources=[FIXTURES / "handbook.docx"], meta={"tenant_id": "acme"})[
            "documents"
        ]
        assert [document.meta["section"] for document in documents] == [None, "Safety", "Shifts", "Shifts"]
        assert "renew their certification every 18 months" in documents[1].content
        assert documents[3].content.startswith("Dock | Opening hours\n")
        assert all(
            document.meta["source_type"] == "docx"
            and document.meta["document_name"] == "Warehouse handbook"
            and document.meta["tenant_id"] == "acme"
            and len(document.meta["source_hash"]) == 64
            for document in documents
        )

    def test_run_names_every_bad_file(self):
        with pytest.raises(IndexingValidationError) as raised:
            DOCXSectionConverter().run(
                sources=[
                    ByteStream(HANDBOOK_DOCX[:100], meta={"file_path": "cut.docx"}),
                    ByteStream((FIXTURES / "encrypted.docx").read_bytes(), meta={"file_path": "locked.docx"}),
                ]
            )
        assert raised.value.problems == [
            "cut.docx: the .docx file is corrupt: not a readable ZIP package (File is not a zip file)",
            "locked.docx: the .docx file is password-protected (encrypted); save a copy without a password and "
            "index that",
        ]
