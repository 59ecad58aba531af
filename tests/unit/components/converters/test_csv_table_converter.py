import pytest
from haystack.dataclasses import ByteStream
from support.indexing_support import roundtrip
from support.office_files import FIXTURES

from components.converters.csv_table_converter import CSVTableConverter
from components.core.document_identity import IndexingValidationError


@pytest.mark.unit
class TestCSVTableConverter:
    def test_init(self):
        assert isinstance(CSVTableConverter(), CSVTableConverter)

    def test_to_dict(self):
        assert CSVTableConverter().to_dict() == {
            "type": "components.converters.csv_table_converter.CSVTableConverter",
            "init_parameters": {},
        }

    def test_from_dict(self):
        assert isinstance(CSVTableConverter.from_dict(CSVTableConverter().to_dict()), CSVTableConverter)
        assert isinstance(roundtrip(CSVTableConverter()), CSVTableConverter)

    def test_run_reads_the_committed_fixture(self):
        documents = CSVTableConverter().run(sources=[FIXTURES / "reorder.csv"])["documents"]
        assert [document.content for document in documents] == [
            "Item | Reorder level | Supplier\nPallet wrap | 40 rolls | Packright\n"
            "Safety gloves | 120 pairs | Handsafe\nLabel printer ribbon | 15 ribbons | Inkline"
        ]
        assert documents[0].meta["source_type"] == "csv" and documents[0].meta["document_name"] == "reorder.csv"

    def test_run_rejects_undecodable_and_too_large_files(self, monkeypatch):
        monkeypatch.setenv("SOURCEBOUND_MAX_SPREADSHEET_CELLS", "100")
        with pytest.raises(IndexingValidationError) as raised:
            CSVTableConverter().run(
                sources=[
                    ByteStream(b"name;city\nJos\xe9;Gent\n", meta={"file_path": "latin1.csv"}),
                    ByteStream(b"a,b\n" + b"1,2\n" * 100, meta={"file_path": "long.csv"}),
                ]
            )
        assert raised.value.problems[0].startswith("latin1.csv: undecodable bytes: not valid UTF-8 text")
        assert raised.value.problems[1].startswith("long.csv: the CSV file has more than 100 cells")
