"""
``ChunkContextHeader``: gives every chunk its contextual header (docs/contract.md, "Documents, chunks and
SourceIds"), so the embedder (``meta_fields_to_embed``) and the BM25 vector (``Bm25DocumentEmbedder``'s
``meta_fields_to_embed``) read a chunk together with where it belongs: its document's name and its section.
A man page's option paragraph that never names its program, or a slide that reads "Happy haystack testing!",
is then found by a question naming the program or the deck. The chunk's text, its citations and snippets are
unchanged: the header lives in ``meta.context_header``.

Every chunk also records ``meta.index_format``, the format of the index it was written for; the change detector
re-indexes a document stored in another format (docs/operations.md, "Re-indexing after an index-format change").

Usage:
```python
from components.preprocessors.chunk_context_header import ChunkContextHeader

chunks = ChunkContextHeader().run(documents=chunks)["documents"]
chunks[0].meta["context_header"]   # "dpkg(1) › OPTIONS"
```
"""

import dataclasses
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.core.chunk_context import CONTEXT_HEADER_FIELD, INDEX_FORMAT, INDEX_FORMAT_FIELD, context_header


@component
class ChunkContextHeader:
    """Sets ``meta.context_header`` from the chunk's ``document_name`` and ``section``, and ``meta.index_format``."""

    def __init__(self, enabled: bool = True, index_format: str = INDEX_FORMAT) -> None:
        """
        :param enabled: ``False`` writes an empty header (chunks embedded and keyword-indexed by their text alone).
        :param index_format: Recorded as every chunk's ``meta.index_format``; the change detector's must match.
        """
        if not isinstance(enabled, bool):
            raise ValueError(f"enabled must be true or false, got {enabled!r}.")
        if not isinstance(index_format, str) or not index_format:
            raise ValueError(f"index_format must be a non-empty string, got {index_format!r}.")
        self.enabled = enabled
        self.index_format = index_format

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(self, enabled=self.enabled, index_format=self.index_format)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ChunkContextHeader":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    def header(self, meta: dict[str, Any]) -> str:
        """The header for a chunk's meta, computed afresh (a stale stored header is replaced)."""
        if not self.enabled:
            return ""
        return context_header({key: value for key, value in meta.items() if key != CONTEXT_HEADER_FIELD})

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """
        :param documents: Chunks with ``meta.document_name`` / ``meta.section`` where known.
        :returns: ``documents``: copies with ``meta.context_header`` (``""`` when nothing is known) and
            ``meta.index_format`` set.
        """
        return {
            "documents": [
                dataclasses.replace(
                    document,
                    meta={
                        **document.meta,
                        CONTEXT_HEADER_FIELD: self.header(document.meta),
                        INDEX_FORMAT_FIELD: self.index_format,
                    },
                )
                for document in documents
            ]
        }
