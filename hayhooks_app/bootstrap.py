"""
First-start set-up: index the bundled sample corpus into an empty store and load the
tag-owner directory, so a fresh ``make serve`` answers questions about it at once. On a store that already
holds the sample corpus, its documents written in an older index format are re-indexed.

Both steps are idempotent: the corpus is indexed only when the store holds no points, and the
directory only when it holds no tags (later edits through the CLI are never overwritten).
``SOURCEBOUND_BOOTSTRAP_CORPUS=false`` turns both off.

Usage:

```python
from hayhooks_app.bootstrap import bootstrap
from hayhooks_app.container import get_container

summary = bootstrap(get_container().build())
```
"""

import logging
import time
from pathlib import Path
from typing import Any

from components.services.corpus_manifest import corpus_sources, load_corpus, stale_documents
from hayhooks_app.container import ServiceContainer

logger = logging.getLogger(__name__)


def index_corpus(container: ServiceContainer, manifest: Path, only: list[Any] | None = None) -> dict[str, Any]:
    """
    Index every document of a corpus manifest (:mod:`components.services.corpus_manifest`), or ``only`` these.

    :returns: ``documents`` (per status), ``chunks_written`` and ``seconds``.
    """
    documents = only if only is not None else load_corpus(manifest)[0]
    started = time.perf_counter()
    streams, texts = corpus_sources(documents)
    results = []
    if streams:
        results.append(container.requests.index_streams(streams))
    if texts:
        results.append(container.requests.index_documents(texts))
    statuses: dict[str, int] = {}
    for result in results:
        for entry in result.get("documents", []):
            statuses[entry["status"]] = statuses.get(entry["status"], 0) + 1
            if entry["status"] == "error":
                logger.error("Sample corpus document %s failed: %s", entry.get("document_id"), entry.get("error"))
    return {
        "documents": statuses,
        "chunks_written": sum(int(result.get("chunks_written") or 0) for result in results),
        "seconds": round(time.perf_counter() - started, 2),
    }


def load_tag_directory(container: ServiceContainer, directory_file: Path) -> int:
    """
    Load a tag-owner directory YAML into the RAG pipeline's tag directory (the router's) when that is empty.

    :returns: The number of tags loaded (0 when the directory already had tags).
    """
    directory = container.tag_directory()
    if directory is None:
        logger.warning("The RAG pipeline has no tag directory; %s not loaded.", directory_file)
        return 0
    if directory.list_tags():
        return 0
    return int(directory.load_from_yaml(directory_file)["tags"])


def bootstrap(container: ServiceContainer) -> dict[str, Any]:
    """Index the sample corpus into an empty store and load its tag directory (see the module doc)."""
    settings = container.settings
    summary: dict[str, Any] = {"corpus": None, "tags_loaded": 0}
    if not settings.bootstrap_corpus:
        return summary
    manifest = settings.sample_corpus_dir / "manifest.yml"
    directory_file = settings.sample_corpus_dir / "directory.yml"
    if container.store.count_documents() == 0 and manifest.is_file():
        logger.info("Empty store: indexing the sample corpus from %s ...", manifest)
        summary["corpus"] = index_corpus(container, manifest)
        logger.info("Sample corpus indexed: %s", summary["corpus"])
    elif manifest.is_file():
        # Sample documents written in an older index format are re-indexed (docs/operations.md, "Re-indexing after
        # an index-format change"); other documents are re-indexed when their source is indexed again.
        stale = stale_documents(container.store, load_corpus(manifest)[0], container.indexing.index_format)
        if stale:
            logger.info("Re-indexing %d sample corpus documents written in an older index format ...", len(stale))
            summary["corpus"] = index_corpus(container, manifest, only=stale)
    if directory_file.is_file():
        summary["tags_loaded"] = load_tag_directory(container, directory_file)
    return summary
