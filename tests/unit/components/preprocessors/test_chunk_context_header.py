"""ChunkContextHeader: each chunk's contextual header and index format (docs/contract.md, "Documents, chunks
and SourceIds")."""

import pytest
from haystack import Document

from components.core.chunk_context import INDEX_FORMAT
from components.preprocessors.chunk_context_header import ChunkContextHeader


def _chunk(**meta) -> Document:
    return Document(id="dpkg-1:4", content="--force-all turns on every force option.", meta=meta)


@pytest.mark.unit
class TestChunkContextHeader:
    def test_init(self):
        header = ChunkContextHeader()
        assert header.enabled is True and header.index_format == INDEX_FORMAT
        for bad in ({"enabled": "yes"}, {"index_format": ""}):
            with pytest.raises(ValueError):
                ChunkContextHeader(**bad)

    def test_to_dict(self):
        assert ChunkContextHeader(enabled=False, index_format="v9").to_dict() == {
            "type": "components.preprocessors.chunk_context_header.ChunkContextHeader",
            "init_parameters": {"enabled": False, "index_format": "v9"},
        }

    def test_from_dict(self):
        restored = ChunkContextHeader.from_dict(ChunkContextHeader(index_format="v2").to_dict())
        assert (restored.enabled, restored.index_format) == (True, "v2")

    def test_run_sets_header_and_format_and_keeps_the_text(self):
        chunk = _chunk(document_name="dpkg(1)", section="OPTIONS", context_header="stale")
        out = ChunkContextHeader().run(documents=[chunk])["documents"][0]
        assert out.meta["context_header"] == "dpkg(1) › OPTIONS" and out.meta["index_format"] == INDEX_FORMAT
        assert out.content == chunk.content and out.id == chunk.id and chunk.meta["context_header"] == "stale"

    def test_run_disabled_writes_an_empty_header(self):
        out = ChunkContextHeader(enabled=False).run(documents=[_chunk(document_name="dpkg(1)")])["documents"][0]
        assert out.meta["context_header"] == "" and out.meta["index_format"] == INDEX_FORMAT
