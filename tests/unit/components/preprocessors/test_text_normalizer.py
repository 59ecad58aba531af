import pytest
from haystack import Document
from support.indexing_support import roundtrip

from components.preprocessors.text_normalizer import TextNormalizer


@pytest.mark.unit
class TestTextNormalizer:
    def test_init(self):
        assert TextNormalizer().join_line_hyphens_for == ["pdf"]
        assert TextNormalizer(join_line_hyphens_for=[]).join_line_hyphens_for == []
        with pytest.raises(ValueError, match="list of source types"):
            TextNormalizer(join_line_hyphens_for="pdf")

    def test_to_dict(self):
        assert TextNormalizer(join_line_hyphens_for=["pdf", "pptx"]).to_dict() == {
            "type": "components.preprocessors.text_normalizer.TextNormalizer",
            "init_parameters": {"join_line_hyphens_for": ["pdf", "pptx"]},
        }

    def test_from_dict(self):
        restored = TextNormalizer.from_dict(TextNormalizer(join_line_hyphens_for=["x"]).to_dict())
        assert restored.join_line_hyphens_for == ["x"]
        assert roundtrip(TextNormalizer()).join_line_hyphens_for == ["pdf"]

    def test_run_normalises_every_format_and_keeps_meta(self):
        documents = [
            Document(
                content="speci\ufb01c work-\nflows", meta={"source_type": "pdf", "source_hash": "h1", "page_number": 2}
            ),
            Document(content="speci\ufb01c work-\nflows", meta={"source_type": "md", "section": "Intro"}),
            Document(content="Ｆｕｌｌ\u00adwidth  cell", meta={"source_type": "xlsx", "section": "Sheet"}),
        ]
        result = TextNormalizer().run(documents=documents)["documents"]
        assert [document.content for document in result] == [
            "specific workflows",
            "specific work-\nflows",
            "Fullwidth cell",
        ]
        assert [document.meta for document in result] == [document.meta for document in documents]
        assert documents[0].content == "speci\ufb01c work-\nflows"  # the inputs are not mutated

    def test_run_drops_a_part_left_empty(self, caplog):
        result = TextNormalizer().run(
            documents=[Document(content="\u00ad\u200b ", meta={"document_id": "d"}), Document(content="kept")]
        )
        assert [document.content for document in result["documents"]] == ["kept"]
        assert "no text is left" in caplog.text
