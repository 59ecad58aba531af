"""
Corpus manifests: the documents of a corpus, each with its identity and access fields, as indexing input.

A manifest is a YAML file with a ``documents:`` list (or a JSONL file of the same records): ``path``
(relative to the manifest) or ``content``, ``document_id``, ``document_name``, ``tenant_id``, ``tags``,
``scope`` (``tenant`` by default; ``user`` with ``user_id``; ``project`` with ``project_id``). The bundled
sample corpus (``examples/sample_corpus/``), which the server indexes on its first start, is one; the
evaluation reads its corpora with the same reader.

```python
documents, header = load_corpus("examples/sample_corpus/manifest.yml")
streams, texts = corpus_sources(documents)
service.index_streams(streams)
```
"""

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from components.core.document_identity import SOURCE_TYPE_BY_EXTENSION
from components.core.errors import SourceboundError

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_CORPUS_DIR = REPO_ROOT / "examples" / "sample_corpus"
SAMPLE_CORPUS_MANIFEST = SAMPLE_CORPUS_DIR / "manifest.yml"
SAMPLE_DIRECTORY = SAMPLE_CORPUS_DIR / "directory.yml"

DOCUMENT_ID_PATTERN = re.compile(r"^[A-Za-z0-9-]+$")
SCOPES = ("tenant", "user", "project")
SUPPORTED_SOURCE_SUFFIXES = dict(SOURCE_TYPE_BY_EXTENSION)


class CorpusManifestError(SourceboundError, ValueError):
    """A corpus manifest (or dataset) file is missing or malformed; the message names the entry."""


@dataclass(frozen=True)
class CorpusDocument:
    """
    One source document of a corpus: a file to convert, or raw text.

    Exactly one of ``path`` and ``content`` is set. The identity and access fields become
    chunk metadata when indexed.
    """

    document_id: str
    tenant_id: str
    tags: tuple[str, ...]
    document_name: str
    scope: str = "tenant"
    user_id: str | None = None
    project_id: str | None = None
    path: Path | None = None
    content: str | None = None

    @property
    def access_meta(self) -> dict[str, Any]:
        """The metadata the access rule reads."""
        return {
            "tenant_id": self.tenant_id,
            "tags": list(self.tags),
            "scope": self.scope,
            "user_id": self.user_id,
            "project_id": self.project_id,
        }

    @property
    def source_type(self) -> str:
        return SUPPORTED_SOURCE_SUFFIXES[self.path.suffix.lower()] if self.path else "text"

    def text(self) -> str:
        """Raw text for text documents and text-like files (not PDFs); used by content-based metrics."""
        if self.content is not None:
            return self.content
        if self.path.suffix.lower() == ".pdf":
            raise CorpusManifestError(f"{self.document_id} is a PDF; its text comes from the indexing pipeline.")
        return self.path.read_text(encoding="utf-8")


def as_tuple(value: Any, where: str, name: str, comma_separated: bool = True) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        # Tags may be written "a,b" (as on the CLI); answer spans may contain commas ("1,500").
        if not comma_separated:
            return (value,)
        return tuple(part.strip() for part in value.split(",") if part.strip())
    if isinstance(value, list | tuple):
        return tuple(str(item) for item in value)
    raise CorpusManifestError(f"{where}: `{name}` must be a list of strings.")


def parse_document(record: Mapping[str, Any], base_dir: Path, where: str) -> CorpusDocument:
    """Build a :class:`CorpusDocument` from a manifest entry or JSONL record."""
    if "document_id" not in record:
        raise CorpusManifestError(f"{where}: document_id is required.")
    path = (base_dir / record["path"]).resolve() if record.get("path") else None
    return CorpusDocument(
        document_id=str(record["document_id"]),
        tenant_id=str(record.get("tenant_id") or ""),
        tags=as_tuple(record.get("tags"), where, "tags"),
        document_name=str(record.get("document_name") or (path.name if path else record["document_id"])),
        scope=str(record.get("scope") or "tenant"),
        user_id=record.get("user_id"),
        project_id=record.get("project_id"),
        path=path,
        content=record.get("content"),
    )


def read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise CorpusManifestError(f"{path} does not exist.") from error
    except yaml.YAMLError as error:
        raise CorpusManifestError(f"{path} is not valid YAML: {error}") from error


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    records = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as error:
        raise CorpusManifestError(f"{path} does not exist.") from error
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as error:
            raise CorpusManifestError(f"{path}:{number}: not valid JSON: {error}") from error
    return records


def load_corpus(path: str | os.PathLike) -> tuple[list[CorpusDocument], dict[str, Any]]:
    """
    Read a corpus: a manifest YAML (``documents:`` list) or a JSONL file of documents.

    Relative ``path`` entries resolve against the corpus file's folder.

    :returns: The documents and the manifest's header fields (name, description, ...).
    """
    path = Path(path).resolve()
    if path.suffix == ".jsonl":
        records, header = read_jsonl(path), {}
    else:
        data = read_yaml(path)
        if not isinstance(data, Mapping) or not isinstance(data.get("documents"), list):
            raise CorpusManifestError(f"{path}: a corpus manifest needs a `documents:` list.")
        records, header = data["documents"], {key: value for key, value in data.items() if key != "documents"}
    documents = [
        parse_document(record, path.parent, f"{path.name} entry {index}") for index, record in enumerate(records)
    ]
    return documents, header


def corpus_sources(documents: Iterable[CorpusDocument]) -> tuple[list[Any], list[dict[str, Any]]]:
    """
    A corpus as indexing input: byte streams for files (``IndexingService.index_streams``)
    and text records for inline content (``IndexingService.index_texts``), each carrying the
    document's identity and access metadata.
    """
    from haystack.dataclasses import ByteStream

    streams: list[Any] = []
    texts: list[dict[str, Any]] = []
    for document in documents:
        meta = {key: value for key, value in document.access_meta.items() if value is not None}
        meta.update(document_id=document.document_id, document_name=document.document_name)
        if document.path is not None:
            streams.append(ByteStream(data=document.path.read_bytes(), meta={**meta, "file_path": str(document.path)}))
        else:
            texts.append({"content": document.content, **meta})
    return streams, texts


def stale_documents(store: Any, documents: Iterable[CorpusDocument], index_format: str | None) -> list[CorpusDocument]:
    """
    The corpus documents the store holds in another index format than ``index_format`` (their chunk 0's
    ``meta.index_format``; docs/operations.md, "Re-indexing after an index-format change"). Documents the store
    does not hold are not listed: a deleted document is never brought back. ``[]`` when ``index_format`` is None.
    """
    from components.core.document_identity import tenant_document_filter

    if index_format is None:
        return []
    stale = []
    for document in documents:
        first_chunk = tenant_document_filter(document.tenant_id, document.document_id)
        first_chunk["conditions"].append({"field": "meta.chunk_index", "operator": "==", "value": 0})
        stored = store.filter_documents(first_chunk)
        if stored and (stored[0].meta or {}).get("index_format") != index_format:
            stale.append(document)
    return stale
