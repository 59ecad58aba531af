"""
The shared body of the four source converters (``text_converter``, ``markdown_converter``,
``html_converter``, ``pdf_converter``): each is one of these classes with its ``source_type``,
so they read, validate and serialise through exactly one piece of code
(:func:`components.converters.source_readers.convert_streams`).

Usage:

```python
from haystack import component

from components.converters.source_converter import SectionSourceConverter


@component
class MarkdownSectionConverter(SectionSourceConverter):
    source_type = "md"
```
"""

from pathlib import Path
from typing import Any, ClassVar

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.dataclasses import ByteStream

from components.converters.source_readers import convert_streams, to_streams


class SourceConverter:
    """A converter without init parameters: ``run`` reads every source as ``source_type``."""

    source_type: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self, **self._init_parameters())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        """Deserialise the component."""
        return default_from_dict(cls, data)

    def _init_parameters(self) -> dict[str, Any]:
        return {}

    def _convert(self, streams: list[ByteStream]) -> list[Document]:
        return convert_streams(streams, self.source_type)

    @component.output_types(documents=list[Document])
    def run(
        self, sources: list[str | Path | ByteStream], meta: dict[str, Any] | list[dict[str, Any]] | None = None
    ) -> dict[str, list[Document]]:
        """
        Convert sources of this converter's type.

        :param sources: File paths or byte streams.
        :param meta: Meta for all sources (a dict) or per source (a list of dicts).
        :returns: ``documents``: the Documents of all sources (sections or pages where the type has them), in order.
        :raises IndexingValidationError: Naming every source that is undecodable, unparsable or has no text.
        """
        return {"documents": self._convert(to_streams(sources, meta))}


class SectionSourceConverter(SourceConverter):
    """A converter that splits each source at headings down to ``section_max_level``."""

    def __init__(self, section_max_level: int = 2) -> None:
        """
        Create the converter.

        :param section_max_level: Deepest heading level (1-6) that starts a section; deeper headings stay inside.
        """
        if not 1 <= section_max_level <= 6:
            raise ValueError(f"section_max_level must be between 1 and 6, got {section_max_level}")
        self.section_max_level = section_max_level

    def _init_parameters(self) -> dict[str, Any]:
        return {"section_max_level": self.section_max_level}

    def _convert(self, streams: list[ByteStream]) -> list[Document]:
        return convert_streams(streams, self.source_type, self.section_max_level)
