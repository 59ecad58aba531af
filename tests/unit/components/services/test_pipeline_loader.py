"""The YAML loader's references: ``${NAME:-default}``, nested defaults, and the specifications' RAG_* settings."""

import pytest

from components.runtime.environment import ConfigError
from components.services.pipeline_loader import (
    PipelineConfigError,
    load_pipeline,
    load_pipeline_dict,
    resolve_references,
)


@pytest.mark.unit
class TestResolveReferences:
    def test_plain_and_defaulted_references(self):
        assert resolve_references("a: ${X:-1} b: ${Y:-} c: ${Z}", {"Z": "3"}) == "a: 1 b:  c: 3"
        assert resolve_references("a: ${X:-1}", {"X": "9"}) == "a: 9"
        assert resolve_references("a: ${X:-1}", {"X": ""}) == "a: 1"  # blank counts as unset

    def test_a_default_may_be_another_reference(self):
        text = "k: ${RAG_TOP_K:-${RAG_TOTAL_CONTEXT_CHUNKS:-5}}  # note"
        assert resolve_references(text, {}) == "k: 5  # note"
        assert resolve_references(text, {"RAG_TOTAL_CONTEXT_CHUNKS": "7"}) == "k: 7  # note"
        assert resolve_references(text, {"RAG_TOP_K": "3", "RAG_TOTAL_CONTEXT_CHUNKS": "7"}) == "k: 3  # note"
        # A default is only resolved when it is used: its own required variable is not needed then.
        assert resolve_references("a: ${X:-${NEEDED}}", {"X": "1"}) == "a: 1"

    def test_what_is_not_a_reference_stays_and_missing_variables_are_named(self):
        assert resolve_references("a: ${Z:w} $${ ${", {}) == "a: ${Z:w} $${ ${"
        with pytest.raises(PipelineConfigError, match="NEEDED"):
            resolve_references("a: ${NEEDED}", {})
        with pytest.raises(PipelineConfigError, match="unterminated"):
            resolve_references("a: ${X:-${Y:-1}", {})


@pytest.mark.unit
class TestSpecificationSettingsInTheYaml:
    def test_rag_top_k_and_raw_candidates_land_on_their_parameters(self):
        search = load_pipeline_dict("search", env={"RAG_TOP_K": "3", "RAG_TOP_K_RAW": "50"})["components"]
        assert search["planner"]["init_parameters"]["default_context_chunks"] == 3
        assert search["planner"]["init_parameters"]["raw_candidates"] == 50
        assert search["selector"]["init_parameters"]["top_k"] == 3
        fallback = load_pipeline_dict("search", env={"RAG_TOTAL_CONTEXT_CHUNKS": "8"})["components"]
        assert fallback["planner"]["init_parameters"]["default_context_chunks"] == 8
        for name in ("query", "query_ollama", "enrich"):
            planner = load_pipeline_dict(name, env={"RAG_TOP_K_RAW": "40"})["components"]["planner"]
            assert planner["init_parameters"]["raw_candidates"] == 40, name
            assert load_pipeline_dict(name, env={})["components"]["planner"]["init_parameters"]["raw_candidates"] == 0

    def test_a_refused_setting_stops_the_load(self):
        with pytest.raises(ConfigError, match="RAG_EMBEDDING_BACKEND='ollama' is not supported"):
            load_pipeline("search", env={"RAG_EMBEDDING_BACKEND": "ollama"})
