"""
The service's health (``GET /health``, docs/api.md): the store, the embedder and the generator, read off the
loaded pipelines.

``status`` is ``unhealthy`` when the store fails, ``degraded`` when the LLM is unreachable or the configured chat
model is not pulled (every ``/rag/run`` would fail; search still works), else ``healthy``. ``ready`` is true only
when ``healthy`` (the readiness route, ``GET /health/ready``, answers 503 otherwise) and ``reason`` says why not.
The generator is probed at most every 2 s: probes may come every second from several load balancers.

Usage:

```python
from components.services.health_check import HealthCheck

health = HealthCheck(resources, version="0.1.0", auth_mode="trusted", pipeline_names={"rag": "query"})
health.report()["status"]           # "healthy"
```
"""

import time
from pathlib import Path
from typing import Any, Protocol
from urllib.error import URLError
from urllib.request import urlopen

from haystack import Pipeline

from components.core.url_credentials import strip_userinfo
from components.services.pipeline_parts import find_component

GENERATOR_PROBE_SECONDS = 2.0


class HealthResources(Protocol):
    """What the health check reads, loaded on first use by the wiring (``hayhooks_app.container``)."""

    @property
    def store(self) -> Any: ...  # the document store

    @property
    def queries(self) -> Any: ...  # QueryService

    def pipeline(self, kind: str) -> Pipeline: ...


class HealthCheck:
    """
    :param resources: The store, the query service and the pipelines (see :class:`HealthResources`).
    :param version: The service version reported.
    :param auth_mode: The identity mode reported.
    :param pipeline_names: Pipeline kind -> the pipeline name or YAML serving it.
    :param started_at: When the process started (``time.time()``), for ``uptime_s``.
    """

    def __init__(
        self,
        resources: HealthResources,
        *,
        version: str,
        auth_mode: str,
        pipeline_names: dict[str, str],
        started_at: float | None = None,
    ) -> None:
        self.resources = resources
        self.version = version
        self.auth_mode = auth_mode
        self.pipeline_names = dict(pipeline_names)
        self.started_at = time.time() if started_at is None else started_at
        self._generator_cache: tuple[float, dict[str, Any]] | None = None

    def report(self) -> dict[str, Any]:
        """Store, embedder and generator status, with the version, identity mode, uptime and pipelines."""
        try:
            store = self.resources.store
            info = store.info() if hasattr(store, "info") else {"points": store.count_documents()}
            backend = "qdrant-edge" if type(store).__name__.startswith("QdrantEdge") else "qdrant-server"
            store_status = {"backend": backend, "status": "ok", **info}
        except Exception as error:
            store_status = {"backend": "unknown", "status": "error", "points": None, "error": str(error)}
        generator = self._generator_status()
        reason = None
        if store_status["status"] == "error":
            status, reason = "unhealthy", f"The document store fails: {store_status.get('error')}"
        elif generator.get("reachable") is False:
            status = "degraded"
            reason = f"The LLM at {generator.get('url')} is unreachable: RAG requests fail (search still works)."
        elif generator.get("model_available") is False:
            status = "degraded"
            reason = (
                f"The configured chat model {generator.get('model')!r} is not pulled on {generator.get('url')}: every "
                f"RAG request would fail. Run `ollama pull {generator.get('model')}` or set CHAT_MODEL."
            )
        else:
            status = "healthy"
        embedder = self._embedder_status()
        return {
            "status": status,
            "ready": status == "healthy",
            "reason": reason,
            "version": self.version,
            "auth_mode": self.auth_mode,
            "uptime_s": round(time.time() - self.started_at, 1),
            "store": store_status,
            "embedder": embedder,
            "generator": generator,
            "pipelines": dict(self.pipeline_names),
            **rag_standard_fields(store_status, embedder),
        }

    def _embedder_status(self) -> dict[str, Any]:
        embedder = find_component(
            self.resources.pipeline("search"),
            lambda c: type(c).__name__.endswith("TextEmbedder") and hasattr(c, "model"),
        )
        if embedder is None:
            return {"model": None, "loaded": False}
        model = str(getattr(embedder, "model", ""))
        try:
            from components.runtime.offline import DEFAULT_EMBEDDING_MODEL_NAME, embedding_model_path

            packaged = Path(model).resolve() == Path(embedding_model_path()).resolve()
        except Exception:  # the packaged model is optional for a custom YAML
            packaged = False
        return {
            "model": DEFAULT_EMBEDDING_MODEL_NAME if packaged else model,
            "backend": type(embedder).__name__,
            "dim": getattr(self.resources.store, "embedding_dim", None),
            "loaded": True,
        }

    def _generator_status(self) -> dict[str, Any]:
        cached = self._generator_cache
        if cached is not None and time.monotonic() - cached[0] < GENERATOR_PROBE_SECONDS:
            return cached[1]
        queries = self.resources.queries
        if hasattr(queries, "health"):
            status = dict(queries.health().get("generator") or {})
        else:
            status = introspect_generator(self.resources.pipeline("rag"))
        self._generator_cache = (time.monotonic(), status)
        return status


def rag_standard_fields(store: dict[str, Any], embedder: dict[str, Any]) -> dict[str, Any]:
    """
    The RAG Standard's enhanced health fields (docs/api.md, "RAG Standard API"): ``rag_ok`` (the index answers and
    the embedder is loaded), ``rag_details`` and ``index_metrics`` (chunks, vectors, dimension).
    """
    points = store.get("points")
    ok = store.get("status") == "ok" and bool(embedder.get("loaded"))
    dimension = store.get("embedding_dim") or embedder.get("dim")
    if ok:
        details = f"Index loaded: {points} chunks, {dimension}-dimensional vectors ({store.get('backend')})"
    elif store.get("status") != "ok":
        details = f"Index unavailable: {store.get('error') or 'the store did not answer'}"
    else:
        details = "Embedding model not loaded"
    return {
        "rag_ok": ok,
        "rag_details": details,
        "index_metrics": {"total_chunks": points, "total_vectors": points, "dimension": dimension},
    }


def introspect_generator(pipeline: Pipeline) -> dict[str, Any]:
    """Generator backend, model and reachability, read off the RAG pipeline's components."""
    ollama = find_component(pipeline, lambda c: "Ollama" in type(c).__name__ and hasattr(c, "url"))
    if ollama is not None:
        url = str(getattr(ollama, "url", "")).rstrip("/")
        return {
            "backend": "ollama",
            "model": getattr(ollama, "model", None),
            "url": strip_userinfo(url),  # /health is open: never the password (docs/contract.md, "Errors")
            "reachable": _reachable(f"{url}/api/tags"),
        }
    return {"backend": "extractive", "model": "extractive", "reachable": True}


def _reachable(url: str, timeout: float = 1.0) -> bool:
    try:
        with urlopen(url, timeout=timeout) as response:  # noqa: S310 - configured Ollama URL
            return 200 <= response.status < 500
    except (URLError, OSError, ValueError):
        return False
