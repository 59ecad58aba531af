"""
Chunks by source type (docs/contract.md, "Chunking by source type"): the ``TokenChunker`` bounds,
plus three rules for documentation kept as code.

* **Whole when it fits**: a YAML file (a spec) and a document under a ``decisions/`` or ``adr/`` folder
  (an ADR) become one chunk, all its sections joined, when the whole text fits ``max_tokens`` and
  the embedder's word pieces; only a larger one is split like any other document. A 39-token ADR is
  one chunk, not three.
* **READMEs and other Markdown** arrive split at ``#``/``##`` headings by the Markdown converter; each
  section is split at paragraphs, then sentences (the ``TokenChunker`` boundaries).
* **Code blocks are never split mid-block**: a fenced block (```` ``` ```` or ``~~~``) that fits
  ``max_tokens`` stays in one chunk, with neighbouring text packed around it up to ``chunk_size``; only a
  block longer than a whole chunk is cut (at line ends), since the embedder could not read it anyway.

The folder is read from ``source_path`` (a git source's path in its repository), else from the path
of ``source_uri``; the type from ``source_type``.

Usage:

```python
from haystack import Document
from components.preprocessors.source_aware_chunker import SourceAwareChunker

chunker = SourceAwareChunker(embedder_tokenizer=None)
adr = [Document(content="# Use git\\n\\nWe use git.", meta={"document_id": "d1", "source_path": "adr/0001.md"}),
       Document(content="## Status\\n\\nAccepted.", meta={"document_id": "d1", "source_path": "adr/0001.md"})]
len(chunker.run(documents=adr)["documents"])  # 1
```
"""

import re
from itertools import groupby
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

from haystack import Document, component, default_from_dict

from components.preprocessors.token_chunker import DEFAULT_ENCODING, TokenChunker, get_encoding

DEFAULT_WHOLE_SOURCE_TYPES = ("yaml",)
DEFAULT_WHOLE_DOCUMENT_DIRS = ("decisions", "adr")
_FENCE = re.compile(r"^[ ]{0,3}(`{3,}|~{3,})")


def fenced_segments(text: str) -> list[tuple[bool, str]]:
    """
    ``text`` as ``(is_code_block, part)`` pairs in order: fenced code blocks (fence lines included) and the
    text between them. An unclosed fence runs to the end of the text, as in CommonMark.
    """
    segments: list[tuple[bool, str]] = []
    current: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        match = _FENCE.match(line)
        if fence is None and match:
            if current:
                segments.append((False, "\n".join(current)))
            current, fence = [line], match.group(1)
        elif fence is not None and match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
            current.append(line)
            segments.append((True, "\n".join(current)))
            current, fence = [], None
        else:
            current.append(line)
    if current:
        segments.append((fence is not None, "\n".join(current)))
    return [(code, part) for code, part in segments if part.strip()]


