"""
``NeighbourChunkRetriever``: small-to-big reading. For the strongest context chunks it fetches the chunks right
before and after them in their document, so the reader sees an entry's head, a table's header row or the value
on the next line when the hit holds only half of it (docs/contract.md, "Retrieval quality controls").

Access is structural: the neighbours are read from the store with the request's server-built access filter
ANDed in (the same filter the retrievers get), and the pipeline's ``AccessGuard`` re-checks them like every
retrieved chunk. A neighbour carries ``meta.neighbour_of`` (the SourceId of the hit it was read for) and its own
dense similarity as its score; the confidence's retrieval part counts it only when the answer cites it. The context
never grows past the request's size (``max_documents``): a neighbour of a strong hit takes the place of a weak hit.

Usage:
```python
retriever = NeighbourChunkRetriever(document_store=store, top_hits=2, window=1, min_score=0.45)
out = retriever.run(documents=context, filters=access_filter, query_embedding=vector)
out["documents"]   # the context with each strong hit's neighbours next to it, in document order
```
"""

import dataclasses
import logging
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict
from haystack.document_stores.types import DocumentStore

from components.core.similarity import cosine_similarity
from components.core.span_tags import tag_span

logger = logging.getLogger(__name__)

NEIGHBOUR_FIELD = "neighbour_of"


@component
class NeighbourChunkRetriever:
    """Adds the neighbouring chunks of the strongest hits to the context (see the module doc)."""

    # run() changes none of its inputs and keeps none of them: the planned pipeline passes them without a defensive
    # copy (docs/contract.md, "Pipeline runs").
    reads_inputs_only = True

    def __init__(
        self, document_store: DocumentStore, top_hits: int = 2, window: int = 1, min_score: float = 0.45
    ) -> None:
        """
        :param document_store: The store the context came from.
        :param top_hits: How many of the best context chunks may get neighbours (0 turns the step off).
        :param window: Chunks read on each side of a hit.
        :param min_score: A hit needs at least this dense similarity to be read further: a weak hit's
            neighbours would only add distractors.
        :raises ValueError: If a parameter is out of range.
        """
        for name, value in (("top_hits", top_hits), ("window", window)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}.")
        if not isinstance(min_score, (int, float)) or isinstance(min_score, bool) or not -1.0 <= min_score <= 1.0:
            raise ValueError(f"min_score must be a cosine similarity within [-1, 1], got {min_score!r}.")
        self.document_store = document_store
        self.top_hits = top_hits
        self.window = window
        self.min_score = float(min_score)

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(
            self,
            document_store=self.document_store,
            top_hits=self.top_hits,
            window=self.window,
            min_score=self.min_score,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "NeighbourChunkRetriever":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    def _wanted(self, hit: Document) -> list[str]:
        """The SourceIds of a hit's neighbours (``document_id:chunk_index``, the chunk id)."""
        meta = hit.meta or {}
        index, document_id = meta.get("chunk_index"), meta.get("document_id")
        if not isinstance(index, int) or not document_id or not meta.get("tenant_id"):
            return []
        return [
            f"{document_id}:{i}" for i in range(index - self.window, index + self.window + 1) if i >= 0 and i != index
        ]

    def _fetch(self, hits: list[Document], filters: dict[str, Any]) -> dict[str, Document]:
        """The hits' neighbouring chunks the access filter lets through, by id: one indexed lookup for all."""
        wanted = sorted({source_id for hit in hits for source_id in self._wanted(hit)})
        if not wanted:
            return {}
        tenants = sorted({str(hit.meta["tenant_id"]) for hit in hits if (hit.meta or {}).get("tenant_id")})
        # The access filter first: nothing here can widen it, only narrow it to the wanted chunks.
        conditions = [
            filters,
            {"field": "meta.tenant_id", "operator": "in", "value": tenants},
            {"field": "id", "operator": "in", "value": wanted},
        ]
        found = self.document_store.filter_documents({"operator": "AND", "conditions": conditions})
        return {document.id: document for document in found}

    @component.output_types(documents=list[Document])
    def run(
        self,
        documents: list[Document],
        filters: dict[str, Any],
        query_embedding: list[float] | None = None,
        max_documents: int | None = None,
    ) -> dict[str, list[Document]]:
        """
        :param documents: The context chunks, best first (``score`` = dense similarity).
        :param filters: The request's access filter (``AccessFilterBuilder``); required, never widened.
        :param query_embedding: Scores each neighbour by its own cosine similarity (without it: the hit's score
            minus a small step, so a neighbour never outranks its hit).
        :param max_documents: The request's context size (``max_context_chunks``): the context never grows past
            it. A neighbour of a strong hit takes the place of a weak hit (below ``min_score``, lowest first); when
            no weak hit is left, the neighbours of the lower-ranked strong hit go first.
        :returns: ``documents``: the context with the neighbours inserted around their hits (chunk order).
        """
        if not isinstance(filters, dict) or not filters:
            raise ValueError("NeighbourChunkRetriever needs the request's access filter; none was given.")
        if not self.top_hits or not self.window or not documents:
            return {"documents": documents}
        present = {document.id for document in documents}
        strong = [document for document in documents[: self.top_hits] if (document.score or 0.0) >= self.min_score]
        found = self._fetch(strong, filters)
        extra: dict[str, list[Document]] = {}
        for hit in strong:
            for source_id in self._wanted(hit):
                neighbour = found.get(source_id)
                if neighbour is None or neighbour.id in present:
                    continue
                present.add(neighbour.id)
                extra.setdefault(hit.id, []).append(self._scored(neighbour, hit, query_embedding))
        if not extra:
            return {"documents": documents}
        if max_documents is not None:
            documents, extra = self._within(documents, extra, max_documents)
            if not extra:
                return {"documents": documents}
        result: list[Document] = []
        for document in documents:
            around = extra.get(document.id, [])
            index = int((document.meta or {}).get("chunk_index", 0))
            result += [n for n in around if int(n.meta.get("chunk_index", 0)) < index]
            result.append(document)
            result += [n for n in around if int(n.meta.get("chunk_index", 0)) > index]
        tag_span({"sourcebound.neighbours": sum(len(found) for found in extra.values())})
        return {"documents": result}

    def _within(
        self, documents: list[Document], extra: dict[str, list[Document]], limit: int
    ) -> tuple[list[Document], dict[str, list[Document]]]:
        """The hits and neighbours that fit ``limit`` documents (see ``run``'s ``max_documents``)."""
        hits = list(documents)
        extra = {hit: list(found) for hit, found in extra.items()}
        while len(hits) + sum(len(found) for found in extra.values()) > limit:
            weak = [doc for doc in hits if (doc.score or 0.0) < self.min_score and doc.id not in extra]
            if weak:
                hits.remove(weak[-1])
                continue
            # Drop the neighbour farthest from the best hit: the last hit's last neighbour.
            last = next(hit.id for hit in reversed(documents) if extra.get(hit.id))
            extra[last].pop()
            if not extra[last]:
                del extra[last]
        return hits, extra

    @staticmethod
    def _scored(neighbour: Document, hit: Document, query_embedding: list[float] | None) -> Document:
        score = (hit.score or 0.0) - 0.01
        if query_embedding and neighbour.embedding:
            score = float(
                cosine_similarity(
                    np.asarray(query_embedding, dtype=np.float64), np.asarray([neighbour.embedding], dtype=np.float64)
                )[0]
            )
        return dataclasses.replace(
            neighbour, score=score, embedding=None, meta={**neighbour.meta, NEIGHBOUR_FIELD: hit.id}
        )
