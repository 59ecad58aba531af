"""
The indexing service: what the CLI, the REST API and the evaluation call to index files and texts.

Not a component: a thin layer over ``pipelines/indexing.yml`` that

1. validates a whole batch up front, with the same readers and identity rules
   the pipeline's components use (``source_readers``, ``DocumentIdentifier``),
   and raises one :class:`IndexingValidationError` naming every problem, so bad
   input writes nothing: unsupported types (listing the supported ones), empty
   or whitespace-only documents, undecodable bytes, unparsable PDFs, corrupt,
   encrypted, mislabelled or zip-bomb Office files, files over
   ``max_file_bytes``, missing ``tenant_id``/``tags``, a bad ``document_id``,
   sources outside the domain allowlist, one ``document_id`` given to different
   content;
2. runs the pipeline, serialised by a lock (embedding is CPU-bound and one
   document must not be indexed twice at once);
3. returns the result shape of ``POST /index/run``:
   ``{"documents": [{"document_id", "status", "chunks", "tokens", "error"?, ...}], "chunks_written", "latency_ms"}``.

Usage:

```python
from components.services.indexing_service import IndexingService

service = IndexingService.from_yaml(env={"SOURCEBOUND_DATA_DIR": "/tmp/sb"})
service.index_files(["docs/"], tenant_id="acme", tags=["hr"])
service.index_texts([{"content": "Vacation: 25 days.", "tenant_id": "acme", "tags": ["hr"], "document_id": "vacation"}])
```
"""

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from haystack import Document, Pipeline
from haystack.core.errors import PipelineRuntimeError
from haystack.dataclasses import ByteStream

from components.caching.document_change_detector import DocumentChangeDetector
from components.converters.docx_section_converter import DOCXSectionConverter
from components.converters.html_section_converter import HTMLSectionConverter
from components.converters.markdown_section_converter import MarkdownSectionConverter
from components.converters.source_readers import convert_streams, stream_label
from components.core.access_fields import IDENTITY_FIELDS
from components.core.access_rule import WriteRule
from components.core.document_identity import (
    COMPUTED_META_FIELDS,
    IndexingValidationError,
    access_meta_problems,
    document_id_problem,
    normalise_tags,
    source_type_for_path,
    supported_types_text,
    tenant_document_filter,
)
from components.core.errors import InsufficientStorageError, SourceboundError, WriteForbiddenError
from components.routers.source_router import SourceRouter, route_for
from components.services.pipeline_loader import load_pipeline
from components.validators.document_identifier import DocumentIdentifier
from components.writers.lifecycle_document_writer import LifecycleDocumentWriter

logger = logging.getLogger(__name__)

DEFAULT_MAX_FILE_BYTES = 50 * 1024 * 1024
DEFAULT_MAX_DOCUMENT_CHARS = 2_000_000
# Identity fields are top-level fields of a request, never smuggled in through `meta`.
TEXT_FIELDS = frozenset({*IDENTITY_FIELDS, "content", "document_name", "source_uri", "meta"})

__all__ = ["IndexingError", "IndexingService", "IndexingValidationError"]


class IndexingError(SourceboundError, RuntimeError):
    """The pipeline failed for a reason other than bad input (a model or the store). Documents are atomic."""


def _max_file_bytes_from_env() -> int:
    return int(os.environ.get("SOURCEBOUND_MAX_FILE_BYTES", DEFAULT_MAX_FILE_BYTES))


def _max_document_chars_from_env() -> int:
    return int(os.environ.get("SOURCEBOUND_MAX_DOCUMENT_CHARS", DEFAULT_MAX_DOCUMENT_CHARS))


