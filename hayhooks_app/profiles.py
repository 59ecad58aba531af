"""
The Qdrant-server profile: ``pipelines/profiles/server/*.yml``, derived from ``pipelines/*.yml``.

The embedded pipelines use the Qdrant Edge store, which one process owns. For a deployment
with a Qdrant server (docker-compose, several stateless API replicas) the same pipelines run
on qdrant-haystack's ``QdrantDocumentStore`` instead. Rather than keep two hand-edited copies
of every pipeline in step, the server files are generated from the embedded ones by these rules:

* every ``QdrantEdgeDocumentStore`` -> ``TenantQdrantDocumentStore`` (qdrant-haystack's
  ``QdrantDocumentStore`` with per-tenant point ids, ``components.document_stores.qdrant_server``)
  with ``url=${QDRANT_URL}``, ``index=${QDRANT_COLLECTION}``, ``use_sparse_embeddings=True``,
  ``sparse_idf=True``, the same ``embedding_dim``, payload indexes on the access fields and the
  Haystack id, and ``local_location=${SOURCEBOUND_QDRANT_LOCATION}`` (unset: the server at
  ``QDRANT_URL``; ``:memory:`` or a folder: qdrant-client's local mode, a test engine);
* ``QdrantEdgeHybridRetriever`` -> ``TenantQdrantHybridRetriever`` and ``QdrantEdgeBM25Retriever`` ->
  ``TenantQdrantSparseEmbeddingRetriever``, each fed by a new ``Bm25TextEmbedder`` (``<name>_bm25``)
  that takes over the retriever's ``query`` text input, the hybrid one with the Edge retriever's ``rrf_k``
  (default 60); ``QdrantEdgeEmbeddingRetriever`` -> ``TenantQdrantEmbeddingRetriever`` (qdrant-haystack's
  retrievers on that store);
* a writer (``DocumentWriter``, ``LifecycleDocumentWriter``) on the Edge store that no ``Bm25DocumentEmbedder`` feeds
  already gets one (``<name>_bm25``) in front, so documents carry the same BM25 sparse vectors the Edge store
  computes itself;
* any other component holding the Edge store gets the server store.

``${NAME:-default}`` references stay unresolved, so the generated files take the same
environment variables. A test fails when a generated file is out of date; regenerate with
``python -m hayhooks_app.profiles``.
"""

import copy
import sys
from pathlib import Path
from typing import Any

import yaml

from components.core.access_fields import IDENTITY_FIELDS
from components.document_stores.qdrant_edge.document_store import DEFAULT_RRF_K
from components.services.pipeline_loader import PIPELINES_DIR

SERVER_PROFILE_DIR = PIPELINES_DIR / "profiles" / "server"
PROFILE_SOURCES = ("indexing", "search", "query", "query_ollama", "enrich")

EDGE_STORE = "components.document_stores.qdrant_edge.document_store.QdrantEdgeDocumentStore"
EDGE_RETRIEVERS = "components.retrievers.qdrant_edge"
SERVER_STORE = "components.document_stores.qdrant_server.document_store.TenantQdrantDocumentStore"
SERVER_RETRIEVERS = "components.retrievers.qdrant_server.tenant_retrievers"
BM25_TEXT = "components.embedders.bm25_embedders.Bm25TextEmbedder"
BM25_DOCUMENTS = "components.embedders.bm25_embedders.Bm25DocumentEmbedder"
WRITERS = (
    "haystack.components.writers.document_writer.DocumentWriter",
    "components.writers.lifecycle_document_writer.LifecycleDocumentWriter",
)
# Edge retriever -> (server retriever, whether it takes a BM25 query vector).
RETRIEVERS = {
    f"{EDGE_RETRIEVERS}.hybrid_retriever.QdrantEdgeHybridRetriever": (
        f"{SERVER_RETRIEVERS}.TenantQdrantHybridRetriever",
        True,
    ),
    f"{EDGE_RETRIEVERS}.bm25_retriever.QdrantEdgeBM25Retriever": (
        f"{SERVER_RETRIEVERS}.TenantQdrantSparseEmbeddingRetriever",
        True,
    ),
    f"{EDGE_RETRIEVERS}.embedding_retriever.QdrantEdgeEmbeddingRetriever": (
        f"{SERVER_RETRIEVERS}.TenantQdrantEmbeddingRetriever",
        False,
    ),
}
RETRIEVER_PARAMETERS = ("top_k", "filter_policy", "return_embedding", "filters")
# Payload indexes of the server collection: the access rule's fields and the document id (under ``meta.``), the
# language and domain filters, the artifact id (invalidation by artifact), and the Haystack id (``id``), which
# get_documents_by_id and delete_documents select by.
INDEXED_FIELDS = (*IDENTITY_FIELDS, "language", "domain", "artifact_id")

HEADER = """\
# GENERATED from pipelines/{name}.yml by `python -m hayhooks_app.profiles`; do not edit by hand.
# Qdrant-server profile: the same pipeline on qdrant-haystack's QdrantDocumentStore at the
# QDRANT_URL server (collection QDRANT_COLLECTION), with BM25 sparse vectors from
# components.embedders.bm25_embedders. SOURCEBOUND_QDRANT_LOCATION (":memory:" or a folder) runs it
# on qdrant-client's local mode instead: a TEST engine only. See hayhooks_app/profiles.py for the rules.
"""


