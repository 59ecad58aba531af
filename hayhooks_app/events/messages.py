"""
The events the consumer understands: routing keys, JSON schemas and the commands they become.

Every message body is a JSON object ``{"event_id", "occurred_at", "data", "type"?}``; the routing
key picks the schema of ``data`` (docs/events.md). ``data`` is checked with the HTTP API's request
models (``hayhooks_app.schemas``), so an event obeys exactly the rules of the matching route, and
the tenant must be one the consumer serves (docs/contract.md, "Events").

Usage:

```python
from hayhooks_app.events.messages import parse_event

command = parse_event("document.upsert", body, tenants={"acme"})   # raises PoisonMessage
command.kind, command.tenant_id, command.document_ids
```
"""

import json
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import AwareDatetime, Field, StringConstraints, ValidationError, field_validator, model_validator

from hayhooks_app.schemas import (
    LIMITS,
    DocumentId,
    DocumentIds,
    FlagsRequest,
    Identifier,
    IndexDocumentIn,
    InvalidateRequest,
    ShortText,
    StrictModel,
    UploadForm,
)

EventId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.:-]{1,128}$")]
CascadeId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.:-]{1,128}$")]
MAX_BODY_BYTES = 4 * 1024 * 1024 + 65536  # the largest document (SOURCEBOUND_MAX_DOCUMENT_CHARS) plus its envelope


class PoisonMessage(Exception):
    """A message that can never succeed; it goes to the dead-letter queue with ``reason`` and ``detail``."""

    def __init__(self, reason: str, detail: str, event_id: str | None = None, tenant_id: str | None = None):
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail, self.event_id, self.tenant_id = reason, detail, event_id, tenant_id


# --- data schemas by routing key --------------------------------------------------------------


class UpsertData(IndexDocumentIn):
    """``document.upsert``: one document, as in ``POST /index/run``, with its ``document_id`` required."""

    document_id: DocumentId = Field(description="[A-Za-z0-9-]+; required: events are ordered per document.")


class TaskValidatedData(IndexDocumentIn):
    """
    ``task.validated``: a validated task output, indexed as the document ``artifact_id`` (unless given), and
    ``verified`` unless its meta says otherwise: the QA service approved it, as ``POST /api/v1/embed`` assumes of
    the outputs DATS embeds (docs/api.md, "DATS RAG API").
    """

    artifact_id: DocumentId = Field(description="The artifact; the document_id when none is given.")

    @model_validator(mode="after")
    def _artifact_is_the_document(self) -> "TaskValidatedData":
        if self.document_id is None:
            self.document_id = self.artifact_id
        meta = dict(self.meta or {})
        if meta.get("verified") is None:
            meta["verified"] = True
        self.meta = {**meta, "artifact_id": self.artifact_id}
        return self


class FileUpsertData(UploadForm):
    """
    ``document.upsert_file``: a file under ``SOURCEBOUND_EVENTS_FILES_DIR`` (a shared volume), indexed as
    ``POST /index/upload`` indexes one uploaded file, with its ``document_id`` required.
    """

    file: Annotated[str, StringConstraints(min_length=1, max_length=1024)] = Field(
        description="Path relative to SOURCEBOUND_EVENTS_FILES_DIR (no '..', not absolute)."
    )
    document_id: DocumentId = Field(description="[A-Za-z0-9-]+; required: events are ordered per document.")
    files: Literal[1] = Field(1, exclude=True, description="Always one file.")

    @field_validator("file")
    @classmethod
    def _relative_path(cls, value: str) -> str:
        path = PurePosixPath(value)
        if path.is_absolute() or ".." in path.parts or "\\" in value:
            raise ValueError("must be a relative path inside SOURCEBOUND_EVENTS_FILES_DIR, without '..'")
        if any(ord(char) < 32 for char in value):
            raise ValueError("must not contain control characters")
        return value


class DeleteData(StrictModel):
    """``document.delete``: remove documents (every chunk)."""

    tenant_id: Identifier
    document_ids: DocumentIds
    reason: ShortText | None = None


class ArtifactTaintedData(StrictModel):
    """
    ``artifact.tainted``: an upstream artifact was tainted; the documents indexed with those artifact ids
    (``meta.artifact_id``, whatever their ``document_id``) are invalidated.
    """

    tenant_id: Identifier
    artifact_id: Identifier | None = None
    artifact_ids: Annotated[list[Identifier], Field(min_length=1, max_length=LIMITS.max_document_ids)] | None = None
    cascade_id: CascadeId | None = None
    reason: ShortText | None = None

    @model_validator(mode="after")
    def _needs_an_artifact(self) -> "ArtifactTaintedData":
        if not self.artifact_id and not self.artifact_ids:
            raise ValueError("give artifact_id or artifact_ids")
        return self

    def ids(self) -> list[str]:
        return list(dict.fromkeys([*([self.artifact_id] if self.artifact_id else []), *(self.artifact_ids or [])]))


SCHEMAS: dict[str, type[StrictModel]] = {
    "document.upsert": UpsertData,
    "document.upsert_file": FileUpsertData,
    "task.validated": TaskValidatedData,
    "document.delete": DeleteData,
    "document.invalidate": InvalidateRequest,
    "artifact.tainted": ArtifactTaintedData,
    "document.flags": FlagsRequest,
}
ROUTING_KEYS = tuple(SCHEMAS)

Data = TypeVar("Data", bound=StrictModel)


