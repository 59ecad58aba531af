"""
Rolling conversation summaries (docs/contract.md, "Conversations"): fold a conversation's older turns into
its summary, so the prompt carries the summary and the recent turns instead of every message.

* ``ExtractiveConversationSummarizer`` (the embedded default, no LLM, deterministic): one line per
  exchange, ``User asked: <question> Answer: <first sentence of the answer>`` (SourceId markers removed,
  each part cut to ``max_line_chars``), appended to the previous summary's lines; the oldest lines go first
  when the summary would pass ``max_summary_chars``. The same turns always give the same summary.
* ``OllamaConversationSummarizer``: the configured Ollama model rewrites the previous summary with the
  new turns (temperature 0), told to keep facts, numbers and topics, one line per topic, newest last;
  the reply is cut to ``max_summary_chars``. Ollama errors surface as the typed errors of
  :mod:`components.generators.ollama_chat`.

Both keep the newest topic on the summary's last line: the query classifier folds that line into a
follow-up's retrieval query when the raw turns are gone (``components.classifiers.query_classifier``).

Usage:

```python
from components.generators.conversation_summarizer import ExtractiveConversationSummarizer

summarizer = ExtractiveConversationSummarizer()
turns = [{"role": "user", "content": "What is the meal per diem?"}, {"role": "assistant", "content": "EUR 45."}]
summarizer.run(messages=turns)["summary"]   # 'User asked: What is the meal per diem? Answer: EUR 45.'
```
"""

from typing import Any

from haystack import component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage

from components.core.text_analysis import split_sentences, strip_source_ids
from components.generators.ollama_chat import OllamaChat, validate_ollama_settings

SUMMARY_PROMPT = """You keep the running summary of a conversation between a user and a document assistant.
Rewrite the summary so it also covers the new messages. Keep every fact, number, name and topic the user
asked about; drop greetings and filler. Write one short line per topic, the most recent topic last.
Reply with the summary only.

CURRENT SUMMARY:
{summary}

NEW MESSAGES:
{messages}"""


def _positive(name: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return value


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def keep_newest_lines(lines: list[str], max_chars: int) -> str:
    """The newest lines whose total (with newlines) fits ``max_chars``, oldest first."""
    kept: list[str] = []
    total = 0
    for line in reversed([line for line in lines if line.strip()]):
        size = len(line) + (1 if kept else 0)
        if total + size > max_chars:
            break
        kept.append(line)
        total += size
    return "\n".join(reversed(kept))


@component
class ExtractiveConversationSummarizer:
    """Deterministic summary lines, one per exchange: the question and the answer's first sentence."""

    def __init__(self, max_line_chars: int = 300, max_summary_chars: int = 1500) -> None:
        """
        :param max_line_chars: Cap on each question and each answer sentence in a line (20..2000).
        :param max_summary_chars: Cap on the whole summary; the oldest lines are dropped first (100..20000).
        :raises ValueError: On an out-of-range cap.
        """
        self.max_line_chars = _positive("max_line_chars", max_line_chars, 20)
        self.max_summary_chars = _positive("max_summary_chars", max_summary_chars, 100)

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self, max_line_chars=self.max_line_chars, max_summary_chars=self.max_summary_chars)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ExtractiveConversationSummarizer":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    def _lines(self, messages: list[dict[str, Any]]) -> list[str]:
        lines: list[str] = []
        question: str | None = None
        for message in messages:
            content = " ".join(strip_source_ids(str(message.get("content") or "")).split())
            if not content:
                continue
            if message.get("role") == "user":
                if question is not None:
                    lines.append(f"User asked: {question}")
                question = _cut(content, self.max_line_chars)
            elif message.get("role") == "assistant":
                sentences = split_sentences(content)
                answer = _cut(sentences[0] if sentences else content, self.max_line_chars)
                lines.append(f"User asked: {question} Answer: {answer}" if question else f"Answer: {answer}")
                question = None
        if question is not None:
            lines.append(f"User asked: {question}")
        return lines

    @component.output_types(summary=str)
    def run(self, messages: list[dict[str, Any]], previous_summary: str | None = None) -> dict[str, str]:
        """
        Fold turns into the summary.

        :param messages: The turns to fold, ``{"role", "content"}``, oldest first.
        :param previous_summary: The conversation's summary so far.
        :returns: ``summary``: the previous lines plus one line per exchange, newest last, within the cap.
        """
        previous = (previous_summary or "").splitlines()
        return {"summary": keep_newest_lines([*previous, *self._lines(messages)], self.max_summary_chars)}


@component
class OllamaConversationSummarizer:
    """The configured Ollama model rewrites the summary with the new turns."""

    def __init__(self, url: str, model: str, timeout: float = 120.0, max_summary_chars: int = 1500) -> None:
        """
        :param url: Ollama's base URL (the answer generator's).
        :param model: The model that summarises (the answer generator's).
        :param timeout: Seconds to wait for Ollama.
        :param max_summary_chars: Cap on the summary (100..20000); the oldest lines are dropped first.
        :raises ValueError: On a bad URL, an empty model or an out-of-range setting.
        """
        validate_ollama_settings(url, timeout)
        if not isinstance(model, str) or not model.strip():
            raise ValueError("model must name the Ollama model that summarises, e.g. llama3.2:latest")
        self.url = url
        self.model = model
        self.timeout = float(timeout)
        self.max_summary_chars = _positive("max_summary_chars", max_summary_chars, 100)
        self._chat = OllamaChat(url, self.timeout)

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(
            self, url=self.url, model=self.model, timeout=self.timeout, max_summary_chars=self.max_summary_chars
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "OllamaConversationSummarizer":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(summary=str)
    def run(self, messages: list[dict[str, Any]], previous_summary: str | None = None) -> dict[str, str]:
        """
        Fold turns into the summary with the LLM.

        :param messages: The turns to fold, ``{"role", "content"}``, oldest first.
        :param previous_summary: The conversation's summary so far.
        :returns: ``summary``: the model's summary, within the cap (newest lines kept).
        :raises RAGServiceError: A typed Ollama error (unreachable, timed out, model not pulled).
        """
        rendered = "\n".join(
            f"{message.get('role', 'user').upper()}: {strip_source_ids(str(message.get('content') or '')).strip()}"
            for message in messages
        )
        prompt = SUMMARY_PROMPT.format(summary=previous_summary or "(none yet)", messages=rendered)
        reply, _ = self._chat.chat(self.model, [ChatMessage.from_user(prompt)], {"temperature": 0.0})
        return {"summary": keep_newest_lines(reply.strip().splitlines(), self.max_summary_chars)}
