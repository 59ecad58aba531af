"""
``SentenceVectorIndexer``: embeds the reader's sentences of every chunk at indexing time and keeps their vectors
in a :class:`components.stores.sentence_vector_cache.SentenceVectorCache` file, so the query pipeline's reader
reads them instead of embedding ~20 sentences per request (docs/reader.md, "Cost").

It sits between the chunk embedder and the writer of ``pipelines/indexing.yml`` and passes the chunks on
unchanged. The sentences are the ones the query pipeline's ``ContextSentenceSplitter`` will select (the same
:func:`components.core.text_analysis.reading_sentences`), embedded by the same model; sentences already in the
file (an unchanged paragraph of a re-indexed document) are not embedded again. Vectors written for a chunk the
writer then fails to store are harmless: the file is a cache keyed by text, read only for retrieved chunks.
"""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.core.text_analysis import reading_sentences
from components.embedders.onnx_document_embedder import OnnxDocumentEmbedder


@component
class SentenceVectorIndexer:
    """
    Usage:
    ```python
    indexer = SentenceVectorIndexer(vector_cache_path="data/sentence_vectors.sqlite")
    indexer.warm_up()
    chunks = indexer.run(documents=embedded_chunks)["documents"]  # the same chunks; their sentences are stored
    ```
    """

    def __init__(
        self,
        vector_cache_path: str,
        model: str = "packaged:all-MiniLM-L6-v2",
        min_sentence_words: int = 3,
        batch_size: int = 32,
        concurrent_batches: int = 1,
        threads: int | None = None,
        cache_size: int = 20000,
    ) -> None:
        """
        :param vector_cache_path: The sentence vector file the query pipeline's sentence embedder reads.
        :param model: The embedding model: the query pipeline's ``sentence_embedder`` model.
        :param min_sentence_words: The query pipeline's ``sentences.min_sentence_words`` (shorter fragments are
            never read, so never embedded).
        :param batch_size: Sentences per forward pass.
        :param concurrent_batches: Batches embedded at once (see ``OnnxDocumentEmbedder``).
        :param threads: ONNX Runtime threads per forward pass (``None``: ``SOURCEBOUND_EMBEDDER_THREADS``).
        :param cache_size: Distinct sentence texts whose vectors are kept in memory, so boilerplate repeated across
            documents (a footer, a disclaimer) is embedded once per batch run.
        :raises ValueError: If a parameter has the wrong type or is out of range.
        """
        if isinstance(min_sentence_words, bool) or not isinstance(min_sentence_words, int) or min_sentence_words < 1:
            raise ValueError(f"min_sentence_words must be a positive integer, got {min_sentence_words!r}")
        self.min_sentence_words = min_sentence_words
        self._embedder = OnnxDocumentEmbedder(
            model=model,
            batch_size=batch_size,
            threads=threads,
            concurrent_batches=concurrent_batches,
            cache_size=cache_size,
            vector_cache_path=vector_cache_path,
        )

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        embedder = self._embedder
        return default_to_dict(
            self,
            vector_cache_path=embedder.vector_cache_path,
            model=embedder.model,
            min_sentence_words=self.min_sentence_words,
            batch_size=embedder.batch_size,
            concurrent_batches=embedder.concurrent_batches,
            threads=embedder.threads,
            cache_size=embedder.cache_size,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SentenceVectorIndexer":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Load the model and open the sentence vector file."""
        self._embedder.warm_up()

    def sentences(self, documents: list[Document]) -> list[Document]:
        """The reader's sentences of ``documents`` that can be stored (chunks with a tenant and a document id)."""
        sentences = []
        for document in documents:
            tenant_id, document_id = document.meta.get("tenant_id"), document.meta.get("document_id")
            if not isinstance(tenant_id, str) or not isinstance(document_id, str):
                continue
            meta = {"tenant_id": tenant_id, "document_id": document_id}
            for _, _, _, sentence in reading_sentences(document.content or "", self.min_sentence_words):
                sentences.append(Document(content=sentence, meta=meta))
        return sentences

    def clear_memory(self) -> None:
        """Forget the vectors kept in memory (the file keeps its own): the next run embeds what the file lacks."""
        self._embedder.clear_memory()

    @component.output_types(documents=list[Document], sentences_indexed=int)
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """
        Store the sentence vectors of ``documents``.

        :param documents: The embedded chunks (``meta.tenant_id``, ``meta.document_id``).
        :returns: ``documents``: the same chunks, unchanged; ``sentences_indexed``: sentences whose vectors are
            now in the file (found there or computed).
        """
        sentences = self.sentences(documents)
        self._embedder.vectors(sentences)
        return {"documents": documents, "sentences_indexed": len(sentences)}
