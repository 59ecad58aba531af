"""
Routes sources to the converter of their type, and rejects unsupported types.

The type comes from the caller's ``source_type`` meta if given, else from the
file extension (``file_path`` or ``document_name``), else from the byte
stream's MIME type. Unlike Haystack's ``FileTypeRouter``, nothing is silently
left "unclassified": an unsupported source is an ``IndexingValidationError``
naming every such source and listing the supported types, raised before any
conversion, so nothing of the batch is written.

Usage:

```python
from components.routers.source_router import SourceRouter

routes = SourceRouter().run(sources=["a.md", "b.pdf"], meta={"tenant_id": "acme", "tags": ["hr"]})
routes["md"]  # [ByteStream(...)]; also txt, html, pdf, docx, pptx, xlsx, csv, yaml
```
"""

from pathlib import Path
from typing import Any

from haystack import component, default_from_dict, default_to_dict
from haystack.dataclasses import ByteStream

from components.converters.source_readers import stream_label, to_streams
from components.core.document_identity import (
    IndexingValidationError,
    source_type_for_path,
    supported_types_text,
)

_TYPE_BY_MIME = {
    "text/plain": "txt",
    "text/markdown": "md",
    "text/x-markdown": "md",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "application/pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/csv": "csv",
    "application/yaml": "yaml",
    "application/x-yaml": "yaml",
    "text/yaml": "yaml",
}
ROUTES = ("txt", "md", "html", "pdf", "docx", "pptx", "xlsx", "csv", "yaml")


def route_for(stream: ByteStream) -> str | None:
    """The converter route of a stream (one of :data:`ROUTES`), or ``None`` when unsupported."""
    declared = stream.meta.get("source_type")
    if declared:
        return {"text": "txt"}.get(declared, declared) if declared in (*ROUTES, "text") else None
    for key in ("file_path", "document_name"):
        if stream.meta.get(key):
            return source_type_for_path(Path(str(stream.meta[key])))
    if stream.mime_type:
        return _TYPE_BY_MIME.get(stream.mime_type.split(";")[0].strip().lower())
    return None


@component
class SourceRouter:
    """Sends each source to the output of its type (:data:`ROUTES`); unsupported types are an error."""

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SourceRouter":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(
        txt=list[ByteStream],
        md=list[ByteStream],
        html=list[ByteStream],
        pdf=list[ByteStream],
        docx=list[ByteStream],
        pptx=list[ByteStream],
        xlsx=list[ByteStream],
        csv=list[ByteStream],
        yaml=list[ByteStream],
    )
    def run(
        self, sources: list[str | Path | ByteStream], meta: dict[str, Any] | list[dict[str, Any]] | None = None
    ) -> dict[str, list[ByteStream]]:
        """
        Route sources by type.

        :param sources: File paths or byte streams (their meta travels with them).
        :param meta: Meta for all sources (a dict) or per source (a list of dicts).
        :returns: One list of byte streams per type (possibly empty), so every converter runs.
        :raises IndexingValidationError: Naming every unsupported source and the supported types.
        """
        routes: dict[str, list[ByteStream]] = {route: [] for route in ROUTES}
        problems = []
        try:
            streams = to_streams(sources, meta)
        except (OSError, ValueError) as error:
            raise IndexingValidationError([f"a source cannot be read: {error}"]) from error
        for position, stream in enumerate(streams):
            route = route_for(stream)
            if route is None:
                problems.append(
                    f"{stream_label(stream, position)}: unsupported file type; "
                    f"supported types are {supported_types_text()}"
                )
            else:
                routes[route].append(stream)
        if problems:
            raise IndexingValidationError(problems)
        return routes
