"""
The RAG service's exception hierarchy (docs/contract.md, "Errors").

Components raise these typed errors; they never map them to HTTP codes. The API
layer does that (400 not allowed, 413 budget, 503 unavailable/connection,
504 timeout). Every message names the fix.

```
SourceboundError                  the one base of every error sourcebound raises
└── RAGServiceError
    ├── LLMConnectionError        cannot reach Ollama
    ├── LLMTimeoutError           Ollama answered too slowly
    ├── ModelNotAllowedError      model outside the allowlist
    ├── ModelUnavailableError     model not pulled / not served by this backend
    ├── ContextError              retrieval or context formatting failed
    └── TokenBudgetExceededError  query + system prompt do not fit the model window

The other errors (invalid request, not found, a forbidden write, indexing validation, lifecycle, store, configuration,
tag directory) derive from ``SourceboundError`` too, beside the builtin or Haystack class callers already
catch (``ValueError``, ``LookupError``, ``DocumentStoreError``), so the HTTP layer maps them with
``isinstance`` (docs/contract.md, "Errors").
```
"""


class SourceboundError(Exception):
    """Base of every error sourcebound raises on purpose."""


class InsufficientStorageError(SourceboundError):
    """A store's disk lacks the space a write needs; nothing was written (HTTP 507)."""


class LifecycleError(SourceboundError, ValueError):
    """A lifecycle request is invalid (no tenant, no or malformed document ids, nothing to set)."""


class InvalidRequestError(SourceboundError, ValueError):
    """A request a service refuses as it stands (e.g. two histories at once); the message names the field (422)."""


class PermissionDeniedError(SourceboundError, PermissionError):
    """The requester's grant does not cover what was asked (HTTP 403); the message names the rule."""


class WriteForbiddenError(SourceboundError, PermissionError):
    """A write the caller may not make (docs/contract.md, "Write rule"); nothing was written."""


class NotFoundError(SourceboundError, LookupError):
    """What a request names does not exist for the requester; someone else's reads exactly like none (404)."""


class RAGServiceError(SourceboundError):
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
    "SourceboundError",
    "LifecycleError",
    "InvalidRequestError",
    "NotFoundError",
    "RAGServiceError",
    "LLMConnectionError",
    "LLMTimeoutError",
    "ModelNotAllowedError",
    "ModelUnavailableError",
    "ContextError",
    "TokenBudgetExceededError",
]
