import os
import subprocess
import sys

import pytest

from components.core import runtime


@pytest.mark.unit
class TestConfigureOffline:
    def test_sets_offline_and_telemetry_switches(self):
        runtime.configure_offline()
        assert os.environ["HF_HUB_OFFLINE"] == "1"
        assert os.environ["HAYSTACK_TELEMETRY_ENABLED"] == "False"
        assert os.environ["RAGAS_DO_NOT_TRACK"] == "true"

    def test_tiktoken_cache_lives_in_our_cache_dir(self, tmp_path, monkeypatch):
        monkeypatch.setenv("SOURCEBOUND_CACHE_DIR", str(tmp_path))
        target = runtime.install_tiktoken_encodings()
        assert target == tmp_path / "tiktoken"
        assert os.environ["TIKTOKEN_CACHE_DIR"] == str(target)
        assert len(list(target.iterdir())) == len(runtime.TIKTOKEN_ENCODING_URLS)

    def test_rejects_zero_torch_threads(self):
        with pytest.raises(ValueError, match="thread count"):
            runtime.set_torch_threads(0)

    def test_resolve_model_reference_maps_hub_name_to_package(self):
        path = runtime.resolve_model_reference("sentence-transformers/all-MiniLM-L6-v2")
        assert os.path.isdir(path)
        assert runtime.resolve_model_reference("/some/local/model") == "/some/local/model"

    def test_query_embedding_dtype_follows_the_cpu_flags(self):
        bf16 = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 avx512_vnni\n"
        amx = "flags\t\t: fpu avx512f amx_tile amx_bf16\n"
        plain = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_vnni\nbugs\t\t: avx512_bf16\n"
        assert runtime.query_embedding_dtype(bf16) == "bfloat16"
        assert runtime.query_embedding_dtype(amx) == "bfloat16"
        assert runtime.query_embedding_dtype(plain) == "float32"  # only the flags line counts
        assert runtime.query_embedding_dtype("") == "float32"

    def test_pipelines_embed_queries_in_the_detected_dtype_unless_configured(self):
        from components.services.pipeline_loader import load_pipeline_dict

        for name in ("search", "query", "query_ollama"):
            detected = load_pipeline_dict(name, env={})["components"]["embedder"]["init_parameters"]["model_kwargs"]
            assert detected == {"dtype": runtime.query_embedding_dtype()}
            chosen = load_pipeline_dict(name, env={"SOURCEBOUND_QUERY_EMBEDDING_DTYPE": "float32"})
            assert chosen["components"]["embedder"]["init_parameters"]["model_kwargs"] == {"dtype": "float32"}
        indexing = load_pipeline_dict("indexing", env={})["components"]["embedder"]["init_parameters"]
        assert "model_kwargs" not in indexing  # documents are embedded in float32


@pytest.mark.integration
class TestOfflineLoading:
    def test_encodings_load_without_network(self, no_network, tmp_path, monkeypatch):
        monkeypatch.setenv("SOURCEBOUND_CACHE_DIR", str(tmp_path))
        runtime.install_tiktoken_encodings()
        import tiktoken

        for name in ("cl100k_base", "o200k_base"):
            encoding = tiktoken.get_encoding(name)
            tokens = encoding.encode("Grounded answers cite their sources.")
            assert encoding.decode(tokens) == "Grounded answers cite their sources."

    def test_embedder_loads_and_embeds_without_network(self, no_network):
        from haystack_integrations.components.embedders.sentence_transformers import (
            SentenceTransformersTextEmbedder,
        )

        embedder = SentenceTransformersTextEmbedder(
            model=runtime.embedding_model_path(), local_files_only=True, progress_bar=False
        )
        embedder.warm_up()
        embedding = embedder.run(text="Where is the vacation policy?")["embedding"]
        assert len(embedding) == runtime.DEFAULT_EMBEDDING_DIM
        assert any(abs(value) > 1e-6 for value in embedding)

    def test_fresh_process_is_offline_after_importing_components(self, tmp_path):
        # A clean interpreter with a fresh cache dir: tiktoken must resolve from the package.
        code = (
            "import components, os, tiktoken;"
            "assert os.environ['HF_HUB_OFFLINE'] == '1';"
            "print(len(tiktoken.get_encoding('o200k_base').encode('hello world')))"
        )
        env = {k: v for k, v in os.environ.items() if k not in {"TIKTOKEN_CACHE_DIR"}}
        env["SOURCEBOUND_CACHE_DIR"] = str(tmp_path)
        # An unroutable proxy makes any accidental download fail fast instead of succeeding.
        env.update({"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"})
        result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "2"
