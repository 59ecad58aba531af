import os
import subprocess
import sys

import pytest

from components.runtime import offline as runtime


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

    def test_pipelines_embed_queries_and_documents_in_float32_on_onnx(self):
        # Stored and query vectors stay comparable: no dtype override anywhere (docs/embeddings.md).
        from components.services.pipeline_loader import load_pipeline_dict

        for name in ("search", "query", "query_ollama", "indexing"):
            embedder = load_pipeline_dict(name, env={})["components"]["embedder"]
            assert embedder["type"].startswith("components.embedders.onnx_"), (name, embedder["type"])
            assert "model_kwargs" not in embedder["init_parameters"]

    def test_keep_torch_out_blocks_the_import_unless_allowed(self):
        # In a child: the block lasts for the process, and this one may need torch later.
        code = (
            "import importlib.util, os, sys\n"
            "from components.runtime import offline as runtime\n"
            "os.environ['SOURCEBOUND_ALLOW_TORCH'] = '1'\n"
            "assert runtime.keep_torch_out() is False and 'torch' not in sys.modules\n"
            "del os.environ['SOURCEBOUND_ALLOW_TORCH']\n"
            "assert runtime.keep_torch_out() is True\n"
            "assert importlib.util.find_spec('torch') is None\n"
            "try:\n"
            "    import torch\n"
            "except ImportError:\n"
            "    print('blocked')\n"
        )
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "blocked"


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

    def test_importing_components_has_no_side_effects(self, tmp_path):
        # Every module under components/, imported in a clean interpreter: no variable set, no file written.
        code = (
            "import importlib, os, pkgutil, components;"
            "before = dict(os.environ);"
            "[importlib.import_module(m.name) for m in pkgutil.walk_packages(components.__path__, 'components.')];"
            "changed = {k for k in set(os.environ) | set(before) if os.environ.get(k) != before.get(k)};"
            "assert not changed, changed;"
            "print('ok')"
        )
        env = {k: v for k, v in os.environ.items() if k not in {"TIKTOKEN_CACHE_DIR", "HF_HUB_OFFLINE"}}
        env["SOURCEBOUND_CACHE_DIR"] = str(tmp_path / "cache")
        result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "ok"
        assert not (tmp_path / "cache").exists()

    def test_fresh_process_is_offline_after_the_entry_point_setup(self, tmp_path):
        # A clean interpreter with a fresh cache dir: tiktoken must resolve from the package.
        code = (
            "from components.runtime.offline import configure_offline; configure_offline();"
            "import os, tiktoken;"
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
