"""
``OnnxTextEmbedder``: embeds a query string with ONNX Runtime, the vector sentence-transformers gives.

The query side of the dense retrieval in ``pipelines/search.yml``, ``query.yml`` and
``query_ollama.yml``. Same vectors as ``SentenceTransformersTextEmbedder`` on the same model in float32
(cosine >= 0.9999, checked by ``tests/test_onnx_text_embedder.py``), about three times faster on one
short query, and without torch in the serving process: ONNX Runtime releases the interpreter while it
computes, so concurrent requests embed on every core. The model, its cache and the rebuild rule are
described in ``docs/embeddings.md``.
"""

import asyncio
from typing import Any

from haystack import component, default_from_dict, default_to_dict

from components.embedders.onnx_embedding import OnnxSentenceEncoder, load_encoder, resolve_precision, resolve_threads


@component
class OnnxTextEmbedder:
    """
    Embeds one string into a float32 vector (a list of floats) with ONNX Runtime.

    Usage:
    ```python
    embedder = OnnxTextEmbedder(model="packaged:all-MiniLM-L6-v2")
    embedder.warm_up()
    vector = embedder.run(text="What is Qdrant Edge?")["embedding"]  # 384 floats, unit length
    ```
    """

    def __init__(
        self,
        model: str = "packaged:all-MiniLM-L6-v2",
        prefix: str = "",
        suffix: str = "",
        threads: int | None = None,
        precision: str = "float32",
    ) -> None:
        """
        :param model: A sentence-transformers model folder, or ``packaged:all-MiniLM-L6-v2`` (the packaged copy).
        :param prefix: Text put before every input (some models want an instruction there).
        :param suffix: Text put after every input.
        :param threads: ONNX Runtime threads per forward pass; ``None`` reads ``SOURCEBOUND_EMBEDDER_THREADS``
            (default 1: concurrent requests already use every core, one each).
        :param precision: ``float32`` (the exported model) or ``int8`` (its dynamic quantization: ~2x faster, not the
            same vectors; docs/embeddings.md, "Query precision").
        :raises ValueError: If a parameter has the wrong type or the thread count or precision is out of range.
        """
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a non-empty model folder or packaged name, got {model!r}")
        for name, value in (("prefix", prefix), ("suffix", suffix)):
            if not isinstance(value, str):
                raise ValueError(f"{name} must be a string, got {type(value).__name__}")
        if threads is not None:
            resolve_threads(threads)
        self.precision = resolve_precision(precision)
        self.model = model
        self.prefix = prefix
        self.suffix = suffix
        self.threads = threads
        self._encoder: OnnxSentenceEncoder | None = None

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(
            self,
            model=self.model,
            prefix=self.prefix,
            suffix=self.suffix,
            threads=self.threads,
            precision=self.precision,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "OnnxTextEmbedder":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """
        Load the tokenizer and the ONNX session, exporting the ONNX file first if the cache lacks it.

        :raises OnnxModelError: If the ONNX model cannot be built or loaded.
        """
        if self._encoder is None:
            self._encoder = load_encoder(self.model, self.threads, self.precision)

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, Any]:
        """
        Embed one string.

        :param text: The text (a query).
        :returns: ``embedding``: the float32 vector as a list of floats.
        :raises TypeError: If ``text`` is not a string (embed documents with ``OnnxDocumentEmbedder``).
        """
        if not isinstance(text, str):
            raise TypeError(
                f"OnnxTextEmbedder expects a string, got {type(text).__name__}; "
                "embed Documents with OnnxDocumentEmbedder."
            )
        if self._encoder is None:
            self.warm_up()
        return {"embedding": self._encoder.encode([self.prefix + text + self.suffix])[0].tolist()}

    @component.output_types(embedding=list[float])
    async def run_async(self, text: str) -> dict[str, Any]:
        """Async :meth:`run`: the forward pass runs in a worker thread (it releases the interpreter)."""
        return await asyncio.to_thread(self.run, text)
