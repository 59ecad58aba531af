"""TokenBudgeter: model limits, history truncation (specification test_truncate_history_*), context fitting."""

import pytest
from haystack import Document

from components.core.errors import ModelNotAllowedError, TokenBudgetExceededError
from components.core.prompts import render_context, render_history
from components.core.text_analysis import count_tokens
from components.filters.token_budgeter import TokenBudgeter

TINY = {
    "tiny": {"context_window": 1200, "max_response": 200},
    "llama3.2": {"context_window": 8192, "max_response": 1024},
}


def _history(count: int) -> list[dict]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " + "word " * 40} for i in range(count)
    ]


def _chunk(index: int, score: float, words: int = 60) -> Document:
    return Document(
        id=f"doc-{index}:0",
        content=f"chunk {index} " + "text " * words,
        score=score,
        meta={"document_id": f"doc-{index}", "chunk_index": 0, "document_name": f"doc {index}"},
    )


@pytest.mark.unit
class TestTokenBudgeter:
    def test_init(self):
        budgeter = TokenBudgeter()
        assert budgeter.default_model == "llama3.2" and budgeter.max_context_tokens == 3000
        with pytest.raises(ModelNotAllowedError):
            TokenBudgeter(default_model="gpt-4")
        with pytest.raises(ValueError, match="context"):
            TokenBudgeter(system_prompt="no placeholder")

    def test_to_dict(self):
        data = TokenBudgeter(default_model="tiny", models=TINY).to_dict()
        assert data["type"] == "components.filters.token_budgeter.TokenBudgeter"
        assert data["init_parameters"]["models"] == TINY and data["init_parameters"]["max_history_tokens"] == 1000

    def test_from_dict(self):
        budgeter = TokenBudgeter.from_dict(
            TokenBudgeter(default_model="tiny", models=TINY, max_context_tokens=77).to_dict()
        )
        assert budgeter.default_model == "tiny" and budgeter.max_context_tokens == 77

    def test_run_reports_window_and_response(self):
        out = TokenBudgeter().run(query="How many vacation days?", documents=[_chunk(0, 0.5)])
        assert out["num_ctx"] == 8192 and out["max_response_tokens"] == 1024 and out["model"] == "llama3.2"
        assert out["context_tokens_used"] == count_tokens(render_context(out["documents"]))
        assert out["budget"]["system_tokens"] == 500  # RAG_SYSTEM_PROMPT_TOKENS is the floor of the reservation

    def test_run_model_override(self):
        out = TokenBudgeter(max_response_tokens=4096).run(query="q", documents=[], model="qwen3:8b")
        assert (out["model"], out["num_ctx"], out["max_response_tokens"]) == ("qwen3:8b", 32768, 2048)
        assert TokenBudgeter().run(query="q", documents=[], model="llama3.2:latest")["model"] == "llama3.2"
        with pytest.raises(ModelNotAllowedError):
            TokenBudgeter().run(query="q", documents=[], model="gpt-4")

    def test_truncate_history_overflow(self):
        budgeter = TokenBudgeter(max_history_tokens=150)
        history = _history(10)
        out = budgeter.run(query="q", documents=[], chat_history=history)
        kept = out["chat_history"]
        assert 0 < len(kept) < len(history)
        assert kept == history[-len(kept) :]  # only the oldest were dropped
        assert out["budget"]["history_tokens"] == count_tokens(render_history(kept)) <= 150
        assert out["budget"]["history_messages_dropped"] == len(history) - len(kept)

    def test_truncate_history_keeps_recent(self):
        history = _history(4) + [{"role": "user", "content": "and what about part-timers?"}]
        kept = TokenBudgeter(max_history_tokens=60).run(query="q", documents=[], chat_history=history)["chat_history"]
        assert kept[-1] == history[-1]
        all_kept = TokenBudgeter().run(query="q", documents=[], chat_history=history)["chat_history"]
        assert all_kept == history

    def test_truncate_history_always_keeps_the_newest_user_message(self):
        # A long reply after the newest question used to fill the budget first and push the question out.
        question = {"role": "user", "content": "How many days of leave do part-timers get in their first year?"}
        reply = {"role": "assistant", "content": "leave " * 200}
        history = [*_history(4), question, reply]
        budgeter = TokenBudgeter(max_history_tokens=60)
        kept, tokens = budgeter.truncate_history(history, 60)
        assert question in kept and reply not in kept
        assert tokens == count_tokens(render_history(kept)) <= 60
        assert kept == sorted(kept, key=history.index)  # chronological order

    def test_truncate_history_cuts_a_newest_user_message_longer_than_the_budget(self):
        long_question = {"role": "user", "content": "Explain the travel policy " + "in detail " * 100}
        kept, tokens = TokenBudgeter().truncate_history([*_history(2), long_question], 40)
        assert len(kept) == 1 and kept[0]["role"] == "user"
        assert long_question["content"].startswith(kept[0]["content"]) and kept[0]["content"]
        assert tokens == count_tokens(render_history(kept)) <= 40

    def test_truncate_history_without_budget_keeps_nothing(self):
        assert TokenBudgeter().truncate_history(_history(2), 0) == ([], 0)

    def test_history_budget_is_a_third_of_what_is_available(self):
        budgeter = TokenBudgeter(default_model="tiny", models=TINY, system_prompt_tokens=0)
        out = budgeter.run(query="q", documents=[], chat_history=_history(20))
        available = 1200 - out["budget"]["system_tokens"] - 200 - out["budget"]["query_tokens"]
        assert out["budget"]["history_budget"] == min(available // 3, 1000)
        assert out["budget"]["history_tokens"] <= available // 3

    def test_context_drops_lowest_scored_first_and_keeps_order(self):
        documents = [_chunk(0, 0.9), _chunk(1, 0.4), _chunk(2, 0.7), _chunk(3, 0.5)]
        two = count_tokens(render_context([documents[0], documents[2]]))
        out = TokenBudgeter(max_context_tokens=two).run(query="q", documents=documents)
        assert [doc.id for doc in out["documents"]] == ["doc-0:0", "doc-2:0"]
        assert out["context_tokens_used"] == two and out["budget"]["context_chunks_dropped"] == 2

    def test_context_respects_what_history_leaves(self):
        budgeter = TokenBudgeter(default_model="tiny", models=TINY, system_prompt_tokens=0, max_context_tokens=3000)
        out = budgeter.run(
            query="q", documents=[_chunk(i, 1 - i / 10, words=100) for i in range(8)], chat_history=_history(6)
        )
        budget = out["budget"]
        assert (
            budget["system_tokens"]
            + budget["query_tokens"]
            + 200
            + budget["history_tokens"]
            + out["context_tokens_used"]
            <= 1200
        )
        assert 0 < len(out["documents"]) < 8

    def test_token_budget_exceeded(self):
        budgeter = TokenBudgeter(default_model="tiny", models=TINY)
        with pytest.raises(TokenBudgetExceededError, match="exceed the 1200-token window of 'tiny'"):
            budgeter.run(query="word " * 600, documents=[])
        # The same query fits a larger window.
        assert budgeter.run(query="word " * 600, documents=[], model="llama3.2")["num_ctx"] == 8192
