import pytest
from haystack.dataclasses import ByteStream

from components.core.document_identity import IndexingValidationError
from components.routers.source_router import SourceRouter


@pytest.mark.unit
class TestSourceRouter:
    def test_init(self):
        assert isinstance(SourceRouter(), SourceRouter)

    def test_to_dict(self):
        assert SourceRouter().to_dict() == {
            "type": "components.routers.source_router.SourceRouter",
            "init_parameters": {},
        }

    def test_from_dict(self):
        assert isinstance(SourceRouter.from_dict(SourceRouter().to_dict()), SourceRouter)

    def test_run_routes_by_extension_mime_and_declared_type(self, tmp_path):
        (tmp_path / "a.MD").write_text("# x")
        sources = [
            tmp_path / "a.MD",
            ByteStream(b"x", meta={"file_path": "b.htm"}),
            ByteStream(b"x", mime_type="application/pdf"),
            ByteStream(b"x", meta={"source_type": "text"}),
            ByteStream(b"x", meta={"file_path": "c.DOCX"}),
            ByteStream(b"x", meta={"document_name": "deck.pptx"}),
            ByteStream(b"x", mime_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
            ByteStream(b"x", mime_type="text/csv"),
            ByteStream(b"x", meta={"file_path": "specs/svc.project-spec.yml"}),
            ByteStream(b"x", meta={"document_name": "openapi.YAML"}),
        ]
        routes = SourceRouter().run(sources=sources, meta={"tenant_id": "acme"})
        assert {route: len(streams) for route, streams in routes.items()} == {
            "txt": 1,
            "md": 1,
            "html": 1,
            "pdf": 1,
            "docx": 1,
            "pptx": 1,
            "xlsx": 1,
            "csv": 1,
            "yaml": 2,
        }
        assert routes["md"][0].meta["tenant_id"] == "acme"

    def test_run_empty_batch_gives_every_route(self):
        assert SourceRouter().run(sources=[]) == {
            route: [] for route in ("txt", "md", "html", "pdf", "docx", "pptx", "xlsx", "csv", "yaml")
        }

    def test_run_unsupported_types_list_supported_ones(self):
        sources = [ByteStream(b"x", meta={"file_path": "a.odt"}), ByteStream(b"x", meta={"file_path": "b.png"})]
        with pytest.raises(IndexingValidationError) as raised:
            SourceRouter().run(sources=sources)
        message = str(raised.value)
        assert "a.odt: unsupported file type" in message and "b.png" in message
        assert ".html, .htm" not in message and ".md" in message and ".pdf" in message and ".txt" in message
