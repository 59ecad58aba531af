"""
The specifications' ``RAG_*`` settings this service does not name itself (the RAG Standard's ``.env``): each one is
honoured, mapped onto the YAML pipelines or the server settings, or refused at start-up with a message saying what
to set instead (docs/configuration.md, "The specifications' variables"). None is silently ignored.

| variable | here |
|---|---|
| ``RAG_TOP_K`` | honoured: search's default ``k`` (``pipelines/search.yml``; else ``RAG_TOTAL_CONTEXT_CHUNKS``) |
| ``RAG_TOP_K_RAW`` | honoured: candidates fetched before re-scoring (``planner.raw_candidates`` of every retrieval) |
| ``RAG_CHUNK_MAX_TOKENS``, ``RAG_CHUNK_OVERLAP`` | honoured: ``chunker.*`` of ``pipelines/indexing.yml`` |
| ``RAG_P95_SEARCH_MS`` | honoured: the search latency budget (``hayhooks_app/config.py``); slower searches counted |
| ``RAG_USE_BM25`` | ``true`` is what runs (hybrid retrieval); ``false`` refused |
| ``RAG_EMBEDDING_BACKEND`` | ``onnx`` is what runs; anything else refused |
| ``RAG_EMBEDDING_MODEL`` | the packaged all-MiniLM-L6-v2 under any of its names; anything else refused |
| ``RAG_INDEX_TYPE`` | ``flat`` (exact search, which the store does until optimised); anything else refused |
| ``RAG_CHUNK_MIN_TOKENS`` | refused: chunks have a target size (``RAG_CHUNK_SIZE``), no minimum |

``RAG_CRAWL_*``, ``RAG_ALLOWLIST_DOMAINS`` and ``RAG_MAX_PAGES`` belong to the web sources (docs/sources.md).

Usage:

```python
from components.runtime.rag_settings import check_rag_settings

check_rag_settings()            # raises ConfigError naming the variable and what to set instead
```
"""

import os
from collections.abc import Callable, Mapping

from components.runtime.environment import ConfigError

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
EMBEDDING_MODEL_NAMES = frozenset(
    {
        "all-MiniLM-L6-v2",
        "sentence-transformers/all-MiniLM-L6-v2",
        "packaged:all-MiniLM-L6-v2",
        "all-minilm",
        "all-minilm:l6-v2",
    }
)


def _integer(name: str, value: str, lowest: int, highest: int) -> str | None:
    try:
        number = int(value)
    except ValueError:
        return f"{name} must be an integer, got {value!r}."
    if not lowest <= number <= highest:
        return f"{name} must be between {lowest} and {highest}, got {number}."
    return None


def _use_bm25(value: str) -> str | None:
    if value.lower() in _TRUE:
        return None
    if value.lower() in _FALSE:
        return (
            "RAG_USE_BM25=false is not supported: answers and enrichment always fuse BM25 with dense retrieval "
            '(hybrid, docs/contract.md "Retrieval quality controls"). For dense-only search send '
            "search_mode=vector (mode=vector on /rag/query); unset RAG_USE_BM25 or set it to true."
        )
    return f"RAG_USE_BM25 must be true or false, got {value!r}."


def _embedding_backend(value: str) -> str | None:
    if value.lower() in {"onnx", "onnxruntime"}:
        return None
    return (
        f"RAG_EMBEDDING_BACKEND={value!r} is not supported: embeddings run in the process on ONNX Runtime from the "
        "packaged model, with no network at run time (docs/embeddings.md). Unset RAG_EMBEDDING_BACKEND or set it "
        "to onnx."
    )


def _embedding_model(value: str) -> str | None:
    if value in EMBEDDING_MODEL_NAMES or value.lower() in {name.lower() for name in EMBEDDING_MODEL_NAMES}:
        return None
    return (
        f"RAG_EMBEDDING_MODEL={value!r} is not available: the embedding model is the packaged all-MiniLM-L6-v2 "
        "(384 dimensions, no download at run time; docs/embeddings.md). Unset RAG_EMBEDDING_MODEL; another model "
        "means changing the embedders in pipelines/*.yml and re-indexing."
    )


def _index_type(value: str) -> str | None:
    if value.lower() == "flat":
        return None
    return (
        f"RAG_INDEX_TYPE={value!r} is not supported: the Qdrant store searches exactly (flat) and builds its HNSW "
        "index only when an operator optimises it (docs/operations.md). Unset RAG_INDEX_TYPE or set it to flat."
    )


def _chunk_min_tokens(value: str) -> str | None:
    return (
        f"RAG_CHUNK_MIN_TOKENS={value!r} is not supported: chunks are packed to a target size, RAG_CHUNK_SIZE "
        "(default 180 tokens), within RAG_CHUNK_MAX_TOKENS (default 200, bounded by the embedder's 256 word "
        'pieces), with no minimum (docs/contract.md "Documents, chunks and SourceIds"). Unset RAG_CHUNK_MIN_TOKENS '
        "and set RAG_CHUNK_SIZE."
    )


def _p95_search_ms(value: str) -> str | None:
    try:
        number = float(value)
    except ValueError:
        return f"RAG_P95_SEARCH_MS must be a number of milliseconds, got {value!r}."
    return None if number > 0 else f"RAG_P95_SEARCH_MS must be > 0, got {value!r}."


# Variable -> check of a set value (a message refusing it, or None when it is honoured).
CHECKS: dict[str, Callable[[str], str | None]] = {
    "RAG_TOP_K": lambda value: _integer("RAG_TOP_K", value, 1, 100),
    "RAG_TOP_K_RAW": lambda value: _integer("RAG_TOP_K_RAW", value, 0, 1000),
    "RAG_USE_BM25": _use_bm25,
    "RAG_EMBEDDING_BACKEND": _embedding_backend,
    "RAG_EMBEDDING_MODEL": _embedding_model,
    "RAG_INDEX_TYPE": _index_type,
    "RAG_CHUNK_MIN_TOKENS": _chunk_min_tokens,
    "RAG_P95_SEARCH_MS": _p95_search_ms,
}


def rag_setting_problems(env: Mapping[str, str] | None = None) -> list[str]:
    """What is wrong with the specifications' ``RAG_*`` settings in ``env`` (default ``os.environ``), one line each."""
    variables = os.environ if env is None else env
    problems = []
    for name, check in CHECKS.items():
        value = str(variables.get(name, "")).strip()
        if value:
            problem = check(value)
            if problem:
                problems.append(problem)
    return problems


def check_rag_settings(env: Mapping[str, str] | None = None) -> None:
    """
    Refuse settings the service cannot honour.

    :raises ConfigError: Naming every refused variable and what to set instead.
    """
    problems = rag_setting_problems(env)
    if problems:
        raise ConfigError(" ".join(problems))


def p95_search_budget_ms(env: Mapping[str, str] | None = None) -> float | None:
    """``RAG_P95_SEARCH_MS`` as milliseconds, or ``None`` when unset (checked by :func:`check_rag_settings`)."""
    value = str((os.environ if env is None else env).get("RAG_P95_SEARCH_MS", "")).strip()
    return float(value) if value and _p95_search_ms(value) is None else None
