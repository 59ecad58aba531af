"""
Converts HTML pages (``.html``) into one Document per section, with the stdlib ``html.parser``.

Scripts, styles, navigation, footers, asides and forms are dropped; block
elements become paragraphs; ``<h1>``/``<h2>`` (``section_max_level``) start a
section whose heading is meta ``section``. From the page it also takes
``document_name`` (``<title>``), ``language`` (``<html lang>``) and
``source_uri`` (``<link rel="canonical">`` or ``og:url``), under the caller's
meta. ``DocumentIdentifier`` later canonicalises ``source_uri`` (lower-case
host, no fragment, no tracking parameters, one trailing-slash form; see
``components.url_canonicalizer``) and applies the domain allowlist, so URL
variants of one page collapse to one ``document_id``.

Usage:

```python
from components.html_converter import HTMLSectionConverter

documents = HTMLSectionConverter().run(sources=["page.html"], meta={"tenant_id": "acme", "tags": ["help"]})["documents"]
```
"""

from pathlib import Path
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.dataclasses import ByteStream

from components.source_readers import convert_streams, to_streams


@component
class HTMLSectionConverter:
    """Reads ``.html`` sources into one Document per heading section, with meta ``section``."""

    def __init__(self, section_max_level: int = 2) -> None:
        """
        Create the converter.

        :param section_max_level: Deepest heading level (``<h1>``..``<h6>``) that starts a section.
        """
        if not 1 <= section_max_level <= 6:
            raise ValueError(f"section_max_level must be between 1 and 6, got {section_max_level}")
        self.section_max_level = section_max_level

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self, section_max_level=self.section_max_level)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "HTMLSectionConverter":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(
        self, sources: list[str | Path | ByteStream], meta: dict[str, Any] | list[dict[str, Any]] | None = None
    ) -> dict[str, list[Document]]:
        """
        Convert HTML sources.

        :param sources: File paths or byte streams.
        :param meta: Meta for all sources (a dict) or per source (a list of dicts).
        :returns: ``documents``: the sections of all pages, in order.
        :raises IndexingValidationError: Naming every page that is undecodable or has no readable text.
        """
        return {"documents": convert_streams(to_streams(sources, meta), "html", self.section_max_level)}
