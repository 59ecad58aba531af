import pytest
from haystack.dataclasses import ByteStream
from support.indexing_support import roundtrip
from support.office_files import FIXTURES, xlsx_with_empty_cells

from components.converters.xlsx_sheet_converter import XLSXSheetConverter
from components.core.document_identity import IndexingValidationError


@pytest.mark.unit
class TestXLSXSheetConverter:
    def test_init(self):
        assert isinstance(XLSXSheetConverter(), XLSXSheetConverter)

    def test_to_dict(self):
        assert XLSXSheetConverter().to_dict() == {
            "type": "components.converters.xlsx_sheet_converter.XLSXSheetConverter",
            "init_parameters": {},
        }

    def test_from_dict(self):
        assert isinstance(XLSXSheetConverter.from_dict(XLSXSheetConverter().to_dict()), XLSXSheetConverter)
        assert isinstance(roundtrip(XLSXSheetConverter()), XLSXSheetConverter)

    def test_run_row_groups_per_sheet_with_header(self):
        documents = XLSXSheetConverter().run(sources=[FIXTURES / "carriers.xlsx"], meta={"tags": ["ops"]})["documents"]
        sections = [document.meta["section"] for document in documents]
        assert sections[-1] == "Contacts" and set(sections[:-1]) == {"Carriers"}
        assert all(document.content.startswith("Carrier | Region | Lead time (days)\n") for document in documents[:-1])
        assert "Blue Heron Freight | Scandinavia | 6" in documents[-2].content
        assert all(
            document.meta["source_type"] == "xlsx" and document.meta["tags"] == ["ops"] for document in documents
        )

    def test_run_rejects_a_million_empty_cells(self):
        stream = ByteStream(xlsx_with_empty_cells(1_000_000), meta={"file_path": "empty-grid.xlsx"})
        with pytest.raises(
            IndexingValidationError, match="empty-grid.xlsx: the spreadsheet has more than 200000 cells"
        ):
            XLSXSheetConverter().run(sources=[stream])