class IndexingService:
    """Validates and indexes batches of files or texts through the indexing pipeline."""

    def __init__(
        self, pipeline: Pipeline, max_file_bytes: int | None = None, max_document_chars: int | None = None
    ) -> None:
        """
        Wrap an indexing pipeline.

        :param pipeline: A pipeline built from ``pipelines/indexing.yml`` (components are found by type, so
            they may be renamed).
        :param max_file_bytes: Largest file (or text, in UTF-8 bytes) accepted; default
            ``SOURCEBOUND_MAX_FILE_BYTES`` or 50 MiB.
        :param max_document_chars: Most characters of text one source may hold after conversion; default
            ``SOURCEBOUND_MAX_DOCUMENT_CHARS`` or 2,000,000. Bounds what a small compressed file (a PDF
            bomb) may expand into, so uploads obey the same limit as JSON documents.
        :raises ValueError: If the pipeline lacks a ``SourceRouter``, ``DocumentIdentifier`` or
            ``LifecycleDocumentWriter``.
        """
        self.pipeline = pipeline
        self.max_file_bytes = max_file_bytes if max_file_bytes is not None else _max_file_bytes_from_env()
        if self.max_file_bytes <= 0:
            raise ValueError(f"max_file_bytes must be positive, got {self.max_file_bytes}")
        self.max_document_chars = (
            max_document_chars if max_document_chars is not None else _max_document_chars_from_env()
        )
        if self.max_document_chars <= 0:
            raise ValueError(f"max_document_chars must be positive, got {self.max_document_chars}")
        by_type: dict[type, tuple[str, Any]] = {}
        for name, instance in pipeline.walk():
            by_type.setdefault(type(instance), (name, instance))
        missing = [
            kind.__name__ for kind in (SourceRouter, DocumentIdentifier, LifecycleDocumentWriter) if kind not in by_type
        ]
        if missing:
            raise ValueError(f"The indexing pipeline lacks {', '.join(missing)}; build it from pipelines/indexing.yml.")
        self._router_name = by_type[SourceRouter][0]
        self._identifier_name, self._identifier = by_type[DocumentIdentifier]
        self._writer_name, writer = by_type[LifecycleDocumentWriter]
        self._detector_name = by_type[DocumentChangeDetector][0] if DocumentChangeDetector in by_type else None
        # The format the pipeline writes chunks in (docs/operations.md, "Re-indexing after an index-format change").
        self.index_format: str | None = (
            getattr(by_type[DocumentChangeDetector][1], "index_format", None)
            if DocumentChangeDetector in by_type
            else None
        )
        self.document_store = writer.document_store
        # Validation reads sources as the pipeline's converters will.
        self._section_levels = {
            route: by_type[kind][1].section_max_level
            for route, kind in (
                ("md", MarkdownSectionConverter),
                ("html", HTMLSectionConverter),
                ("docx", DOCXSectionConverter),
            )
            if kind in by_type
        }
        self._lock = threading.Lock()
        self._warm = False

    @classmethod
    def from_yaml(
        cls,
        name: str | os.PathLike = "indexing",
        env: Mapping[str, str] | None = None,
        overrides: Mapping[str, Mapping[str, Any]] | None = None,
        max_file_bytes: int | None = None,
        max_document_chars: int | None = None,
    ) -> "IndexingService":
        """Build the service on ``load_pipeline(name, env, overrides)``."""
        return cls(
            load_pipeline(name, env=env, overrides=overrides),
            max_file_bytes=max_file_bytes,
            max_document_chars=max_document_chars,
        )

    def warm_up(self) -> None:
        """Load the embedder and tokenizers now rather than on the first batch."""
        with self._lock:
            if not self._warm:
                self.pipeline.warm_up()
                self._warm = True

    def close(self) -> None:
        """Release the pipeline's document stores (the Edge shard is flushed and closed by its last holder)."""
        for _, instance in self.pipeline.walk():
            store = getattr(instance, "document_store", None)
            if store is not None and callable(getattr(store, "close", None)):
                store.close()

    # ------------------------------------------------------------------ files

    @staticmethod
    def collect_files(paths: Iterable[str | os.PathLike]) -> tuple[list[Path], list[Path]]:
        """
        Expand folders recursively into files, in a stable order.

        Files named explicitly are kept whatever their type (an unsupported one is a validation error);
        inside folders, hidden entries and unsupported types are skipped.

        :returns: ``(files, skipped)``.
        """
        files: list[Path] = []
        skipped: list[Path] = []
        for raw in paths:
            path = Path(raw)
            if path.is_dir():
                for found in sorted(path.rglob("*")):
                    relative = found.relative_to(path).parts
                    if not found.is_file() or any(part.startswith(".") for part in relative):
                        continue
                    (files if source_type_for_path(found) else skipped).append(found)
            else:
                files.append(path)
        unique = list(dict.fromkeys(files))
        return unique, skipped

    def _file_streams(
        self, paths: Iterable[str | os.PathLike], meta: dict[str, Any], problems: list[str]
    ) -> list[ByteStream]:
        files, skipped = self.collect_files(paths)
        if skipped:
            logger.info("Skipped %d files of unsupported types inside folders (e.g. %s).", len(skipped), skipped[0])
        if not files:
            problems.append(f"no files to index in {', '.join(str(path) for path in paths) or 'the request'}")
        streams = []
        for path in files:
            if not path.exists():
                problems.append(f"{path}: no such file")
                continue
            if not path.is_file():
                problems.append(f"{path}: not a regular file")
                continue
            if source_type_for_path(path) is None:
                problems.append(f"{path}: unsupported file type; supported types are {supported_types_text()}")
                continue
            size = path.stat().st_size
            if size > self.max_file_bytes:
                problems.append(
                    f"{path}: {size} bytes is over the size limit of {self.max_file_bytes} bytes "
                    "(SOURCEBOUND_MAX_FILE_BYTES); split the file or raise the limit"
                )
                continue
            try:
                data = path.read_bytes()
            except OSError as error:
                problems.append(f"{path}: cannot be read: {error}")
                continue
            streams.append(ByteStream(data=data, meta={**meta, "file_path": str(path)}))
        return streams

    def validate_files(
        self,
        paths: Iterable[str | os.PathLike],
        tenant_id: str,
        tags: list[str] | str,
        scope: str = "tenant",
        user_id: str | None = None,
        project_id: str | None = None,
        meta: Mapping[str, Any] | None = None,
        document_id: str | None = None,
        document_name: str | None = None,
    ) -> list[ByteStream]:
        """
        Read and validate files for indexing, writing nothing (parameters as in :meth:`index_files`).

        :returns: The files as byte streams carrying their meta, ready for :meth:`index_streams`.
        :raises IndexingValidationError: Naming every problem of the batch.
        """
        problems: list[str] = []
        common = self._common_meta(tenant_id, tags, scope, user_id, project_id, meta, problems)
        for field, value in (("document_id", document_id), ("document_name", document_name)):
            if value is not None:
                common[field] = value
        if document_id is not None and (problem := document_id_problem(document_id)):
            problems.append(problem)
        # With bad common meta every file would repeat the same problem: check identities only without.
        identities = not problems
        streams = self._file_streams(list(paths), common, problems)
        if (document_id or document_name) and len(streams) > 1:
            problems.append("document_id and document_name name one document: give exactly one file with them")
        self._check_streams_and_documents(streams, [], problems, identities)
        return streams

    def index_files(
        self,
        paths: Iterable[str | os.PathLike],
        tenant_id: str,
        tags: list[str] | str,
        scope: str = "tenant",
        user_id: str | None = None,
        project_id: str | None = None,
        meta: Mapping[str, Any] | None = None,
        document_id: str | None = None,
        document_name: str | None = None,
        force: bool = False,
        batch_size: int | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> dict[str, Any]:
        """
        Index files and folders (recursively) for one tenant.

        The whole batch is validated first; nothing is written if any file is bad.

        :param paths: Files and folders.
        :param tenant_id: The owning tenant.
        :param tags: At least one tag (a list, or a comma-separated string).
        :param scope: ``tenant`` (default), ``user`` (needs ``user_id``) or ``project`` (needs ``project_id``).
        :param user_id: Owner for ``user`` scope.
        :param project_id: Project for ``project`` scope.
        :param meta: Further meta for every file (``language``, ``artifact_id``, ``verified``, ...).
        :param document_id: The document_id of the one file (an upload); derived from tenant and path otherwise.
        :param document_name: The display name of the one file; the title or file name otherwise.
        :param force: Re-index files whose content is unchanged.
        :param batch_size: Files per pipeline run (all in one run when ``None``); each run is reported to
            ``progress``.
        :param progress: Called with ``(files_done, files_total)`` after each run.
        :returns: ``{"documents", "chunks_written", "latency_ms"}``.
        :raises IndexingValidationError: If any input is bad (nothing written).
        :raises IndexingError: If the pipeline fails (each document stays fully old or fully new).
        """
        started = time.perf_counter()
        streams = self.validate_files(
            paths, tenant_id, tags, scope, user_id, project_id, meta, document_id, document_name
        )
        return self._run_batches(streams, [], force, batch_size, progress, started)

    def index_streams(
        self,
        streams: list[ByteStream],
        force: bool = False,
        batch_size: int | None = None,
        progress=None,
        writer: WriteRule | None = None,
    ) -> dict[str, Any]:
        """
        Index byte streams (uploads) whose meta carries ``tenant_id``, ``tags`` and a ``file_path`` or
        ``document_name`` with the file extension. Validated like files.

        :param writer: The caller's write rule (see :meth:`check_writer`); ``None``: the operator.
        """
        started = time.perf_counter()
        problems: list[str] = []
        for position, stream in enumerate(streams):
            label = stream_label(stream, position)
            problems.extend(f"{label}: {problem}" for problem in access_meta_problems(stream.meta))
            if len(stream.data) > self.max_file_bytes:
                problems.append(
                    f"{label}: {len(stream.data)} bytes is over the size limit of {self.max_file_bytes} bytes"
                )
        self._check_streams_and_documents(streams, [], problems, identities=not problems, writer=writer)
        return self._run_batches(streams, [], force, batch_size, progress, started)

    # ------------------------------------------------------------------ texts

    def validate_texts(self, texts: list[Mapping[str, Any]], writer: WriteRule | None = None) -> list[Document]:
        """
        Validate raw texts for indexing, writing nothing.

        :param texts: ``{content, tenant_id, tags, document_id?, document_name?, source_uri?, scope?, user_id?,
            project_id?, meta?}`` each.
        :param writer: The caller's write rule (see :meth:`check_writer`); ``None``: the operator.
        :returns: The texts as Documents, ready for the pipeline.
        :raises IndexingValidationError: Naming every problem of the batch.
        :raises WriteForbiddenError: When the writer may not write a document or replace the stored one.
        """
        problems: list[str] = []
        documents: list[Document] = []
        if not isinstance(texts, list) or not texts:
            raise IndexingValidationError(["documents must be a non-empty list of {content, tenant_id, tags, ...}"])
        for position, item in enumerate(texts):
            label = f"document #{position + 1}"
            if not isinstance(item, Mapping):
                problems.append(f"{label}: must be an object with content, tenant_id and tags")
                continue
            label = str(item.get("document_id") or item.get("source_uri") or item.get("document_name") or label)
            unknown = sorted(set(item) - TEXT_FIELDS)
            if unknown:
                problems.append(f"{label}: unknown fields {', '.join(unknown)}; put extra metadata under meta")
            item_problems: list[str] = []
            meta = self._extra_meta(item.get("meta"), item_problems)
            for field in (*IDENTITY_FIELDS, "document_name", "source_uri"):
                if item.get(field) is not None:
                    meta[field] = item[field]
            for field in ("document_name", "source_uri"):
                if meta.get(field) is not None and not isinstance(meta[field], str):
                    item_problems.append(f"{field} must be a string")
            meta["source_type"] = "text"
            content = item.get("content")
            if not isinstance(content, str) or not content.strip():
                item_problems.append("content is empty or contains only whitespace")
            elif "\x00" in content:
                item_problems.append("undecodable content: it contains NUL bytes (binary data, not text)")
            elif len(content.encode("utf-8", errors="replace")) > self.max_file_bytes:
                item_problems.append(f"content is over the size limit of {self.max_file_bytes} bytes")
            elif len(content) > self.max_document_chars:
                item_problems.append(
                    f"content has {len(content)} characters, over the limit of {self.max_document_chars} "
                    "(SOURCEBOUND_MAX_DOCUMENT_CHARS)"
                )
            else:
                try:
                    content.encode("utf-8")
                except UnicodeEncodeError:
                    item_problems.append("undecodable content: it contains lone surrogates, not valid Unicode text")
            item_problems.extend(access_meta_problems(meta))
            if item_problems:
                problems.extend(f"{label}: {problem}" for problem in dict.fromkeys(item_problems))
                continue
            documents.append(Document(content=content, meta=meta))
        self._check_streams_and_documents([], documents, problems, writer=writer)
        return documents

    def index_texts(
        self, texts: list[Mapping[str, Any]], force: bool = False, writer: WriteRule | None = None
    ) -> dict[str, Any]:
        """
        Index raw texts (the REST API's ``POST /index/run`` body ``documents``).

        :param writer: The caller's write rule (see :meth:`check_writer`); ``None``: the operator.
        :returns: ``{"documents", "chunks_written", "latency_ms"}``.
        :raises IndexingValidationError: If any text is bad (nothing written).
        :raises WriteForbiddenError: If the writer may not write one of them (nothing written).
        :raises IndexingError: If the pipeline fails.
        """
        started = time.perf_counter()
        documents = self.validate_texts(texts, writer=writer)
        return self._run_batches([], documents, force, None, None, started)

    # ------------------------------------------------------------------ shared

    def _extra_meta(self, meta: Any, problems: list[str]) -> dict[str, Any]:
        if meta is None:
            return {}
        if not isinstance(meta, Mapping) or not all(isinstance(key, str) for key in meta):
            problems.append("meta must be an object with string keys")
            return {}
        forbidden = sorted(set(meta) & (set(IDENTITY_FIELDS) | COMPUTED_META_FIELDS | {"file_path"}))
        if forbidden:
            problems.append(
                f"meta may not set {', '.join(forbidden)}: identity fields are top-level fields and the rest "
                "are computed"
            )
        return {key: value for key, value in meta.items() if key not in forbidden}

    def _common_meta(self, tenant_id, tags, scope, user_id, project_id, meta, problems) -> dict[str, Any]:
        common = self._extra_meta(meta, problems)
        common.update(
            {
                "tenant_id": tenant_id,
                "tags": normalise_tags(tags) if tags is not None else None,
                "scope": scope or "tenant",
                "user_id": user_id,
                "project_id": project_id,
            }
        )
        problems.extend(access_meta_problems(common))
        return common

    def check_writer(self, identified: list[Document], writer: WriteRule) -> None:
        """
        Refuse a batch the writer may not write (docs/contract.md, "Write rule"): each identified document as it
        would be written, and the stored document of the same tenant and ``document_id`` it would replace.

        :param identified: ``DocumentIdentifier`` output (ids derived, access meta complete).
        :raises WriteForbiddenError: Naming the first document refused; nothing is written.
        """
        ids_by_tenant: dict[str, list[str]] = {}
        for document in identified:
            problem = writer.violation(document.meta)
            if problem:
                raise WriteForbiddenError(f"document {document.meta.get('document_id')!r}: {problem}.")
            ids = ids_by_tenant.setdefault(document.meta["tenant_id"], [])
            if document.meta["document_id"] not in ids:
                ids.append(document.meta["document_id"])
        if writer.unlimited:  # the tenant check above is all it asks (the stored document has the same tenant)
            return
        for tenant_id, ids in ids_by_tenant.items():
            for stored in self.document_store.filter_documents(tenant_document_filter(tenant_id, ids)):
                if writer.violation(stored.meta) is not None:
                    raise WriteForbiddenError(
                        f"document_id {stored.meta.get('document_id')!r} names a document this caller may not "
                        'replace; give this document another document_id (docs/contract.md, "Write rule").'
                    )

    def _check_streams_and_documents(
        self,
        streams: list[ByteStream],
        documents: list[Document],
        problems: list[str],
        identities: bool = True,
        writer: WriteRule | None = None,
    ) -> None:
        """
        Convert and identify the whole batch (no model) and raise with every problem found; then, given a
        ``writer``, check it may write the batch (the only store read).
        """
        converted: list[Document] = []
        for position, stream in enumerate(streams):
            route = route_for(stream)
            if route is None:
                problems.append(
                    f"{stream_label(stream, position)}: unsupported file type; "
                    f"supported types are {supported_types_text()}"
                )
                continue
            try:
                stream_documents = convert_streams([stream], route, self._section_levels.get(route, 2))
            except IndexingValidationError as error:
                problems.extend(error.problems)
                continue
            characters = sum(len(document.content or "") for document in stream_documents)
            if characters > self.max_document_chars:
                problems.append(
                    f"{stream_label(stream, position)}: its text has {characters} characters, over the limit of "
                    f"{self.max_document_chars} (SOURCEBOUND_MAX_DOCUMENT_CHARS); split the file"
                )
                continue
            converted.extend(stream_documents)
        identified: list[Document] = []
        if identities:
            try:
                identified = self._identifier.run(documents=[converted, documents])["documents"]
            except IndexingValidationError as error:
                problems.extend(error.problems)
        if problems:
            raise IndexingValidationError(list(dict.fromkeys(problems)))
        if writer is not None:
            self.check_writer(identified, writer)

    def _run_batches(self, streams, documents, force, batch_size, progress, started) -> dict[str, Any]:
        results: list[dict[str, Any]] = []
        chunks_written = 0
        if batch_size and batch_size > 0 and streams:
            batches = [streams[index : index + batch_size] for index in range(0, len(streams), batch_size)]
        else:
            batches = [streams]
        done = 0
        for number, batch in enumerate(batches):
            output = self._run(batch, documents if number == 0 else [], force)
            results.extend(output["documents"])
            chunks_written += output["chunks_written"]
            done += len(batch)
            if progress:
                progress(done, len(streams))
        return {
            "documents": results,
            "chunks_written": chunks_written,
            "latency_ms": round((time.perf_counter() - started) * 1000, 1),
        }

    def _run(self, streams: list[ByteStream], documents: list[Document], force: bool) -> dict[str, Any]:
        data: dict[str, dict[str, Any]] = {
            self._router_name: {"sources": streams},
            self._identifier_name: {"documents": documents},
        }
        if self._detector_name:
            data[self._detector_name] = {"force": force}
        with self._lock:
            try:
                output = self.pipeline.run(data)
            except PipelineRuntimeError as error:
                cause = error.__cause__
                passed_on = (IndexingValidationError, InsufficientStorageError)
                while cause is not None and not isinstance(cause, passed_on):
                    cause = cause.__cause__
                if isinstance(cause, passed_on):
                    raise cause from None
                raise IndexingError(
                    f"Indexing failed in pipeline component {error.component_name!r}: {error.__cause__ or error}. "
                    "Documents written before the failure are complete; the others are unchanged."
                ) from error
        return output[self._writer_name]
