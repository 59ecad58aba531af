"""OllamaAnswerer against the Ollama test double (or a real Ollama when OLLAMA_BASE_URL answers)."""

import asyncio
import time

import pytest
from haystack.dataclasses import ChatMessage
from support.ollama_double import OllamaDouble, ollama_target  # noqa: F401  (fixture)
from support.query_corpus import chunk

from components.builders.source_id_prompt_builder import SourceIdPromptBuilder
from components.core.errors import LLMConnectionError, LLMTimeoutError, ModelNotAllowedError, ModelUnavailableError
from components.generators.ollama_answerer import OllamaAnswerer

pytestmark = [pytest.mark.integration, pytest.mark.ollama]


def _messages() -> list[ChatMessage]:
    documents = [
        chunk(
            "acme-hr-handbook",
            2,
            "Full-time employees receive 27 days of paid annual leave.",
            tenant_id="acme",
            tags=["hr"],
        )
    ]
    return SourceIdPromptBuilder().run(query="How many days of annual leave do employees get?", documents=documents)[
        "messages"
    ]


class TestOllamaAnswerer:
    def test_init(self):
        answerer = OllamaAnswerer()
        assert (answerer.model, answerer.temperature, answerer.timeout) == ("llama3.2", 0.1, 30.0)
        with pytest.raises(ModelNotAllowedError):
            OllamaAnswerer(model="gpt-4")
        with pytest.raises(ValueError, match="url"):
            OllamaAnswerer(url="localhost:11434")

    def test_to_dict(self):
        params = OllamaAnswerer(url="http://ollama:11434", timeout=12).to_dict()["init_parameters"]
        assert params["url"] == "http://ollama:11434" and params["timeout"] == 12.0 and params["models"]["qwen3:8b"]

    def test_from_dict(self):
        answerer = OllamaAnswerer.from_dict(OllamaAnswerer(model="qwen3:8b", seed=7).to_dict())
        assert answerer.model == "qwen3:8b" and answerer.seed == 7

    def test_run_sends_temperature_num_ctx_and_num_predict(self, ollama_target):
        answerer = OllamaAnswerer(model=ollama_target.model, url=ollama_target.url)
        out = answerer.run(messages=_messages(), num_ctx=8192, max_response_tokens=256)
        assert out["answer"] and out["model_used"] == ollama_target.model and out["generation_time_ms"] > 0
        double = ollama_target.require_double()
        assert "[SourceId: acme-hr-handbook:2]" in out["answer"]
        sent = double.chat_requests("answer")[-1]
        assert sent["options"] == {"temperature": 0.1, "num_ctx": 8192, "num_predict": 256}
        assert sent["model"] == "llama3.2" and sent["stream"] is False

    def test_run_streaming(self, ollama_target):
        pieces = []
        out = OllamaAnswerer(model=ollama_target.model, url=ollama_target.url).run(
            messages=_messages(), streaming_callback=lambda chunk: pieces.append(chunk.content)
        )
        assert "".join(pieces).strip() == out["answer"]
        assert len(pieces) > 1

    def test_run_async(self, ollama_target):
        out = asyncio.run(
            OllamaAnswerer(model=ollama_target.model, url=ollama_target.url).run_async(messages=_messages())
        )
        assert out["answer"] and out["model_used"] == ollama_target.model

    def test_validate_model_not_allowed(self, ollama_target):
        with pytest.raises(ModelNotAllowedError, match="not in allowlist"):
            OllamaAnswerer(url=ollama_target.url).run(messages=_messages(), model="gpt-4")

    def test_validate_model_allowed_with_latest_suffix(self, ollama_target):
        double = ollama_target.require_double()
        double.models = ["llama3.2:latest"]
        out = OllamaAnswerer(url=ollama_target.url).run(messages=_messages(), model="llama3.2")
        assert out["model_used"] == "llama3.2"
        double.models = ["llama3.2"]
        assert (
            OllamaAnswerer(url=ollama_target.url).run(messages=_messages(), model="llama3.2:latest")["model_used"]
            == "llama3.2"
        )

    def test_model_not_pulled(self, ollama_target):
        double = ollama_target.require_double()
        double.models = ["llama3.2:latest"]
        with pytest.raises(ModelUnavailableError, match="Run: ollama pull qwen3:8b"):
            OllamaAnswerer(url=ollama_target.url).run(messages=_messages(), model="qwen3:8b")
        assert not double.chat_requests("answer")

    def test_model_vanishing_after_the_check_is_unavailable_too(self, ollama_target):
        double = ollama_target.require_double()
        answerer = OllamaAnswerer(url=ollama_target.url, check_availability=False)
        double.models = []
        with pytest.raises(ModelUnavailableError, match="ollama pull llama3.2"):
            answerer.run(messages=_messages())

    def test_connection_refused(self):
        double = OllamaDouble().start()
        url = double.url
        double.go_down()
        started = time.perf_counter()
        with pytest.raises(LLMConnectionError, match="Cannot connect to Ollama"):
            OllamaAnswerer(url=url).run(messages=_messages())
        assert time.perf_counter() - started < 1.0

    def test_timeout(self, ollama_target):
        double = ollama_target.require_double()
        double.delay = 1.5
        with pytest.raises(LLMTimeoutError, match="did not answer within 0.5 s"):
            OllamaAnswerer(url=ollama_target.url, timeout=0.5).run(messages=_messages())

    def test_health(self, ollama_target):
        health = OllamaAnswerer(model=ollama_target.model, url=ollama_target.url).health()
        assert health["reachable"] is True and health["backend"] == "ollama" and health["model_available"] is True
        if ollama_target.double:
            ollama_target.double.go_down()
            assert OllamaAnswerer(url=ollama_target.url).health()["reachable"] is False

    def test_reasoning_is_stripped(self, ollama_target):
        double = ollama_target.require_double()
        double.reply = "<think>the user wants days</think>Employees get 27 days. [SourceId: acme-hr-handbook:2]"
        out = OllamaAnswerer(url=ollama_target.url).run(messages=_messages())
        assert out["answer"] == "Employees get 27 days. [SourceId: acme-hr-handbook:2]"
