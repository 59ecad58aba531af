import pytest
from haystack.dataclasses import ByteStream
from support.indexing_support import roundtrip
from support.office_files import FIXTURES, pptx_bytes

from components.converters.pptx_slide_converter import PPTXSlideConverter
from components.core.document_identity import IndexingValidationError


@pytest.mark.unit
class TestPPTXSlideConverter:
    def test_init(self):
        assert isinstance(PPTXSlideConverter(), PPTXSlideConverter)

    def test_to_dict(self):
        assert PPTXSlideConverter().to_dict() == {
            "type": "components.converters.pptx_slide_converter.PPTXSlideConverter",
            "init_parameters": {},
        }

    def test_from_dict(self):
        assert isinstance(PPTXSlideConverter.from_dict(PPTXSlideConverter().to_dict()), PPTXSlideConverter)
        assert isinstance(roundtrip(PPTXSlideConverter()), PPTXSlideConverter)

    def test_run_one_document_per_slide_with_text(self):
        documents = PPTXSlideConverter().run(sources=[FIXTURES / "review.pptx"])["documents"]
        assert [document.meta["page_number"] for document in documents] == [1, 3]  # slide 2 is blank
        assert "14 warehouse technicians in Rotterdam" in documents[1].content
        assert {document.meta["document_name"] for document in documents} == {"review.pptx"}
        assert {document.meta["source_type"] for document in documents} == {"pptx"}

    def test_run_rejects_a_deck_without_text(self):
        with pytest.raises(IndexingValidationError, match="blank.pptx: the PowerPoint file is empty"):
            PPTXSlideConverter().run(sources=[ByteStream(pptx_bytes([None]), meta={"file_path": "blank.pptx"})])
