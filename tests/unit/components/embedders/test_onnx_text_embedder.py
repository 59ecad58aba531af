import asyncio
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from components.embedders.onnx_text_embedder import OnnxTextEmbedder
from components.runtime import offline as runtime

QUERIES = [
    "What is Qdrant Edge?",
    "Where is the vacation policy?",
    "how do i rotate an api key",
    "Welche Dokumente beschreiben die Zugriffsregeln?",
    "p95 latency of /search/run at 100k chunks",
    "a",
]
TYPE = "components.embedders.onnx_text_embedder.OnnxTextEmbedder"


@pytest.mark.unit
class TestOnnxTextEmbedder:
    def test_init(self):
        embedder = OnnxTextEmbedder()
        assert embedder.model == "packaged:all-MiniLM-L6-v2"
        assert (embedder.prefix, embedder.suffix, embedder.threads, embedder.precision) == ("", "", None, "float32")

    def test_init_rejects_bad_parameters(self):
        with pytest.raises(ValueError, match="model"):
            OnnxTextEmbedder(model="")
        with pytest.raises(ValueError, match="prefix"):
            OnnxTextEmbedder(prefix=None)
        with pytest.raises(ValueError, match="threads"):
            OnnxTextEmbedder(threads=0)
        with pytest.raises(ValueError, match="float32, int8"):
            OnnxTextEmbedder(precision="float16")

    def test_to_dict(self):
        data = OnnxTextEmbedder(model="/models/m", prefix="query: ", threads=2, precision="int8").to_dict()
        assert data == {
            "type": TYPE,
            "init_parameters": {
                "model": "/models/m", "prefix": "query: ", "suffix": "", "threads": 2, "precision": "int8",
            },
        }  # fmt: skip

    def test_from_dict(self):
        embedder = OnnxTextEmbedder.from_dict({"type": TYPE, "init_parameters": {"model": "/models/m", "suffix": "!"}})
        assert (embedder.model, embedder.suffix, embedder.threads, embedder.precision) == (
            "/models/m",
            "!",
            None,
            "float32",
        )

    def test_run_rejects_a_list(self):
        with pytest.raises(TypeError, match="OnnxDocumentEmbedder"):
            OnnxTextEmbedder().run(text=["not", "a", "string"])


@pytest.mark.integration
class TestOnnxTextEmbedderModel:
    def test_run_matches_sentence_transformers_float32(self):
        from sentence_transformers import SentenceTransformer

        reference = SentenceTransformer(runtime.embedding_model_path(), device="cpu", local_files_only=True)
        embedder = OnnxTextEmbedder()
        embedder.warm_up()
        for query in QUERIES:
            vector = np.asarray(embedder.run(text=query)["embedding"], dtype=np.float32)
            expected = reference.encode(query)
            cosine = float(vector @ expected / np.linalg.norm(vector) / np.linalg.norm(expected))
            assert cosine >= 0.9999, (query, cosine)
            assert len(vector) == runtime.DEFAULT_EMBEDDING_DIM

    def test_run_async_gives_the_same_vector(self):
        embedder = OnnxTextEmbedder()
        assert (
            asyncio.run(embedder.run_async(text=QUERIES[0]))["embedding"] == embedder.run(text=QUERIES[0])["embedding"]
        )

    def test_run_int8_is_close_to_float32_and_cached_beside_it(self):
        float32, int8 = OnnxTextEmbedder(), OnnxTextEmbedder(precision="int8")
        int8.warm_up()
        float32.warm_up()
        assert int8._encoder.onnx_path != float32._encoder.onnx_path
        assert int8._encoder.onnx_path.parent == float32._encoder.onnx_path.parent
        for query in QUERIES[:3]:
            a = np.asarray(float32.run(text=query)["embedding"])
            b = np.asarray(int8.run(text=query)["embedding"])
            assert len(b) == len(a) and abs(float(np.linalg.norm(b)) - 1.0) < 1e-3
            assert 0.9 < float(a @ b) < 0.9999  # near, but not the same vector: it needs its own evaluation

    def test_pipelines_take_the_query_precision_from_the_environment(self):
        from components.services.pipeline_loader import load_pipeline_dict

        for name in ("search", "query", "query_ollama", "enrich"):
            embedder = load_pipeline_dict(name, env={})["components"]["embedder"]
            assert embedder["init_parameters"]["precision"] == "float32"
            embedder = load_pipeline_dict(name, env={"SOURCEBOUND_QUERY_EMBEDDING_PRECISION": "int8"})["components"]
            assert embedder["embedder"]["init_parameters"]["precision"] == "int8"

    def test_prefix_changes_the_vector(self):
        plain = OnnxTextEmbedder().run(text="vacation policy")["embedding"]
        prefixed = OnnxTextEmbedder(prefix="query: ").run(text="vacation policy")["embedding"]
        assert plain != prefixed

    def test_pipelines_declare_the_onnx_embedders(self):
        from components.services.pipeline_loader import load_pipeline_dict

        for name in ("search", "query", "query_ollama"):
            embedder = load_pipeline_dict(name, env={})["components"]["embedder"]
            assert embedder["type"] == TYPE
            assert Path(embedder["init_parameters"]["model"]) == Path(runtime.embedding_model_path())
        assert load_pipeline_dict("indexing", env={})["components"]["embedder"]["type"] == (
            "components.embedders.onnx_document_embedder.OnnxDocumentEmbedder"
        )

    @pytest.mark.slow
    def test_serving_pipelines_embed_without_importing_torch(self, tmp_path):
        # The server builds every pipeline it serves; none of them may pull torch into the process.
        OnnxTextEmbedder().warm_up()  # the ONNX file exists in the cache before the child starts
        code = (
            "import sys, components\n"
            "from components.runtime.offline import keep_torch_out\n"
            "assert keep_torch_out()\n"  # as `python -m hayhooks_app serve` does first
            "from components.services.pipeline_loader import load_pipeline\n"
            "for name in ('search', 'query', 'query_ollama', 'indexing'):\n"
            "    pipeline = load_pipeline(name)\n"
            "    pipeline.warm_up()\n"
            "    embedder = pipeline.get_component('embedder')\n"
            "    print(name, type(embedder).__name__)\n"
            "print(len(load_pipeline('search').get_component('embedder').run(text='policy')['embedding']))\n"
            "loaded = ('torch', 'transformers', 'sentence_transformers')\n"
            "print(sorted(m for m in loaded if sys.modules.get(m) is not None))\n"
        )
        env = {**os.environ, "SOURCEBOUND_DATA_DIR": str(tmp_path)}
        result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr[-3000:]
        lines = result.stdout.strip().splitlines()
        assert lines[-2] == str(runtime.DEFAULT_EMBEDDING_DIM)
        assert lines[-1] == "[]", lines[-1]

    @pytest.mark.slow
    def test_the_server_process_maps_no_torch_library(self, tmp_path):
        from support.api_server import ApiServer

        OnnxTextEmbedder().warm_up()
        with ApiServer(tmp_path / "data") as server:
            health = server.client.get("/health").json()
            maps = Path(f"/proc/{server.process.pid}/maps").read_text()
        assert health["embedder"]["backend"] == "OnnxTextEmbedder"
        assert "onnxruntime" in maps  # the bundled sample corpus was embedded at start-up
        assert "libtorch" not in maps
