"""
Test corpora for the query-side tests: chunk Documents shaped like the indexer's
(contract data model: ``id == "{document_id}:{chunk_index}"``, flat meta), embedded
with the packaged all-MiniLM-L6-v2, written straight into a QdrantEdgeDocumentStore.

* :func:`chunk` builds one chunk Document.
* :func:`sample_corpus_chunks` cuts the bundled sample corpus's Markdown and text
  files into one chunk per ``##`` section / paragraph block (no HTML or PDF: the
  query tests need text, not converters).
* :func:`embed` adds dense embeddings (one embedder per process).
* :func:`write_store` writes chunks into a store at a path.
"""

from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from haystack import Document

SAMPLE_CORPUS = Path(__file__).resolve().parents[2] / "evaluation" / "sample_corpus"


def chunk(
    document_id: str,
    chunk_index: int,
    content: str,
    *,
    tenant_id: str,
    tags: list[str],
    scope: str = "tenant",
    document_name: str | None = None,
    **meta: Any,
) -> Document:
    """One chunk Document as the indexing pipeline writes it."""
    full_meta = {
        "tenant_id": tenant_id,
        "tags": list(tags),
        "scope": scope,
        "document_id": document_id,
        "document_name": document_name or f"{document_id}.md",
        "chunk_index": chunk_index,
        "source_type": "md",
        "verified": False,
        "tainted": False,
        **meta,
    }
    return Document(id=f"{document_id}:{chunk_index}", content=content, meta=full_meta)


def _sections(text: str) -> list[tuple[str | None, str]]:
    sections: list[tuple[str | None, str]] = []
    current_title: str | None = None
    current: list[str] = []
    for line in text.splitlines():
        if line.startswith("## "):
            if "".join(current).strip():
                sections.append((current_title, "\n".join(current).strip()))
            current_title, current = line[3:].strip(), []
        elif line.startswith("# "):
            continue
        else:
            current.append(line)
    if "".join(current).strip():
        sections.append((current_title, "\n".join(current).strip()))
    return sections


def sample_corpus_chunks(tenants: tuple[str, ...] = ("acme", "globex")) -> list[Document]:
    """The sample corpus's .md/.txt documents of ``tenants``, one chunk per section (blank-line blocks for .txt)."""
    manifest = yaml.safe_load((SAMPLE_CORPUS / "manifest.yml").read_text(encoding="utf-8"))
    chunks: list[Document] = []
    for entry in manifest["documents"]:
        path = SAMPLE_CORPUS / entry["path"]
        if entry["tenant_id"] not in tenants or path.suffix not in {".md", ".txt"}:
            continue
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".md":
            parts = _sections(text)
        else:
            parts = [(None, block.strip()) for block in text.split("\n\n") if len(block.split()) >= 8]
        meta = {
            key: value
            for key, value in entry.items()
            if key not in {"path", "document_id", "tenant_id", "tags", "scope", "document_name"}
        }
        for index, (section, body) in enumerate(parts):
            chunks.append(
                chunk(
                    entry["document_id"],
                    index,
                    body,
                    tenant_id=entry["tenant_id"],
                    tags=entry["tags"],
                    scope=entry.get("scope", "tenant"),
                    document_name=entry.get("document_name"),
                    section=section,
                    source_type=path.suffix[1:],
                    **meta,
                )
            )
    return chunks


@lru_cache(maxsize=1)
def _document_embedder():
    from haystack_integrations.components.embedders.sentence_transformers import SentenceTransformersDocumentEmbedder

    from components.core.runtime import embedding_model_path

    embedder = SentenceTransformersDocumentEmbedder(
        model=embedding_model_path(), local_files_only=True, progress_bar=False
    )
    embedder.warm_up()
    return embedder


def embed(documents: list[Document]) -> list[Document]:
    """The documents with dense embeddings (the model of the pipelines)."""
    embedded = _document_embedder().run(documents=[replace(doc, embedding=None) for doc in documents])["documents"]
    return embedded


def write_store(path: str | Path, documents: list[Document]):
    """Embed ``documents`` and write them into the QdrantEdgeDocumentStore at ``path``; returns the store."""
    from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore

    store = QdrantEdgeDocumentStore(path=str(path), embedding_dim=384)
    store.write_documents(embed(documents))
    return store
