"""
What the specification routes (``dats_api``, ``service_plan``, ``rag_standard``) share: turning a specification's
``content`` + ``metadata`` into one of our documents, and running a service call off the event loop with domain
errors mapped to HTTP errors (docs/api.md, "Specification routes").

A specification's ``metadata`` is free-form. Our identity fields in it (``tenant_id``, ``tags``, ``scope``,
``user_id``, ``project_id``, ``document_id``, ``document_name``, ``source_uri``) become the document's own fields,
checked as on ``POST /index/run``; every other key is stored in the document's ``meta`` (strings, numbers,
booleans, null or lists of strings; at most 64 keys).
"""

from collections.abc import Callable
from typing import Any

from fastapi.concurrency import run_in_threadpool
from pydantic import ValidationError

from hayhooks_app.errors import describe_validation_errors, raise_api_errors, validation_error
from hayhooks_app.schemas import IndexDocumentIn

# Keys of a specification's metadata that are fields of our document rather than free meta.
DOCUMENT_FIELDS = ("tenant_id", "tags", "scope", "user_id", "project_id", "document_id", "document_name", "source_uri")


async def call(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run a blocking service call in the thread pool; domain errors become their HTTP errors."""
    return await run_in_threadpool(raise_api_errors(function), *args, **kwargs)


def split_metadata(metadata: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(our document fields, free meta)`` of a specification's metadata."""
    metadata = dict(metadata or {})
    fields = {key: metadata.pop(key) for key in DOCUMENT_FIELDS if metadata.get(key) is not None}
    return fields, metadata


def build_document(content: str, fields: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """
    One ``POST /index/run`` document from the parts, validated by the same model.

    :raises ApiError: 422 naming the metadata fields at fault.
    """
    document = {"content": content, **fields, "meta": meta or None}
    try:
        return IndexDocumentIn.model_validate(document).model_dump(exclude_none=True)
    except ValidationError as error:
        raise validation_error("metadata: " + describe_validation_errors(error.errors())) from error
