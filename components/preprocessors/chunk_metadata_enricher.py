"""
Completes the meta of every chunk and gives it its citation id.

After chunking, each chunk gets, per document (``tenant_id``, ``document_id``) in
order:

* ``chunk_index`` (0, 1, 2, ...) and ``id = "{document_id}:{chunk_index}"``:
  exactly the SourceId a citation uses (``[SourceId: doc-abc123:2]``);
* ``chunk_hash`` (SHA-256 of the chunk text) and ``token_count`` (tiktoken; the
  chunker's count is kept when present);
* ``indexed_at``: when this run wrote it (ISO 8601 UTC, one time per run), so stale documents can be found
  (docs/contract.md, "Feedback and knowledge gaps");
* every other field of the data model (``document_identity.CHUNK_META_FIELDS``),
  ``None`` when unknown, and ``verified``/``tainted`` as booleans.

A chunk without ``tenant_id``, ``tags`` or a valid ``document_id`` means the
pipeline is miswired (no ``DocumentIdentifier`` before it): that is an error,
never a chunk written without its access fields.

Usage:

```python
from components.preprocessors.chunk_metadata_enricher import ChunkMetadataEnricher

chunks = ChunkMetadataEnricher().run(documents=chunks)["documents"]
chunks[0].id  # 'doc-…:0'
```
"""

from datetime import UTC, datetime
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.core.document_identity import CHUNK_META_FIELDS, content_hash, document_id_problem, normalise_tags
from components.preprocessors.token_chunker import DEFAULT_ENCODING, count_tokens


@component
class ChunkMetadataEnricher:
    """Assigns ``chunk_index``, the id ``document_id:chunk_index``, ``chunk_hash`` and the full data-model meta."""

    def __init__(self, encoding: str = DEFAULT_ENCODING) -> None:
        """
        Create the enricher.

        :param encoding: tiktoken encoding for ``token_count`` when the chunker did not set it.
        """
        self.encoding = encoding

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self, encoding=self.encoding)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ChunkMetadataEnricher":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """
        Enrich chunks.

        :param documents: Chunks in document order, each with source-level meta.
        :returns: ``documents``: the chunks with ids and complete meta.
        :raises ValueError: If a chunk lacks ``tenant_id``, ``tags`` or a valid ``document_id``.
        """
        next_index: dict[tuple[str, str], int] = {}
        enriched = []
        indexed_at = datetime.now(UTC).isoformat()
        for chunk in documents:
            meta = dict(chunk.meta)
            problem = document_id_problem(meta.get("document_id"))
            if not meta.get("tenant_id") or not normalise_tags(meta.get("tags")) or problem:
                raise ValueError(
                    f"chunk {chunk.content[:40]!r} lacks tenant_id, tags or a valid document_id "
                    f"({problem or 'missing'}); "
                    "put a DocumentIdentifier before the chunker in the pipeline"
                )
            key = (meta["tenant_id"], meta["document_id"])
            index = next_index.get(key, 0)
            next_index[key] = index + 1
            content = chunk.content or ""
            meta["chunk_index"] = index
            meta["chunk_hash"] = content_hash(content)
            if not isinstance(meta.get("token_count"), int):
                meta["token_count"] = count_tokens(content, self.encoding)
            meta["verified"] = bool(meta.get("verified", False))
            meta["tainted"] = bool(meta.get("tainted", False))
            meta["indexed_at"] = indexed_at
            for field in CHUNK_META_FIELDS:
                meta.setdefault(field, None)
            enriched.append(Document(id=f"{meta['document_id']}:{index}", content=content, meta=meta))
        return {"documents": enriched}
