import pytest
from haystack.dataclasses import ByteStream

from components.converters.text_file_converter import TextFileConverter
from components.core.document_identity import IndexingValidationError, content_hash


@pytest.mark.unit
class TestTextFileConverter:
    def test_init(self):
        assert isinstance(TextFileConverter(), TextFileConverter)

    def test_to_dict(self):
        assert TextFileConverter().to_dict() == {
            "type": "components.converters.text_file_converter.TextFileConverter",
            "init_parameters": {},
        }

    def test_from_dict(self):
        assert isinstance(TextFileConverter.from_dict(TextFileConverter().to_dict()), TextFileConverter)

    def test_run_reads_files_with_source_meta(self, tmp_path):
        path = tmp_path / "notes.txt"
        path.write_bytes(b"Vacation: 25 days.")
        documents = TextFileConverter().run(sources=[path], meta={"tenant_id": "acme", "tags": ["hr"]})["documents"]
        assert len(documents) == 1
        meta = documents[0].meta
        assert documents[0].content == "Vacation: 25 days."
        assert meta["source_type"] == "txt" and meta["document_name"] == "notes.txt"
        assert meta["source_hash"] == content_hash(path.read_bytes()) and meta["tenant_id"] == "acme"
        assert meta["source_updated_at"].endswith("+00:00")

    def test_run_caller_meta_wins(self):
        stream = ByteStream(b"text", meta={"document_name": "Mine", "file_path": "x.txt"})
        assert TextFileConverter().run(sources=[stream])["documents"][0].meta["document_name"] == "Mine"

    def test_run_names_every_bad_source(self):
        streams = [
            ByteStream(b"\xff\xfe\xfa bad", meta={"file_path": "bad.txt"}),
            ByteStream(b"   \n", meta={"file_path": "empty.txt"}),
            ByteStream(b"fine", meta={"file_path": "ok.txt"}),
        ]
        with pytest.raises(IndexingValidationError) as raised:
            TextFileConverter().run(sources=streams)
        assert len(raised.value.problems) == 2
        assert "bad.txt: undecodable bytes" in str(raised.value) and "empty.txt: the document is empty" in str(
            raised.value
        )
