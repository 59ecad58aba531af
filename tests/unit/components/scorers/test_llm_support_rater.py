"""LLMSupportRater: CONFIDENCE_PROMPT (docs/contract.md, "Prompts") via Ollama."""

import asyncio
import logging

import pytest
from support.ollama_double import OllamaDouble

from components.core.errors import LLMConnectionError, ModelNotAllowedError
from components.core.prompts import CONFIDENCE_PROMPT
from components.scorers.llm_support_rater import LLMSupportRater, parse_rating

CONTEXT = "[SourceId: hr:2]\n---\nEmployees receive 27 days of paid annual leave.\n---"


@pytest.mark.unit
class TestParseRating:
    @pytest.mark.parametrize(
        "reply,expected",
        [
            ("85", 85),
            (" 90\n", 90),
            ("Rating: 72/100", 72),
            ("100", 100),
            ("0", 0),
            ("85%", 85),
            ("<think>hmm 12</think>64", 64),
            ("I would rate this 77 out of 100.", 77),
            ("88.6", 89),
        ],
    )
    def test_parsable(self, reply, expected):
        assert parse_rating(reply) == expected

    @pytest.mark.parametrize("reply", ["", "high", "eighty-five", "150", "-5", "N/A"])
    def test_unparsable(self, reply):
        assert parse_rating(reply) is None


@pytest.mark.integration
@pytest.mark.ollama
class TestLLMSupportRater:
    def test_init(self):
        rater = LLMSupportRater()
        assert rater.prompt == CONFIDENCE_PROMPT and rater.temperature == 0.0
        with pytest.raises(ValueError, match="answer"):
            LLMSupportRater(prompt="Rate {query}")
        with pytest.raises(ModelNotAllowedError):
            LLMSupportRater(model="gpt-4")

    def test_to_dict(self):
        params = LLMSupportRater(url="http://o:11434").to_dict()["init_parameters"]
        assert params["url"] == "http://o:11434" and params["prompt"] == CONFIDENCE_PROMPT

    def test_from_dict(self):
        assert LLMSupportRater.from_dict(LLMSupportRater(timeout=5).to_dict()).timeout == 5.0

    def test_run_rates_with_the_specification_prompt(self, ollama_target):
        rater = LLMSupportRater(model=ollama_target.model, url=ollama_target.url)
        score = rater.run(query="How many days?", answer="27 days [SourceId: hr:2]", context=CONTEXT, num_ctx=8192)[
            "llm_score"
        ]
        assert score is None or 0 <= score <= 100
        double = ollama_target.require_double()
        assert score == 90
        prompt = double.chat_requests("rating")[-1]["messages"][-1]["content"]
        assert prompt == CONFIDENCE_PROMPT.format(
            context_summary=CONTEXT, query="How many days?", answer="27 days [SourceId: hr:2]"
        )

    def test_run_unparsable_rating_is_logged_and_none(self, ollama_target, caplog):
        double = ollama_target.require_double()
        double.rating = "I am very confident!"
        with caplog.at_level(logging.WARNING, logger="components.scorers.llm_support_rater"):
            out = LLMSupportRater(url=ollama_target.url).run(query="q", answer="a", context=CONTEXT)
        assert out == {"llm_score": None}
        assert "Unparsable support rating" in caplog.text

    def test_run_without_context_makes_no_request(self, ollama_target):
        double = ollama_target.require_double()
        assert LLMSupportRater(url=ollama_target.url).run(query="q", answer="a", context="  ") == {"llm_score": None}
        assert not double.chat_requests("rating")

    def test_run_async(self, ollama_target):
        double = ollama_target.require_double()
        double.rating = "42"
        out = asyncio.run(LLMSupportRater(url=ollama_target.url).run_async(query="q", answer="a", context=CONTEXT))
        assert out == {"llm_score": 42}

    def test_connection_failure_raises(self):
        double = OllamaDouble().start()
        url = double.url
        double.go_down()
        with pytest.raises(LLMConnectionError):
            LLMSupportRater(url=url).run(query="q", answer="a", context=CONTEXT)
