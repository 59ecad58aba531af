"""Conversation summarisers: the deterministic extractive one and the Ollama one (against the Ollama double)."""

import pytest
from support.ollama_double import OllamaDouble

from components.core.errors import LLMConnectionError
from components.generators.conversation_summarizer import (
    SUMMARY_PROMPT,
    ExtractiveConversationSummarizer,
    OllamaConversationSummarizer,
    keep_newest_lines,
)

TURNS = [
    {"role": "user", "content": "What is the daily meal per diem within the Netherlands?"},
    {
        "role": "assistant",
        "content": "You may claim up to EUR 45 within the Netherlands and EUR 60 abroad. "
        "[SourceId: acme-expense-policy:2] Alcohol is not reimbursed.",
    },
]


@pytest.mark.unit
class TestExtractiveConversationSummarizer:
    def test_one_line_per_exchange_without_source_ids(self):
        summary = ExtractiveConversationSummarizer().run(messages=TURNS)["summary"]
        assert summary == (
            "User asked: What is the daily meal per diem within the Netherlands? "
            "Answer: You may claim up to EUR 45 within the Netherlands and EUR 60 abroad."
        )

    def test_rolls_onto_the_previous_summary_newest_last(self):
        summarizer = ExtractiveConversationSummarizer()
        first = summarizer.run(messages=TURNS)["summary"]
        follow_up = [{"role": "user", "content": "And abroad?"}, {"role": "assistant", "content": "EUR 60."}]
        second = summarizer.run(messages=follow_up, previous_summary=first)["summary"]
        assert second.splitlines() == [first, "User asked: And abroad? Answer: EUR 60."]

    def test_is_deterministic(self):
        outputs = {ExtractiveConversationSummarizer().run(messages=TURNS)["summary"] for _ in range(3)}
        assert len(outputs) == 1

    def test_caps_lines_and_drops_the_oldest_lines_first(self):
        summarizer = ExtractiveConversationSummarizer(max_line_chars=20, max_summary_chars=100)
        summary = summarizer.run(messages=TURNS)["summary"]
        assert summary == "User asked: What is the daily... Answer: You may claim up..."  # 20 characters each
        many = [{"role": "user", "content": f"question {number}"} for number in range(20)]
        rolled = summarizer.run(messages=many)["summary"]
        assert len(rolled) <= 100 and rolled.splitlines()[-1] == "User asked: question 19"

    def test_unpaired_messages(self):
        messages = [{"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Thanks"}]
        assert ExtractiveConversationSummarizer().run(messages=messages)["summary"] == (
            "Answer: Hello.\nUser asked: Thanks"
        )

    def test_invalid_caps_and_round_trip(self):
        with pytest.raises(ValueError, match="max_summary_chars"):
            ExtractiveConversationSummarizer(max_summary_chars=10)
        summarizer = ExtractiveConversationSummarizer(max_line_chars=50, max_summary_chars=500)
        restored = ExtractiveConversationSummarizer.from_dict(summarizer.to_dict())
        assert restored.run(messages=TURNS) == summarizer.run(messages=TURNS)

    def test_keep_newest_lines(self):
        assert keep_newest_lines(["aaaa", "", "bbbb", "cccc"], 9) == "bbbb\ncccc"


@pytest.mark.unit
class TestOllamaConversationSummarizer:
    def test_the_model_rewrites_the_summary(self):
        with OllamaDouble(models=["llama3.2:latest"]) as ollama:
            ollama.reply = "Meal per diem: EUR 45 in the Netherlands.\nAsked about abroad: EUR 60."
            summarizer = OllamaConversationSummarizer(url=ollama.url, model="llama3.2:latest", timeout=5)
            out = summarizer.run(messages=TURNS, previous_summary="Earlier: greeted.")
            assert out["summary"] == "Meal per diem: EUR 45 in the Netherlands.\nAsked about abroad: EUR 60."
            prompt = ollama.requests[-1]["json"]["messages"][-1]["content"]
        assert prompt.startswith(SUMMARY_PROMPT.split("\n")[0])
        assert "Earlier: greeted." in prompt and "USER: What is the daily meal per diem" in prompt
        assert "[SourceId" not in prompt

    def test_a_long_reply_keeps_its_newest_lines(self):
        with OllamaDouble(models=["llama3.2:latest"]) as ollama:
            ollama.reply = "\n".join(f"topic {number} " + "x" * 40 for number in range(10))
            summarizer = OllamaConversationSummarizer(ollama.url, "llama3.2:latest", 5, max_summary_chars=120)
            summary = summarizer.run(messages=TURNS)["summary"]
        assert len(summary) <= 120 and summary.splitlines()[-1].startswith("topic 9")

    def test_ollama_down_is_a_typed_error(self):
        with OllamaDouble(models=["llama3.2:latest"]) as ollama:
            summarizer = OllamaConversationSummarizer(ollama.url, "llama3.2:latest", 2)
            ollama.go_down()
            with pytest.raises(LLMConnectionError):
                summarizer.run(messages=TURNS)

    def test_settings_are_validated_and_serialised(self):
        with pytest.raises(ValueError, match="model"):
            OllamaConversationSummarizer("http://127.0.0.1:11434", " ")
        summarizer = OllamaConversationSummarizer("http://127.0.0.1:11434", "llama3.2", 30)
        assert summarizer.to_dict()["init_parameters"] == {
            "url": "http://127.0.0.1:11434",
            "model": "llama3.2",
            "timeout": 30.0,
            "max_summary_chars": 1500,
        }
