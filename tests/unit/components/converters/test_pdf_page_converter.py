import pytest
from haystack.dataclasses import ByteStream
from support.indexing_support import make_pdf

from components.converters.pdf_page_converter import PDFPageConverter
from components.core.document_identity import IndexingValidationError


@pytest.mark.unit
class TestPDFPageConverter:
    def test_init(self):
        assert isinstance(PDFPageConverter(), PDFPageConverter)

    def test_to_dict(self):
        assert PDFPageConverter().to_dict() == {
            "type": "components.converters.pdf_page_converter.PDFPageConverter",
            "init_parameters": {},
        }

    def test_from_dict(self):
        assert isinstance(PDFPageConverter.from_dict(PDFPageConverter().to_dict()), PDFPageConverter)

    def test_run_one_document_per_page(self, tmp_path):
        path = make_pdf(tmp_path / "handbook.pdf", ["Page one about expenses.", "Page two about travel."])
        documents = PDFPageConverter().run(sources=[path], meta={"tenant_id": "acme"})["documents"]
        assert [doc.meta["page_number"] for doc in documents] == [1, 2]
        assert "travel" in documents[1].content
        assert all(
            doc.meta["source_type"] == "pdf" and doc.meta["document_name"] == "handbook.pdf" for doc in documents
        )

    def test_run_rejects_unparsable_pdf(self):
        with pytest.raises(IndexingValidationError, match="broken.pdf: the PDF cannot be parsed"):
            PDFPageConverter().run(sources=[ByteStream(b"%PDF-1.7 truncated", meta={"file_path": "broken.pdf"})])
