"""
``OnnxDocumentEmbedder``: embeds documents with ONNX Runtime, the vectors sentence-transformers gives.

The document side of ``pipelines/indexing.yml``. Same vectors as ``SentenceTransformersDocumentEmbedder``
on the same model in float32 (cosine >= 0.9999, checked by ``tests/test_onnx_document_embedder.py``).
Documents are tokenized first and batched by length, so a batch is padded only to its own longest
text rather than to the longest of an arbitrary mix. See ``docs/embeddings.md``.
"""

import logging
import sqlite3
import threading
from collections import OrderedDict
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict

from components.core.documents import evolve
from components.embedders.onnx_embedding import OnnxSentenceEncoder, load_encoder, model_digest, resolve_threads
from components.stores.sentence_vector_cache import SentenceVectorCache, stored_vector

logger = logging.getLogger(__name__)


@component
class OnnxDocumentEmbedder:
    """
    Sets ``embedding`` (float32, as a list of floats) on every document, computed with ONNX Runtime.

    The embedded text is ``prefix + separator.join(meta values of meta_fields_to_embed + [content]) + suffix``,
    as in Haystack's SentenceTransformersDocumentEmbedder.

    Usage:
    ```python
    embedder = OnnxDocumentEmbedder(model="packaged:all-MiniLM-L6-v2", batch_size=32)
    embedder.warm_up()
    documents = embedder.run(documents=[Document(content="Qdrant Edge runs in process.")])["documents"]
    ```
    """

    # run() changes none of its inputs and keeps none of them: the planned pipeline passes them without a defensive
    # copy (docs/contract.md, "Pipeline runs").
    reads_inputs_only = True

    def __init__(
        self,
        model: str = "packaged:all-MiniLM-L6-v2",
        batch_size: int = 32,
        prefix: str = "",
        suffix: str = "",
        meta_fields_to_embed: list[str] | None = None,
        embedding_separator: str = "\n",
        threads: int | None = None,
        concurrent_batches: int = 1,
        cache_size: int = 0,
        vector_cache_path: str | None = None,
    ) -> None:
        """
        :param model: A sentence-transformers model folder, or ``packaged:all-MiniLM-L6-v2`` (the packaged copy).
        :param batch_size: Texts per forward pass (texts of similar length go together).
        :param prefix: Text put before every document's text.
        :param suffix: Text put after every document's text.
        :param meta_fields_to_embed: Meta fields whose values are embedded with the content.
        :param embedding_separator: Joins the meta values and the content.
        :param threads: ONNX Runtime threads per forward pass; ``None`` reads ``SOURCEBOUND_EMBEDDER_THREADS``
            (default 1).
        :param concurrent_batches: Batches embedded at once (worker threads on the one shared session; each
            releases the interpreter). ``pipelines/indexing.yml`` uses 2, one per core of the target machine;
            unlike a second intra-op thread it needs no second session (~100 MB) and costs no extra CPU.
        :param cache_size: Most texts whose vectors are kept (least recently used dropped first; 0: no cache). The
            reading step of ``pipelines/query.yml`` embeds the sentences of every context chunk per request; a
            sentence seen before is served from here (1.5 KB per text), so popular documents are embedded once.
        :param vector_cache_path: A :class:`SentenceVectorCache` file shared with the indexing pipeline: documents
            with ``meta.tenant_id`` and ``meta.document_id`` are looked up there first and what was computed is
            written back; every vector is then rounded as the file stores it, hit or not (docs/reader.md, "Cost").
        :raises ValueError: If a parameter has the wrong type or is out of range.
        """
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a non-empty model folder or packaged name, got {model!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a whole number >= 1, got {batch_size!r}")
        for name, value in (("prefix", prefix), ("suffix", suffix), ("embedding_separator", embedding_separator)):
            if not isinstance(value, str):
                raise ValueError(f"{name} must be a string, got {type(value).__name__}")
        if meta_fields_to_embed is not None and (
            not isinstance(meta_fields_to_embed, list)
            or not all(isinstance(field, str) for field in meta_fields_to_embed)
        ):
            raise ValueError(f"meta_fields_to_embed must be a list of field names, got {meta_fields_to_embed!r}")
        if threads is not None:
            resolve_threads(threads)
        if (
            isinstance(concurrent_batches, bool)
            or not isinstance(concurrent_batches, int)
            or not 1 <= concurrent_batches <= 64
        ):
            raise ValueError(f"concurrent_batches must be a whole number from 1 to 64, got {concurrent_batches!r}")
        if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 0:
            raise ValueError(f"cache_size must be a whole number >= 0 (0: no cache), got {cache_size!r}")
        if vector_cache_path is not None and (not isinstance(vector_cache_path, str) or not vector_cache_path):
            raise ValueError(f"vector_cache_path must be a file path or None, got {vector_cache_path!r}")
        self.model = model
        self.vector_cache_path = vector_cache_path
        self._vector_cache: SentenceVectorCache | None = None
        self.batch_size = batch_size
        self.concurrent_batches = concurrent_batches
        self.prefix = prefix
        self.suffix = suffix
        self.meta_fields_to_embed = list(meta_fields_to_embed or [])
        self.embedding_separator = embedding_separator
        self.threads = threads
        self.cache_size = cache_size
        self._encoder: OnnxSentenceEncoder | None = None
        # Text -> vector, least recently used first. Vectors depend only on the text, so a hit is exact.
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(
            self,
            model=self.model,
            batch_size=self.batch_size,
            prefix=self.prefix,
            suffix=self.suffix,
            meta_fields_to_embed=self.meta_fields_to_embed,
            embedding_separator=self.embedding_separator,
            threads=self.threads,
            concurrent_batches=self.concurrent_batches,
            cache_size=self.cache_size,
            vector_cache_path=self.vector_cache_path,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "OnnxDocumentEmbedder":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """
        Load the tokenizer and the ONNX session, exporting the ONNX file first if the cache lacks it.

        :raises OnnxModelError: If the ONNX model cannot be built or loaded.
        """
        if self._encoder is None:
            self._encoder = load_encoder(self.model, self.threads)
        if self.vector_cache_path is not None and self._vector_cache is None:
            model_key = f"{self.model}@{model_digest(self._encoder.layout.folder)}"
            self._vector_cache = SentenceVectorCache(self.vector_cache_path, model_key=model_key)

    def clear_memory(self) -> None:
        """Empty the in-memory vector cache (``cache_size``)."""
        with self._cache_lock:
            self._cache.clear()

    def _text(self, document: Document) -> str:
        meta = [str(document.meta[key]) for key in self.meta_fields_to_embed if document.meta.get(key) is not None]
        return self.prefix + self.embedding_separator.join([*meta, document.content or ""]) + self.suffix

    def _encode(self, texts: list[str]) -> np.ndarray:
        return self._encoder.encode(texts, batch_size=self.batch_size, concurrent_batches=self.concurrent_batches)

    def _cached_encode(self, texts: list[str]) -> list[np.ndarray]:
        """Embed only the texts the cache lacks (each once), then serve every text from the cache's vectors."""
        with self._cache_lock:
            found = {text: self._cache[text] for text in texts if text in self._cache}
            for text in found:
                self._cache.move_to_end(text)
        missing = list(dict.fromkeys(text for text in texts if text not in found))
        if missing:
            found.update(zip(missing, self._encode(missing), strict=True))
            with self._cache_lock:
                for text in missing:
                    self._cache[text] = found[text]
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        return [found[text] for text in texts]

    def _compute(self, texts: list[str]) -> list[np.ndarray]:
        """Embed ``texts`` through the in-memory cache when it has one."""
        return list(self._cached_encode(texts) if self.cache_size else self._encode(texts))

    def _stored_encode(self, documents: list[Document], texts: list[str]) -> list[np.ndarray]:
        """Vectors from the file where it has them; the rest computed, written back; all rounded alike."""
        vectors: list[np.ndarray | None] = [None] * len(documents)
        by_tenant: dict[str, list[int]] = {}
        for index, document in enumerate(documents):
            tenant, document_id = document.meta.get("tenant_id"), document.meta.get("document_id")
            if isinstance(tenant, str) and isinstance(document_id, str):
                by_tenant.setdefault(tenant, []).append(index)
        for tenant, indexes in by_tenant.items():
            try:
                found = self._vector_cache.get(tenant, [(documents[i].meta["document_id"], texts[i]) for i in indexes])
            except sqlite3.Error as error:  # a cache: an unreadable file costs time, never the request
                logger.warning("OnnxDocumentEmbedder: sentence vector file unreadable (%s); embedding instead", error)
                found = {}
            for index in indexes:
                vectors[index] = found.get((documents[index].meta["document_id"], texts[index]))
        missing = [index for index, vector in enumerate(vectors) if vector is None]
        if missing:
            computed = self._compute([texts[i] for i in missing])
            for index, vector in zip(missing, computed, strict=True):
                vectors[index] = stored_vector(vector)
            computed_now = set(missing)
            for tenant, indexes in by_tenant.items():
                fresh = [i for i in indexes if i in computed_now]
                try:
                    self._vector_cache.put(
                        tenant, [(documents[i].meta["document_id"], texts[i], vectors[i]) for i in fresh]
                    )
                except sqlite3.Error as error:  # e.g. a full disk: the vectors are still returned
                    logger.warning("OnnxDocumentEmbedder: sentence vectors not stored (%s)", error)
        return vectors

    def vectors(self, documents: list[Document]) -> list[np.ndarray]:
        """The float32 vectors of ``documents`` (what ``run`` sets as ``embedding``), without copying documents."""
        if not documents:
            return []
        if self._encoder is None:
            self.warm_up()
        texts = [self._text(document) for document in documents]
        if self._vector_cache is not None:
            return self._stored_encode(documents, texts)
        return self._compute(texts)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """
        Embed documents.

        :param documents: The documents; they are not changed (copies carry the embeddings).
        :returns: ``documents``: copies with ``embedding`` set, in the input order.
        :raises TypeError: If ``documents`` is not a list of Documents (embed a string with ``OnnxTextEmbedder``).
        """
        if not isinstance(documents, list) or not all(isinstance(document, Document) for document in documents):
            raise TypeError("OnnxDocumentEmbedder expects a list of Documents; embed a string with OnnxTextEmbedder.")
        if not documents:
            return {"documents": []}
        vectors = self.vectors(documents)
        return {
            "documents": [
                evolve(document, embedding=vector.tolist())  # dataclasses.replace, cheaper (a hundred per /rag)
                for document, vector in zip(documents, vectors, strict=True)
            ]
        }
