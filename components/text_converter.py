"""
Converts plain-text files (``.txt``) into Documents.

Bytes are decoded strictly (UTF-8, or UTF-16 with a byte-order mark): undecodable
bytes, binary data and empty files are errors naming the file, never silently
replaced characters. Each Document carries ``source_type: txt``, ``source_hash``
(SHA-256 of the bytes), ``document_name`` (the file name) and
``source_updated_at`` (the file's modification time), under the caller's meta.

Usage:

```python
from components.text_converter import TextFileConverter

documents = TextFileConverter().run(sources=["notes.txt"], meta={"tenant_id": "acme", "tags": ["hr"]})["documents"]
```
"""

from pathlib import Path
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.dataclasses import ByteStream

from components.source_readers import convert_streams, to_streams


@component
class TextFileConverter:
    """Reads ``.txt`` sources into one Document each."""

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TextFileConverter":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(
        self, sources: list[str | Path | ByteStream], meta: dict[str, Any] | list[dict[str, Any]] | None = None
    ) -> dict[str, list[Document]]:
        """
        Convert text sources.

        :param sources: File paths or byte streams.
        :param meta: Meta for all sources (a dict) or per source (a list of dicts).
        :returns: ``documents``: one Document per source.
        :raises IndexingValidationError: Naming every source that is undecodable or empty.
        """
        return {"documents": convert_streams(to_streams(sources, meta), "txt")}
