"""
Normalises the text of every document before it is cleaned, chunked, embedded and scored by BM25.

Every format goes through it (files of each type and raw text alike), so a ligature in a PDF, a
full-width form in a spreadsheet cell or a soft hyphen in a Word paragraph index as the plain
word a user types (docs/contract.md, "Text normalisation";
:func:`components.core.text_normalization.normalize_text`). Words hyphenated across line ends are
joined only for the ``source_types`` whose line ends come from a page layout (``pdf`` by
default): in Markdown or plain text a line-final hyphen is the author's.

The meta is kept as it is: ``source_hash`` still hashes the original bytes. A document whose text
is empty after normalisation is dropped with a warning (the indexing service refuses such sources
before the pipeline runs).

Usage:

```python
from haystack import Document
from components.preprocessors.text_normalizer import TextNormalizer

normalizer = TextNormalizer()
docs = normalizer.run(documents=[Document(content="speci\ufb01c work-\\nflows", meta={"source_type": "pdf"})])
docs["documents"][0].content  # 'specific workflows'
```
"""

import logging
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.core.text_normalization import normalize_text

logger = logging.getLogger(__name__)


@component
class TextNormalizer:
    """NFKC, soft hyphens and zero-width characters removed, line-end hyphenation joined, whitespace collapsed."""

    def __init__(self, join_line_hyphens_for: list[str] | None = None) -> None:
        """
        Create the normalizer.

        :param join_line_hyphens_for: The ``source_type`` values whose words hyphenated across line ends are
            joined; default ``["pdf"]``.
        :raises ValueError: If it is not a list of strings.
        """
        if join_line_hyphens_for is None:
            join_line_hyphens_for = ["pdf"]
        if not isinstance(join_line_hyphens_for, list) or not all(isinstance(t, str) for t in join_line_hyphens_for):
            raise ValueError("join_line_hyphens_for must be a list of source types, e.g. ['pdf']")
        self.join_line_hyphens_for = list(join_line_hyphens_for)

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self, join_line_hyphens_for=self.join_line_hyphens_for)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TextNormalizer":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """
        Normalise each document's text.

        :param documents: Converted documents (sections, pages, slides, sheet parts, texts).
        :returns: ``documents``: new Documents with normalised content and the same meta, in order; those left
            empty are dropped.
        """
        normalized = []
        for document in documents:
            if document.content is None:
                normalized.append(document)
                continue
            join = document.meta.get("source_type") in self.join_line_hyphens_for
            content = normalize_text(document.content, join_line_hyphens=join)
            if not content.strip():
                logger.warning(
                    "Dropped a part of document %s: no text is left after normalisation.",
                    document.meta.get("document_id"),
                )
                continue
            normalized.append(Document(content=content, meta=dict(document.meta)))
        return {"documents": normalized}
