import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from components.embedders.onnx_embedding import (
    OnnxModelError,
    ensure_onnx_model,
    load_encoder,
    model_digest,
    onnx_model_path,
    read_layout,
    resolve_threads,
)
from components.runtime import offline as runtime

# Short and long, with and without punctuation, so batches mix lengths and need padding.
TEXTS = [
    "What is Qdrant Edge?",
    "vacation policy",
    "How do I rotate an API key without downtime for the other tenants?",
    "x",
    "",
    "The hybrid retriever fuses BM25 and dense results with reciprocal rank fusion. " * 20,
    "Grounded answers cite their sources; unsupported sentences are flagged.",
    "ünïcödé and emoji 🚀 survive tokenisation",
]


def _linked_copy(source, target):
    """A model folder whose large weights are links to the packaged ones and whose small files are real copies."""
    target.mkdir()
    for item in source.iterdir():
        if item.is_dir():
            shutil.copytree(item, target / item.name)
        elif item.stat().st_size > 1_000_000:
            (target / item.name).symlink_to(item)
        else:
            shutil.copy2(item, target / item.name)
    return target


@pytest.mark.unit
class TestModelLayout:
    def test_reads_the_packaged_models_length_and_normalisation(self):
        layout = read_layout(runtime.embedding_model_path())
        assert layout.max_length == runtime.DEFAULT_EMBEDDER_MAX_WORD_PIECES
        assert layout.normalize is True

    def test_a_folder_without_tokenizer_is_a_typed_error_naming_the_fix(self, tmp_path):
        (tmp_path / "config.json").write_text("{}")
        with pytest.raises(OnnxModelError, match="tokenizer.json.*make install"):
            read_layout(tmp_path)

    def test_pooling_other_than_mean_is_refused(self, tmp_path):
        for name in ("config.json", "tokenizer.json"):
            (tmp_path / name).write_text("{}")
        (tmp_path / "1_Pooling").mkdir()
        (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
        with pytest.raises(OnnxModelError, match="mean pooling"):
            read_layout(tmp_path)

    def test_threads_are_validated(self, monkeypatch):
        assert resolve_threads(2) == 2
        monkeypatch.setenv("SOURCEBOUND_EMBEDDER_THREADS", "3")
        assert resolve_threads(None) == 3
        monkeypatch.setenv("SOURCEBOUND_EMBEDDER_THREADS", "two")
        with pytest.raises(ValueError, match="SOURCEBOUND_EMBEDDER_THREADS"):
            resolve_threads(None)
        for bad in (0, -1, 1.5, True):
            with pytest.raises(ValueError, match="threads"):
                resolve_threads(bad)

    def test_digest_changes_with_any_model_file(self, tmp_path):
        folder = _linked_copy(Path(runtime.embedding_model_path()), tmp_path / "model")
        before = model_digest(folder)
        assert onnx_model_path(folder, tmp_path / "cache").name.endswith(f"-{before}.onnx")
        config = folder / "config.json"
        config.write_text(json.dumps(json.loads(config.read_text()), indent=1))
        assert model_digest(folder) != before


@pytest.mark.integration
class TestOnnxModelCache:
    def test_cache_file_is_built_once_and_lives_under_the_cache_dir(self, tmp_path, monkeypatch):
        monkeypatch.setenv("SOURCEBOUND_CACHE_DIR", str(tmp_path))
        path = ensure_onnx_model(runtime.embedding_model_path())
        assert path.parent == tmp_path / "onnx"
        assert path.stat().st_size > 10_000_000
        built_at = path.stat().st_mtime_ns
        assert ensure_onnx_model(runtime.embedding_model_path()) == path
        assert path.stat().st_mtime_ns == built_at  # not rebuilt
        assert not list(path.parent.glob(".*partial"))  # the temporary file was renamed away

    @pytest.mark.slow
    def test_changed_model_files_rebuild_and_remove_the_stale_file(self, tmp_path):

        folder = _linked_copy(Path(runtime.embedding_model_path()), tmp_path / "model")
        cache = tmp_path / "cache"
        first = ensure_onnx_model(folder, cache)
        config = folder / "config.json"
        config.write_text(json.dumps(json.loads(config.read_text()), indent=1))  # same model, new bytes
        second = ensure_onnx_model(folder, cache)
        assert second != first
        assert second.is_file() and not first.exists()

    def test_unbuildable_cache_is_a_typed_error_naming_the_fix(self, tmp_path):
        blocker = tmp_path / "not-a-folder"
        blocker.write_text("a file where the cache folder should be")
        with pytest.raises(OnnxModelError, match="SOURCEBOUND_CACHE_DIR"):
            ensure_onnx_model(runtime.embedding_model_path(), blocker / "onnx")
        assert not any(blocker.parent.glob("**/*.onnx"))


@pytest.mark.integration
class TestOnnxSentenceEncoder:
    def test_vectors_match_sentence_transformers_float32(self):
        from sentence_transformers import SentenceTransformer

        reference = SentenceTransformer(runtime.embedding_model_path(), device="cpu", local_files_only=True).encode(
            TEXTS
        )
        vectors = load_encoder("packaged:all-MiniLM-L6-v2").encode(TEXTS, batch_size=3)
        assert vectors.dtype == np.float32 and vectors.shape == (len(TEXTS), runtime.DEFAULT_EMBEDDING_DIM)
        cosine = (vectors * reference).sum(axis=1) / np.linalg.norm(vectors, axis=1) / np.linalg.norm(reference, axis=1)
        assert cosine.min() >= 0.9999, cosine
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)

    def test_order_and_batch_size_do_not_change_a_vector(self):
        encoder = load_encoder("packaged:all-MiniLM-L6-v2")
        one_by_one = np.stack([encoder.encode([text])[0] for text in TEXTS])
        np.testing.assert_allclose(encoder.encode(TEXTS, batch_size=4), one_by_one, atol=1e-5)
        np.testing.assert_allclose(encoder.encode(TEXTS[::-1], batch_size=32)[::-1], one_by_one, atol=1e-5)

    def test_sessions_are_shared_per_model_and_thread_count(self):
        assert load_encoder("packaged:all-MiniLM-L6-v2", 1) is load_encoder(runtime.embedding_model_path(), 1)
        assert load_encoder("packaged:all-MiniLM-L6-v2", 2) is not load_encoder("packaged:all-MiniLM-L6-v2", 1)
