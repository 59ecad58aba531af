"""
Converts PDF files into one Document per page with pypdf, keeping ``page_number``.

Chunks never span pages, so each chunk's ``page_number`` (1-based) is exact.
Pages without text are skipped; a PDF that cannot be parsed, is encrypted, or
has no extractable text at all (scanned images) is an error naming the file.

Usage:

```python
from components.pdf_converter import PDFPageConverter

pages = PDFPageConverter().run(sources=["handbook.pdf"], meta={"tenant_id": "acme", "tags": ["hr"]})["documents"]
pages[0].meta["page_number"]  # 1
```
"""

from pathlib import Path
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.dataclasses import ByteStream

from components.source_readers import convert_streams, to_streams


@component
class PDFPageConverter:
    """Reads ``.pdf`` sources into one Document per page with text, with meta ``page_number``."""

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "PDFPageConverter":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(
        self, sources: list[str | Path | ByteStream], meta: dict[str, Any] | list[dict[str, Any]] | None = None
    ) -> dict[str, list[Document]]:
        """
        Convert PDF sources.

        :param sources: File paths or byte streams.
        :param meta: Meta for all sources (a dict) or per source (a list of dicts).
        :returns: ``documents``: the pages with text of all sources, in order.
        :raises IndexingValidationError: Naming every PDF that cannot be parsed or has no text.
        """
        return {"documents": convert_streams(to_streams(sources, meta), "pdf")}
