"""
``ContextSentenceSplitter``: turns the budgeted context chunks into one ``Document``
per sentence, so the query pipeline can embed every sentence in one batched call
and :class:`components.generators.sentence_reader.SentenceReader` can pick the answer from them
(docs/reader.md, "Pipeline").

Sentences are cut with :func:`components.core.text_analysis.reading_sentences` (hard-wrapped
lines joined; headings, list items and table rows are their own sentences). A
sentence keeps where it came from in ``meta``:

* ``source_id``: the chunk's SourceId (what the answer cites);
* ``chunk_rank``: the chunk's position in the context (0 = first);
* ``position``: the sentence's position in its chunk (0 = first);
* ``block`` / ``block_position``: its block in the chunk (a paragraph, list item or reference entry,
  :func:`components.core.text_analysis.sentence_blocks`) and its place in that block;
* ``chunk_score``: the chunk's dense similarity (``None`` when it has none);
* ``context_header``: the chunk's contextual header (document name, section;
  :func:`components.core.chunk_context.context_header`);
* ``tenant_id`` / ``document_id``: the chunk's, the key of its stored sentence vectors;
* ``language``: the chunk's language (ISO 639-1, detected at indexing), when it has one.

Fragments shorter than ``min_sentence_words`` and ALL-CAPS headings are dropped: they
are labels, not answers, and embedding them only costs time. At most
``max_sentences`` sentences are kept (in context order), which bounds the per-request
embedding cost.
"""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.core.chunk_context import CONTEXT_HEADER_FIELD, context_header
from components.core.text_analysis import reading_sentences, source_id_of


@component
class ContextSentenceSplitter:
    """
    Usage:
    ```python
    splitter = ContextSentenceSplitter(min_sentence_words=3)
    sentences = splitter.run(documents=context_chunks)["sentences"]
    sentences[0].content, sentences[0].meta["source_id"]  # ("Employees receive 25 vacation days.", "hr:2")
    ```
    """

    # run() changes none of its inputs and keeps none of them: the planned pipeline passes them without a defensive
    # copy (docs/contract.md, "Pipeline runs").
    reads_inputs_only = True

    def __init__(self, min_sentence_words: int = 3, max_sentences: int = 256) -> None:
        """
        :param min_sentence_words: Shorter fragments (headings, labels) are dropped.
        :param max_sentences: Most sentences kept per request, in context order (bounds the embedding cost).
        """
        if not isinstance(min_sentence_words, int) or isinstance(min_sentence_words, bool) or min_sentence_words < 1:
            raise ValueError(f"min_sentence_words must be a positive integer, got {min_sentence_words!r}.")
        if not isinstance(max_sentences, int) or isinstance(max_sentences, bool) or max_sentences < 1:
            raise ValueError(f"max_sentences must be a positive integer, got {max_sentences!r}.")
        self.min_sentence_words = min_sentence_words
        self.max_sentences = max_sentences

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(self, min_sentence_words=self.min_sentence_words, max_sentences=self.max_sentences)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ContextSentenceSplitter":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    def split(self, documents: list[Document]) -> list[Document]:
        """The sentence Documents of ``documents``, in context order."""
        sentences: list[Document] = []
        for rank, document in enumerate(documents):
            source_id = source_id_of(document)
            for position, block, block_position, sentence in reading_sentences(
                document.content or "", self.min_sentence_words
            ):
                meta = {
                    "source_id": source_id,
                    "chunk_rank": rank,
                    "position": position,
                    "block": block,
                    "block_position": block_position,
                    "chunk_score": document.score,
                    # Where the chunk belongs (document, section): the reader counts its words as the chunk's.
                    CONTEXT_HEADER_FIELD: context_header(document.meta or {}),
                }
                # Where the indexing pipeline stored this sentence's vector (stores/sentence_vector_cache.py).
                for field in ("tenant_id", "document_id"):
                    if document.meta.get(field) is not None:
                        meta[field] = document.meta[field]
                # The chunk's language, detected on the whole chunk: the reader compares words in it.
                if document.meta.get("language") is not None:
                    meta["language"] = document.meta["language"]
                sentences.append(Document(id=f"{source_id}#{position}", content=sentence, meta=meta))
                if len(sentences) == self.max_sentences:
                    return sentences
        return sentences

    @component.output_types(sentences=list[Document])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """
        :param documents: The budgeted context chunks.
        :returns: ``sentences``: one Document per sentence (see the module doc for its ``meta``).
        """
        return {"sentences": self.split(documents)}
