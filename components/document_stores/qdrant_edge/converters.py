"""
Haystack ``Document`` <-> Qdrant Edge point.

Point layout (one point per document):

- id: ``uuid5(UUID_NAMESPACE, json([tenant_id, document.id]))`` for a document
  whose ``meta.tenant_id`` is a string, else ``uuid5(UUID_NAMESPACE, document.id)``.
  Qdrant ids must be integers or UUIDs; deriving them from the tenant too makes
  document ids per tenant (docs/contract.md "Document ids"): the same
  ``document_id:chunk_index`` in two tenants is two points, and a write never
  looks at another tenant's points. The original string id is kept in the
  payload (indexed), which ``id`` filters and ``delete_documents`` match.
- vectors: ``dense`` (the document's embedding, when it has one) and ``bm25``
  (the document's ``sparse_embedding``, or BM25 computed from ``content``).
- payload: ``{"id": str, "content": str, "meta": {...}, "_store": {...}}``.
  Haystack's filter fields ``id``, ``content`` and ``meta.<name>`` are payload
  paths as they stand; ``_store`` holds the store's bookkeeping (the dense
  vector's original length, whether the sparse vector came with the document,
  and the access keys below) and is never visible in returned documents.

Access keys. The access rule (docs/contract.md, "Access rule": tenant_id == T AND tags shares a
value with the user's tags AND (scope == "tenant" OR scope == "user" AND
user_id == U OR scope == "project" AND project_id == P AND user_id == U),
or scope == "public"), usually with
tainted != True and sometimes verified == True) costs the engine a check per
condition for every point of the tenant: ~11 ms CPU per hybrid query at 100k
chunks. So each point also carries ``_store.access``: one keyword per
(tenant, tag, audience, tainted, verified) combination its meta grants,
indexed; ``filters`` rewrites that rule into a single ``MatchAny`` over the
keys the request may see, which the index answers directly (~2 ms). Keys are
derived from meta on every write and recomputed when ``update_by_filter``
changes one of ``ACCESS_FIELDS``, so the rewrite selects exactly what the
plain filter selects (property-tested against it). A stored key is a 128-bit
digest of the combination, 22 characters: the engine compares each BM25
candidate's keys with the request's, and against the readable 70-character
form that check was half of the keyword stage at 100k chunks (3.9 -> 2.2 ms).
"""

import base64
import hashlib
import json
import uuid
from typing import Any

from haystack import Document
from haystack.dataclasses import SparseEmbedding
from qdrant_edge import SparseVector

from components.core.access_fields import ACCESS_FIELDS as RULE_FIELDS
from components.core.access_fields import ACCESS_FLAG_FIELDS

# Fixed forever: changing it would orphan every stored point.
UUID_NAMESPACE = uuid.UUID("5b0e2c1e-7d1f-4f0a-9f5e-2f3d8a61c0de")
DENSE_VECTOR_NAME = "dense"
SPARSE_VECTOR_NAME = "bm25"
STORE_PAYLOAD_KEY = "_store"
# Below float32 resolution: rescaling a vector this close to unit length changes nothing.
_UNIT_TOLERANCE = 1e-6


ACCESS_KEYS_PATH = f"{STORE_PAYLOAD_KEY}.access"
# Every field the access keys are computed from (docs/contract.md, "Access rule").
ACCESS_FIELDS = frozenset((*RULE_FIELDS, *ACCESS_FLAG_FIELDS))