def server_store(edge_parameters: dict[str, Any]) -> dict[str, Any]:
    """The qdrant-haystack store that replaces an Edge store with these init parameters."""
    return {
        "type": SERVER_STORE,
        "init_parameters": {
            "url": "${QDRANT_URL:-http://localhost:6333}",
            "local_location": "${SOURCEBOUND_QDRANT_LOCATION:-}",
            "index": "${QDRANT_COLLECTION:-sourcebound}",
            "embedding_dim": edge_parameters.get("embedding_dim", 384),
            "similarity": edge_parameters.get("similarity", "cosine"),
            "use_sparse_embeddings": True,
            "sparse_idf": True,
            "recreate_index": False,
            "payload_fields_to_index": [
                *({"field_name": f"meta.{field}", "field_schema": "keyword"} for field in INDEXED_FIELDS),
                {"field_name": "id", "field_schema": "keyword"},
            ],
        },
    }


def _is_edge_store(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") == EDGE_STORE


def _fed_by(data: dict[str, Any], name: str, component_type: str) -> bool:
    """Whether ``name.documents`` already comes from a component of ``component_type`` (e.g. its own BM25 step)."""
    senders = {
        connection["sender"].split(".", 1)[0]
        for connection in data.get("connections", [])
        if connection.get("receiver") == f"{name}.documents"
    }
    return any(data["components"].get(sender, {}).get("type") == component_type for sender in senders)


def _redirect(data: dict[str, Any], old: str, new: str) -> None:
    """Point every connection and declared input that reaches ``old`` at ``new`` instead."""
    for connection in data.get("connections", []):
        if connection.get("receiver") == old:
            connection["receiver"] = new
    for mapping in (data.get("inputs"), (data.get("metadata") or {}).get("inputs")):
        for targets in (mapping or {}).values():
            if isinstance(targets, list):
                targets[:] = [new if target == old else target for target in targets]


def to_server_profile(data: dict[str, Any]) -> dict[str, Any]:
    """
    Derive the server-profile pipeline dict from an embedded one (see the module doc).

    :param data: The raw (unresolved) YAML dict of a pipeline in ``pipelines/``.
    :returns: A new dict; ``data`` is left unchanged.
    """
    data = copy.deepcopy(data)
    components = data["components"]
    added: dict[str, Any] = {}
    for name, component in components.items():
        parameters = component.setdefault("init_parameters", {}) or {}
        store = parameters.get("document_store")
        if not _is_edge_store(store):
            continue
        edge_parameters = store.get("init_parameters", {})
        parameters["document_store"] = server_store(edge_parameters)
        bm25 = {"bm25_config": edge_parameters["bm25_config"]} if edge_parameters.get("bm25_config") else {}
        if component["type"] in RETRIEVERS:
            server_type, sparse = RETRIEVERS[component["type"]]
            component["type"] = server_type
            component["init_parameters"] = {
                key: value for key, value in parameters.items() if key in (*RETRIEVER_PARAMETERS, "document_store")
            }
            if server_type.endswith("HybridRetriever"):
                # The same RRF constant as the Edge retriever (qdrant-haystack would leave Qdrant's default of 2).
                component["init_parameters"]["rrf_k"] = parameters.get("rrf_k", DEFAULT_RRF_K)
            if sparse:
                added[f"{name}_bm25"] = {"type": BM25_TEXT, "init_parameters": dict(bm25)}
                _redirect(data, f"{name}.query", f"{name}_bm25.text")
                data["connections"].append(
                    {"sender": f"{name}_bm25.sparse_embedding", "receiver": f"{name}.query_sparse_embedding"}
                )
        elif component["type"] in WRITERS and not _fed_by(data, name, BM25_DOCUMENTS):
            added[f"{name}_bm25"] = {"type": BM25_DOCUMENTS, "init_parameters": dict(bm25)}
            _redirect(data, f"{name}.documents", f"{name}_bm25.documents")
            data["connections"].append({"sender": f"{name}_bm25.documents", "receiver": f"{name}.documents"})
    components.update(added)
    if isinstance(data.get("metadata"), dict) and data["metadata"].get("name"):
        data["metadata"]["profile"] = "server"
    return data


def render(name: str, source_dir: Path = PIPELINES_DIR) -> str:
    """The generated server-profile YAML text for ``pipelines/<name>.yml``."""
    data = yaml.safe_load((source_dir / f"{name}.yml").read_text(encoding="utf-8"))
    return HEADER.format(name=name) + yaml.safe_dump(
        to_server_profile(data), sort_keys=False, width=120, allow_unicode=True
    )


def sources(source_dir: Path = PIPELINES_DIR) -> list[str]:
    """The embedded pipelines that exist and get a server profile."""
    return [name for name in PROFILE_SOURCES if (source_dir / f"{name}.yml").is_file()]


def write_profiles(target_dir: Path = SERVER_PROFILE_DIR) -> list[Path]:
    """(Re)generate every server-profile file; returns the paths written."""
    target_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name in sources():
        path = target_dir / f"{name}.yml"
        path.write_text(render(name), encoding="utf-8")
        written.append(path)
    return written


def stale_profiles(target_dir: Path = SERVER_PROFILE_DIR) -> list[str]:
    """Names whose generated file is missing or differs from what ``render`` gives now."""
    stale = []
    for name in sources():
        path = target_dir / f"{name}.yml"
        if not path.is_file() or path.read_text(encoding="utf-8") != render(name):
            stale.append(name)
    return stale


if __name__ == "__main__":
    for written_path in write_profiles():
        print(f"wrote {written_path}")
    sys.exit(0)