class Envelope(StrictModel, Generic[Data]):
    """The body of every event."""

    event_id: EventId = Field(description="Unique per event; a redelivery or duplicate with this id changes nothing.")
    occurred_at: AwareDatetime = Field(description="Publish time (RFC 3339 with offset); orders a document's events.")
    type: str | None = Field(None, description="The routing key, repeated (optional; must match when given).")
    data: Data


_ENVELOPES = {key: Envelope[schema] for key, schema in SCHEMAS.items()}


# --- commands ---------------------------------------------------------------------------------


@dataclass
class Command:
    """
    One validated event, ready to apply.

    :param kind: ``upsert``, ``upsert_file``, ``invalidate``, ``invalidate_artifacts`` (``document_ids`` then holds
        the artifact ids: events are ordered per artifact, which is the document of a ``task.validated``) or
        ``flags``.
    :param occurred_at_us: Publish time in microseconds since the epoch (the per-document order).
    :param document_ids: The documents it changes.
    :param arguments: For ``upsert`` the document (``index_documents`` shape); else the lifecycle arguments.
    """

    event_id: str
    routing_key: str
    kind: Literal["upsert", "upsert_file", "invalidate", "invalidate_artifacts", "flags"]
    tenant_id: str
    occurred_at_us: int
    document_ids: list[str]
    arguments: dict[str, Any] = field(default_factory=dict)
    last_error: str | None = None


def _validation_detail(error: ValidationError) -> str:
    problems = []
    for item in error.errors(include_url=False)[:10]:
        where = ".".join(str(part) for part in item.get("loc", ())) or "body"
        problems.append(f"{where}: {item.get('msg')}")
    return "; ".join(problems)


def _event_id_of(body: bytes) -> str | None:
    """The event id of a message that failed validation, when it has a usable one (for the records)."""
    try:
        value = json.loads(body).get("event_id")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) and 0 < len(value) <= 128 else None


def parse_event(
    routing_key: str, body: bytes, tenants: frozenset[str] | set[str], allow_public: bool = False
) -> Command:
    """
    Validate one message into a :class:`Command`.

    :param routing_key: The message's routing key (picks the schema).
    :param body: The raw body (UTF-8 JSON).
    :param tenants: The tenants the consumer may change.
    :param allow_public: Whether ``scope: public`` documents may be written.
    :raises PoisonMessage: ``unknown_routing_key``, ``too_large``, ``invalid`` (bad JSON or a schema
        violation, the fields named) or ``unauthorised_tenant``.
    """
    envelope_model = _ENVELOPES.get(routing_key)
    if envelope_model is None:
        raise PoisonMessage(
            "unknown_routing_key", f"{routing_key!r} is not one of {', '.join(ROUTING_KEYS)}", _event_id_of(body)
        )
    if len(body) > MAX_BODY_BYTES:
        raise PoisonMessage("too_large", f"{len(body)} bytes is over the limit of {MAX_BODY_BYTES}")
    try:
        envelope = envelope_model.model_validate_json(body)
    except ValidationError as error:
        raise PoisonMessage("invalid", _validation_detail(error), _event_id_of(body)) from error
    if envelope.type is not None and envelope.type != routing_key:
        raise PoisonMessage("invalid", f"type {envelope.type!r} does not match the routing key {routing_key!r}")
    data = envelope.data
    occurred_at_us = int(envelope.occurred_at.timestamp() * 1_000_000)
    base = {"event_id": envelope.event_id, "routing_key": routing_key, "tenant_id": data.tenant_id}
    # The consumer's service identity: only configured tenants (docs/contract.md, "Events").
    if data.tenant_id not in tenants:
        raise PoisonMessage(
            "unauthorised_tenant",
            f"tenant {data.tenant_id!r} is not served by this consumer (SOURCEBOUND_EVENTS_TENANTS)",
            envelope.event_id,
            data.tenant_id,
        )
    if isinstance(data, IndexDocumentIn | FileUpsertData):
        if data.scope == "public" and not allow_public:
            raise PoisonMessage(
                "unauthorised_tenant",
                "scope 'public' documents need SOURCEBOUND_EVENTS_ALLOW_PUBLIC=true",
                envelope.event_id,
                data.tenant_id,
            )
        if isinstance(data, FileUpsertData):
            return Command(
                **base, kind="upsert_file", occurred_at_us=occurred_at_us, document_ids=[data.document_id],
                arguments={"file": data.file, "meta": {k: v for k, v in data.stream_meta().items() if k != "file"}},
            )  # fmt: skip
        document = data.model_dump(exclude_none=True, exclude={"artifact_id"})
        return Command(
            **base, kind="upsert", occurred_at_us=occurred_at_us, document_ids=[data.document_id], arguments=document
        )
    if isinstance(data, FlagsRequest):
        return Command(
            **base, kind="flags", occurred_at_us=occurred_at_us, document_ids=list(dict.fromkeys(data.document_ids)),
            arguments={"tainted": data.tainted, "verified": data.verified, "reason": data.reason},
        )  # fmt: skip
    if isinstance(data, ArtifactTaintedData):
        return Command(
            **base, kind="invalidate_artifacts", occurred_at_us=occurred_at_us, document_ids=data.ids(),
            arguments={"reason": data.reason or "upstream_taint", "cascade_id": data.cascade_id},
        )  # fmt: skip
    if isinstance(data, DeleteData):
        ids, reason, cascade_id = list(dict.fromkeys(data.document_ids)), data.reason or "deleted", None
    else:
        ids, reason, cascade_id = list(dict.fromkeys(data.document_ids)), data.reason, data.cascade_id
    return Command(
        **base, kind="invalidate", occurred_at_us=occurred_at_us, document_ids=ids,
        arguments={"reason": reason, "cascade_id": cascade_id},
    )  # fmt: skip
