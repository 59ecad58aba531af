"""The query-side YAML pipelines: they load, declare their inputs, carry the contract's prompts
(docs/contract.md, "Prompts") and environment variables (docs/configuration.md), and round-trip through
Haystack serialisation."""

import re

import pytest
from haystack import Pipeline

from components.core.prompts import (
    CONFIDENCE_PROMPT,
    CONTEXT_CHUNK_TEMPLATE,
    QUERY_CLASSIFIER_PROMPT,
    RAG_SYSTEM_PROMPT,
)
from components.services.pipeline_loader import ALLOWED_MODULES, PIPELINES_DIR, load_pipeline, load_pipeline_dict

pytestmark = pytest.mark.integration

SPEC_VARIABLES = {
    "query": {
        "RAG_MAX_CONTEXT_TOKENS",
        "RAG_MAX_HISTORY_TOKENS",
        "RAG_MAX_RESPONSE_TOKENS",
        "RAG_SYSTEM_PROMPT_TOKENS",
        "RAG_MIN_SIMILARITY_SCORE",
        "RAG_MAX_CHUNKS_PER_DOC",
        "RAG_TOTAL_CONTEXT_CHUNKS",
        "RAG_CHUNK_OVERLAP_THRESHOLD",
        "RAG_CONFIDENCE_THRESHOLD",
        "SOURCEBOUND_DATA_DIR",
    },
}
SPEC_VARIABLES["query_ollama"] = SPEC_VARIABLES["query"] | {
    "OLLAMA_BASE_URL",
    "CHAT_MODEL",
    "RAG_TEMPERATURE",
    "RAG_TIMEOUT_SECONDS",
}
SPEC_VARIABLES["search"] = {"SOURCEBOUND_DATA_DIR", "RAG_TOTAL_CONTEXT_CHUNKS"}


@pytest.fixture
def env(tmp_path):
    return {"SOURCEBOUND_DATA_DIR": str(tmp_path)}


@pytest.mark.parametrize("name", ["query", "query_ollama", "search"])
def test_environment_variables_appear_where_they_apply(name):
    text = (PIPELINES_DIR / f"{name}.yml").read_text(encoding="utf-8")
    assert SPEC_VARIABLES[name] <= set(re.findall(r"\$\{([A-Z_]+):-", text))


@pytest.mark.parametrize("name", ["query", "query_ollama", "search"])
def test_loads_declares_inputs_and_round_trips(name, env):
    pipeline = load_pipeline(name, env=env)
    inputs = pipeline.metadata["inputs"]
    assert {"query", "tenant_id", "user_tags", "user_id", "project_id", "filters"} <= set(inputs)
    assert pipeline.metadata["outputs"]["response"].endswith(".response")
    again = Pipeline.from_dict(pipeline.to_dict(), allowed_modules=ALLOWED_MODULES)
    assert again.to_dict() == pipeline.to_dict()


@pytest.mark.parametrize("name", ["query", "query_ollama"])
def test_prompts_are_the_specifications(name, env):
    pipeline = load_pipeline(name, env=env)
    for component_name in ("budgeter", "prompt_builder"):
        component = pipeline.get_component(component_name)
        assert component.system_prompt == RAG_SYSTEM_PROMPT and component.chunk_template == CONTEXT_CHUNK_TEMPLATE
    if name == "query_ollama":
        assert pipeline.get_component("rater").prompt == CONFIDENCE_PROMPT
        assert pipeline.get_component("classifier").prompt == QUERY_CLASSIFIER_PROMPT


