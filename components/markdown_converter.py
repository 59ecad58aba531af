"""
Converts Markdown files (``.md``) into one Document per section.

Markdown is split at ``#`` and ``##`` headings first (``section_max_level``), so
no chunk spans two sections and every chunk knows its ``section`` (the heading
text). ``#`` lines inside fenced code and YAML front matter are not headings; a
heading without a body joins the next section. ``document_name`` defaults to
the first ``#`` heading, else the file name; the caller's meta wins.

Usage:

```python
from components.markdown_converter import MarkdownSectionConverter

documents = MarkdownSectionConverter().run(sources=["guide.md"], meta={"tenant_id": "acme", "tags": ["eng"]})["documents"]
documents[0].meta["section"]  # 'Installation'
```
"""

from pathlib import Path
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.dataclasses import ByteStream

from components.source_readers import convert_streams, to_streams


@component
class MarkdownSectionConverter:
    """Reads ``.md`` sources into one Document per heading section, with meta ``section``."""

    def __init__(self, section_max_level: int = 2) -> None:
        """
        Create the converter.

        :param section_max_level: Deepest heading level that starts a section (1-6); deeper headings stay inside.
        """
        if not 1 <= section_max_level <= 6:
            raise ValueError(f"section_max_level must be between 1 and 6, got {section_max_level}")
        self.section_max_level = section_max_level

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self, section_max_level=self.section_max_level)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "MarkdownSectionConverter":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(
        self, sources: list[str | Path | ByteStream], meta: dict[str, Any] | list[dict[str, Any]] | None = None
    ) -> dict[str, list[Document]]:
        """
        Convert Markdown sources.

        :param sources: File paths or byte streams.
        :param meta: Meta for all sources (a dict) or per source (a list of dicts).
        :returns: ``documents``: the sections of all sources, in order.
        :raises IndexingValidationError: Naming every source that is undecodable or empty.
        """
        return {"documents": convert_streams(to_streams(sources, meta), "md", self.section_max_level)}