@component
class SourceAwareChunker(TokenChunker):
    """A ``TokenChunker`` that keeps specs and ADRs whole when they fit and never splits a fitting code block."""

    def __init__(
        self,
        chunk_size: int = 180,
        chunk_overlap: int = 30,
        max_tokens: int | None = 200,
        encoding: str = DEFAULT_ENCODING,
        min_fill: float = 0.6,
        embedder_max_tokens: int | None = 256,
        embedder_tokenizer: str | None = "packaged:all-MiniLM-L6-v2",
        whole_source_types: list[str] | None = None,
        whole_document_dirs: list[str] | None = None,
        keep_code_blocks: bool = True,
    ) -> None:
        """
        Create the chunker (the first seven parameters are ``TokenChunker``'s).

        :param whole_source_types: ``source_type`` values indexed whole when they fit (default ``["yaml"]``).
        :param whole_document_dirs: Folder names whose documents are indexed whole when they fit
            (default ``["decisions", "adr"]``; matched case-insensitively anywhere in the path).
        :param keep_code_blocks: Keep each fenced code block that fits ``max_tokens`` in one chunk.
        :raises ValueError: If the sizes are inconsistent or a list holds a non-string.
        """
        # Explicit base calls: @component rebuilds the class, so zero-argument super() cannot find it.
        TokenChunker.__init__(
            self, chunk_size, chunk_overlap, max_tokens, encoding, min_fill, embedder_max_tokens, embedder_tokenizer
        )
        types = list(DEFAULT_WHOLE_SOURCE_TYPES if whole_source_types is None else whole_source_types)
        dirs = list(DEFAULT_WHOLE_DOCUMENT_DIRS if whole_document_dirs is None else whole_document_dirs)
        for name, values in (("whole_source_types", types), ("whole_document_dirs", dirs)):
            if not all(isinstance(value, str) and value.strip() for value in values):
                raise ValueError(f"{name} must be a list of non-empty strings, got {values!r}")
        self.whole_source_types = types
        self.whole_document_dirs = dirs
        self.keep_code_blocks = bool(keep_code_blocks)
        self._dirs = {value.strip().lower() for value in dirs}

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        data = TokenChunker.to_dict(self)
        data["type"] = f"{type(self).__module__}.{type(self).__name__}"
        data["init_parameters"].update(
            whole_source_types=self.whole_source_types,
            whole_document_dirs=self.whole_document_dirs,
            keep_code_blocks=self.keep_code_blocks,
        )
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SourceAwareChunker":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    def keeps_whole(self, meta: dict[str, Any]) -> bool:
        """Whether a document of this meta is indexed whole when it fits (its type or its folder)."""
        if meta.get("source_type") in self.whole_source_types:
            return True
        path = meta.get("source_path")
        if not isinstance(path, str) or not path:
            uri = meta.get("source_uri")
            path = unquote(urlsplit(uri).path) if isinstance(uri, str) else ""
        folders = PurePosixPath(path).parts[:-1]
        return any(folder.lower() in self._dirs for folder in folders)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """
        Chunk each source's sections by its type.

        :param documents: Sections or pages of sources, each source's parts consecutive (as converted).
        :returns: ``documents``: the chunks, in input order, each with meta ``token_count``.
        """
        if self.embedder_tokenizer and self._tokenizer is None:
            self.warm_up()
        chunks: list[Document] = []
        for _key, group in groupby(documents, key=lambda d: (d.meta.get("tenant_id"), d.meta.get("document_id"))):
            parts = [document for document in group if document.content and document.content.strip()]
            whole = self._whole(parts) if parts and self.keeps_whole(parts[0].meta) else None
            if whole is not None:
                chunks.append(whole)
                continue
            for part in parts:
                if self.keep_code_blocks and any(code for code, _ in fenced_segments(part.content)):
                    chunks.extend(self._with_code_blocks(part))
                else:
                    chunks.extend(TokenChunker.run(self, documents=[part])["documents"])
        return {"documents": chunks}

    def _whole(self, parts: list[Document]) -> Document | None:
        text = "\n\n".join(part.content.strip() for part in parts)
        fits, tokens, _, _ = self._fits(text, 0, len(text))
        if not fits:
            return None
        meta = {**parts[0].meta, "token_count": len(tokens)}
        if len(parts) > 1:
            meta.update(section=None, page_number=None)  # the chunk spans every section
        return Document(content=text, meta=meta)

    def _with_code_blocks(self, document: Document) -> list[Document]:
        """Chunks of a section with code blocks: fitting blocks whole, neighbouring text packed up to ``chunk_size``."""
        units: list[str] = []
        for code, part in fenced_segments(document.content):
            if code and self._fits(part, 0, len(part))[0]:
                units.append(part.strip("\n"))
            else:
                units.extend(part[start:end] for start, end, _ in self.split_text(part))
        encoding = get_encoding(self.encoding)
        chunks: list[Document] = []
        current = ""
        for unit in units:
            candidate = f"{current}\n\n{unit}" if current else unit
            if current and (
                len(encoding.encode(candidate, disallowed_special=())) > self.chunk_size
                or not self._fits(candidate, 0, len(candidate))[0]
            ):
                chunks.append(self._chunk(document, current))
                candidate = unit
            current = candidate
        if current:
            chunks.append(self._chunk(document, current))
        return chunks

    def _chunk(self, document: Document, text: str) -> Document:
        tokens = len(get_encoding(self.encoding).encode(text, disallowed_special=()))
        return Document(content=text, meta={**document.meta, "token_count": tokens})