def test_environment_overrides_reach_the_components(env):
    pipeline = load_pipeline(
        "query_ollama",
        env={
            **env,
            "RAG_MIN_SIMILARITY_SCORE": "0.45",
            "RAG_MAX_CHUNKS_PER_DOC": "2",
            "RAG_CONFIDENCE_THRESHOLD": "70",
            "RAG_TEMPERATURE": "0.3",
            "RAG_TIMEOUT_SECONDS": "12",
            "CHAT_MODEL": "qwen3:8b",
            "OLLAMA_BASE_URL": "http://ollama:11434",
            "RAG_MAX_CONTEXT_TOKENS": "2000",
            "RAG_CHUNK_OVERLAP_THRESHOLD": "0.8",
            "RAG_TOTAL_CONTEXT_CHUNKS": "4",
        },
    )
    assert pipeline.get_component("similarity").min_similarity == 0.45
    assert pipeline.get_component("limiter").max_chunks_per_doc == 2 and pipeline.get_component("limiter").top_k == 4
    assert pipeline.get_component("planner").default_context_chunks == 4
    assert pipeline.get_component("router").confidence_threshold == 70
    answerer = pipeline.get_component("answerer")
    assert (answerer.temperature, answerer.timeout, answerer.model, answerer.url) == (
        0.3,
        12.0,
        "qwen3:8b",
        "http://ollama:11434",
    )
    assert pipeline.get_component("budgeter").max_context_tokens == 2000
    assert pipeline.get_component("dedup").threshold == 0.8
    assert pipeline.get_component("budgeter").default_model == "qwen3:8b"


def test_reader_embeds_sentences_with_the_query_embedders_model(env):
    """The reading step of query.yml embeds sentences with the query embedder's model settings: one loaded model,
    and a change of embedding backend made in the YAML applies to both or the test says so."""
    data = load_pipeline_dict("query", env=env)["components"]
    query_embedder, sentence_embedder = data["embedder"], data["sentence_embedder"]
    shared = (
        "model",
        "local_files_only",
        "model_kwargs",
        "device",
        "backend",
        "trust_remote_code",
        "truncate_dim",
        "revision",
    )
    assert {key: query_embedder["init_parameters"].get(key) for key in shared} == {
        key: sentence_embedder["init_parameters"].get(key) for key in shared
    }
    # The same embedder family (e.g. SentenceTransformers{Text,Document}Embedder): only text vs document differs.
    family = re.compile(r"(text|document)_embedder|(Text|Document)Embedder")
    assert family.sub("", query_embedder["type"]) == family.sub("", sentence_embedder["type"])
    pipeline = load_pipeline("query", env=env)
    pipeline.warm_up()
    query_model, sentence_model = pipeline.get_component("embedder"), pipeline.get_component("sentence_embedder")
    # One ONNX Runtime session for equal settings: one loaded model, and sentence vectors comparable to the query's.
    assert query_model._encoder is sentence_model._encoder
    receivers = {(sender, receiver) for sender, receiver in pipeline.graph.edges()}
    assert {("embedder", "answerer"), ("sentence_embedder", "answerer"), ("answerer", "confidence")} <= receivers
    # The Ollama pipeline keeps its own answerer; its sentence embedder serves the answer verifier, with the same
    # model as its query embedder (docs/contract.md, "Answers").
    ollama = load_pipeline_dict("query_ollama", env=env)["components"]
    assert ollama["answerer"]["type"].endswith("OllamaAnswerer") and "verifier" in ollama
    assert ollama["sentence_embedder"]["init_parameters"]["model"] == ollama["embedder"]["init_parameters"]["model"]
    assert ollama["verifier"]["init_parameters"]["model"] == ollama["embedder"]["init_parameters"]["model"]


def test_indexing_stores_the_sentences_the_reader_reads(env):
    """indexing.yml's `sentence_vectors` writes what query.yml's reading step reads: the same file, model and
    sentence rule (docs/reader.md, "Cost"); a drift would silently send every request back to embedding."""
    query = load_pipeline_dict("query", env=env)["components"]
    indexing = load_pipeline_dict("indexing", env=env)["components"]["sentence_vectors"]["init_parameters"]
    reader_side = query["sentence_embedder"]["init_parameters"]
    assert indexing["vector_cache_path"] == reader_side["vector_cache_path"]
    assert indexing["vector_cache_path"].startswith(env["SOURCEBOUND_DATA_DIR"])
    assert indexing["model"] == reader_side["model"]
    assert indexing["min_sentence_words"] == query["sentences"]["init_parameters"]["min_sentence_words"]
    assert indexing.get("threads") == reader_side.get("threads")