def _strings(value: Any) -> list[str]:
    """The string values a keyword match sees in a payload value: the string, or the strings of a list."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


def _has_true(value: Any) -> bool:
    """Whether a boolean match on ``True`` matches the payload value (the boolean, or a list holding it)."""
    return value is True or (isinstance(value, list) and any(item is True for item in value))


def access_key(tenant_id: str, tag: str, scope: str, audience_id: str, tainted: bool, verified: bool) -> str:
    """
    One access key: the unpadded URL-safe base64 of the first 16 bytes of the SHA-256 of the combination as JSON
    (JSON keeps the parts apart whatever characters they contain; 128 bits keep two combinations apart).
    """
    parts = [tenant_id, tag, scope, audience_id, int(tainted), int(verified)]
    combination = json.dumps(parts, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(hashlib.sha256(combination).digest()[:16]).rstrip(b"=").decode("ascii")


def public_access_key(tainted: bool, verified: bool) -> str:
    """The key of a public chunk: every tenant may see it whatever its tags, so it names no tenant, tag or user."""
    return access_key("", "", "public", "", tainted, verified)


def project_audience(project_id: str, user_id: str) -> str:
    """The audience id of a project chunk: its project and its owner (docs/contract.md "Access rule")."""
    return json.dumps([project_id, user_id], ensure_ascii=False, separators=(",", ":"))


def access_keys(meta: dict[str, Any]) -> list[str]:
    """
    The access keys a document's meta grants: one per tenant value, tag value and audience (``tenant`` when
    scope is "tenant", each user_id when scope is "user", each project_id when scope is "project"), marked with
    whether ``tainted`` and ``verified`` match ``True``. Non-string values grant nothing, as they match no string
    filter value.
    """
    scopes = _strings(meta.get("scope"))
    audiences = [("tenant", "")] if "tenant" in scopes else []
    if "user" in scopes:
        audiences += [("user", user_id) for user_id in _strings(meta.get("user_id"))]
    if "project" in scopes:
        # Project chunks are private to their owner within the project: the audience is the pair.
        audiences += [
            ("project", project_audience(project_id, user_id))
            for project_id in _strings(meta.get("project_id"))
            for user_id in _strings(meta.get("user_id"))
        ]
    tainted, verified = _has_true(meta.get("tainted")), _has_true(meta.get("verified"))
    keys = {
        access_key(tenant_id, tag, scope, audience_id, tainted, verified)
        for tenant_id in _strings(meta.get("tenant_id"))
        for tag in _strings(meta.get("tags"))
        for scope, audience_id in audiences
    }
    # Public chunks get one key of their own, so the rule's public branch is the same indexed lookup.
    if "public" in scopes:
        keys.add(public_access_key(tainted, verified))
    return sorted(keys)


def point_id(document_id: str, tenant_id: Any = None) -> uuid.UUID:
    """
    The deterministic point id of a Haystack document id within its tenant.

    :param document_id: The Haystack id (``document_id:chunk_index`` in sourcebound).
    :param tenant_id: The document's ``meta.tenant_id``; only a non-empty string takes part (other values keep
        the plain id, as for documents without a tenant).
    """
    if isinstance(tenant_id, str) and tenant_id:
        # JSON keeps tenant and id apart whatever characters they contain.
        return uuid.uuid5(UUID_NAMESPACE, json.dumps([tenant_id, document_id], ensure_ascii=False))
    return uuid.uuid5(UUID_NAMESPACE, document_id)


def to_sparse_vector(embedding: SparseEmbedding) -> SparseVector:
    """Haystack ``SparseEmbedding`` -> engine ``SparseVector``."""
    return SparseVector(indices=list(embedding.indices), values=list(embedding.values))


def to_sparse_embedding(vector: SparseVector) -> SparseEmbedding:
    """Engine ``SparseVector`` -> Haystack ``SparseEmbedding``."""
    return SparseEmbedding(indices=list(vector.indices), values=list(vector.values))


def document_payload(document: Document, embedding_norm: float | None, sparse_from_document: bool) -> dict[str, Any]:
    """
    The payload stored for a document.

    :param document: The document.
    :param embedding_norm: The Euclidean length of its embedding when the engine stores it normalised (cosine),
        so the original vector can be returned; ``None`` otherwise.
    :param sparse_from_document: Whether the ``bm25`` vector is the document's own ``sparse_embedding``
        (returned with the document) rather than one the store computed (an index detail, not returned).
    """
    return {
        "id": document.id,
        "content": document.content,
        "meta": document.meta,
        STORE_PAYLOAD_KEY: {
            "embedding_norm": embedding_norm,
            "sparse_from_document": sparse_from_document,
            "access": access_keys(document.meta),
        },
    }


def record_to_document(record: Any, score: float | None = None) -> Document:
    """
    Convert an engine ``Record``/``ScoredPoint`` into a Haystack ``Document``.

    The embedding is returned when the record carries the ``dense`` vector, scaled back to its original length
    when the engine stored it normalised; the sparse embedding only when the document came with one.
    """
    payload = record.payload or {}
    bookkeeping = payload.get(STORE_PAYLOAD_KEY) or {}
    vectors = record.vector  # converted from the engine on every access: read once
    if not isinstance(vectors, dict):
        vectors = {}

    embedding = vectors.get(DENSE_VECTOR_NAME)
    if embedding is not None:
        norm = bookkeeping.get("embedding_norm")
        # Unit-length input (e.g. all-MiniLM-L6-v2, which normalises) comes back as stored.
        if norm and abs(norm - 1.0) > _UNIT_TOLERANCE:
            embedding = [value * norm for value in embedding]

    sparse_embedding = None
    sparse = vectors.get(SPARSE_VECTOR_NAME)
    if sparse is not None and bookkeeping.get("sparse_from_document"):
        sparse_embedding = to_sparse_embedding(sparse)

    return Document(
        id=payload.get("id", ""),
        content=payload.get("content"),
        meta=payload.get("meta") or {},
        score=score,
        embedding=embedding,
        sparse_embedding=sparse_embedding,
    )
