"""QueryClassifier: rules without an LLM, the classifier prompt (docs/contract.md, "Prompts") with Ollama."""

import asyncio
import logging

import pytest

from components.classifiers.query_classifier import QueryClassifier, classify_by_rules, parse_category
from components.core.prompts import QUERY_CLASSIFIER_PROMPT

HISTORY = [
    {"role": "user", "content": "How many vacation days do employees get?"},
    {"role": "assistant", "content": "27 days [SourceId: hr:2]"},
]


@pytest.mark.unit
class TestQueryClassifierRules:
    def test_init(self):
        assert QueryClassifier().backend == "rules"
        with pytest.raises(ValueError, match="backend"):
            QueryClassifier(backend="magic")

    def test_to_dict(self):
        params = QueryClassifier().to_dict()["init_parameters"]
        assert params["backend"] == "rules" and params["prompt"] == QUERY_CLASSIFIER_PROMPT

    def test_from_dict(self):
        assert QueryClassifier.from_dict(QueryClassifier(backend="ollama").to_dict()).backend == "ollama"

    @pytest.mark.parametrize(
        "query,history,expected",
        [
            ("Hello!", None, "GREETING"),
            ("thanks for the help", HISTORY, "GREETING"),
            ("How do I request parental leave?", None, "PROCEDURAL"),
            ("What are the steps to report an incident?", None, "PROCEDURAL"),
            ("How many vacation days do employees get?", None, "FACTUAL"),
            ("hi, what is the learning budget?", None, "FACTUAL"),
            ("what about part-timers?", HISTORY, "CLARIFICATION"),
            ("Does that apply to contractors?", HISTORY, "CLARIFICATION"),
            ("what about part-timers?", None, "FACTUAL"),
        ],
    )
    def test_rules(self, query, history, expected):
        assert classify_by_rules(query, history).value == expected

    def test_run_folds_last_user_turn_into_retrieval_query(self):
        out = QueryClassifier().run(query="what about part-timers?", chat_history=HISTORY)
        assert out == {
            "query_type": "CLARIFICATION",
            "retrieval_query": "How many vacation days do employees get? what about part-timers?",
        }
        assert QueryClassifier().run(query="Hello!")["retrieval_query"] == "Hello!"

    def test_without_a_user_turn_a_follow_up_folds_the_summarys_last_line(self):
        # A server-side conversation whose raw turns are gone: only its summary is history.
        summary = {
            "role": "system",
            "content": "Summary of the earlier conversation:\nUser asked: How many leave days?\n"
            "User asked: What is the meal per diem? Answer: EUR 45 at home and EUR 60 abroad.",
        }
        out = QueryClassifier().run(query="And abroad?", chat_history=[summary])
        assert out == {
            "query_type": "CLARIFICATION",
            "retrieval_query": "User asked: What is the meal per diem? Answer: EUR 45 at home and EUR 60 abroad. "
            "And abroad?",
        }
        # A user turn, when there is one, is still what a follow-up refers to.
        out = QueryClassifier().run(query="And abroad?", chat_history=[summary, *HISTORY])
        assert out["retrieval_query"] == "How many vacation days do employees get? And abroad?"

    def test_parse_category(self):
        assert parse_category("PROCEDURAL").value == "PROCEDURAL"
        assert parse_category("Category: clarification.").value == "CLARIFICATION"
        assert parse_category("no idea") is None


@pytest.mark.integration
@pytest.mark.ollama
class TestQueryClassifierOllama:
    def test_run_with_the_specification_prompt(self, ollama_target):
        classifier = QueryClassifier(backend="ollama", model=ollama_target.model, url=ollama_target.url)
        out = classifier.run(query="How many vacation days do employees get?")
        assert out["query_type"] in {"FACTUAL", "PROCEDURAL", "CLARIFICATION", "GREETING"}
        double = ollama_target.require_double()
        sent = double.chat_requests("classify")[-1]["messages"][-1]["content"]
        assert sent == QUERY_CLASSIFIER_PROMPT.format(query="How many vacation days do employees get?")

    def test_run_llm_clarification_folds_history(self, ollama_target):
        double = ollama_target.require_double()
        double.category = "CLARIFICATION"
        out = QueryClassifier(backend="ollama", url=ollama_target.url).run(query="and managers?", chat_history=HISTORY)
        assert out["retrieval_query"] == "How many vacation days do employees get? and managers?"
        assert len(double.chat_requests("classify")[-1]["messages"]) == 3  # two history turns + the prompt

    def test_run_unparsable_reply_uses_rules(self, ollama_target, caplog):
        double = ollama_target.require_double()
        double.category = "hmm, hard to say"
        with caplog.at_level(logging.WARNING, logger="components.classifiers.query_classifier"):
            out = QueryClassifier(backend="ollama", url=ollama_target.url).run(query="How do I book travel?")
        assert out["query_type"] == "PROCEDURAL" and "Unparsable query category" in caplog.text

    def test_run_async(self, ollama_target):
        double = ollama_target.require_double()
        double.category = "GREETING"
        out = asyncio.run(QueryClassifier(backend="ollama", url=ollama_target.url).run_async(query="hey"))
        assert out["query_type"] == "GREETING"
