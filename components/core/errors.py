"""
The RAG service's exception hierarchy (specification v2, "Error Handling").

Components raise these typed errors; they never map them to HTTP codes. The API
layer does that (400 not allowed, 413 budget, 503 unavailable/connection,
504 timeout). Every message names the fix.

```
RAGServiceError
├── LLMConnectionError        cannot reach Ollama
├── LLMTimeoutError           Ollama answered too slowly
├── ModelNotAllowedError      model outside the allowlist
├── ModelUnavailableError     model not pulled / not served by this backend
├── ContextError              retrieval or context formatting failed
└── TokenBudgetExceededError  query + system prompt do not fit the model window
```
"""


class RAGServiceError(Exception):
    """Base exception for RAG service errors."""


class LLMConnectionError(RAGServiceError):
    """Cannot connect to Ollama."""


class LLMTimeoutError(RAGServiceError):
    """LLM response timed out."""


class ModelNotAllowedError(RAGServiceError):
    """Requested model not in allowlist."""


class ModelUnavailableError(RAGServiceError):
    """Model not available in Ollama (or not served by the configured backend)."""


class ContextError(RAGServiceError):
    """Failed to retrieve or format context."""


class TokenBudgetExceededError(RAGServiceError):
    """Query + system prompt (+ reserved response) exceed the model's context window."""


__all__ = [
    "RAGServiceError",
    "LLMConnectionError",
    "LLMTimeoutError",
    "ModelNotAllowedError",
    "ModelUnavailableError",
    "ContextError",
    "TokenBudgetExceededError",
]
