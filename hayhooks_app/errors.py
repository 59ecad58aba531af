"""
Errors of the HTTP layer: one JSON shape, one status per kind of failure.

Every error response is ``{"error": <type>, "message": <text>}``:

| status | type | when |
|---|---|---|
| 400 | ``invalid_request`` / ``invalid_json`` / ``model_not_allowed`` | malformed body, model outside the allowlist |
| 401 | ``unauthorized`` | missing or unknown API key |
| 403 | ``forbidden`` | the key's tenant, user, tags or permissions do not cover the request |
| 404 | ``not_found`` | unknown route or pipeline |
| 413 | ``token_budget_exceeded`` / ``payload_too_large`` | query + system prompt do not fit; body over the size limit |
| 422 | ``validation_error`` | a field is missing, of the wrong type, out of bounds or unknown |
| 503 | ``llm_unavailable`` / ``model_unavailable`` | Ollama down, or the model not pulled |
| 504 | ``llm_timeout`` | the LLM answered slower than ``RAG_TIMEOUT_SECONDS`` |
| 500 | ``internal_error`` | a bug; never the answer to bad input |

``ApiError`` subclasses FastAPI's ``HTTPException`` so that it passes through
Hayhooks' run and chat routes unchanged (they turn any other exception into a
500); ``install_error_handlers`` renders it, FastAPI's validation errors and
Starlette's HTTP errors in the shape above.
"""

import logging
from collections.abc import Callable, Iterable
from functools import wraps
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from components.core.document_identity import IndexingValidationError
from components.core.errors import (
    ContextError,
    InsufficientStorageError,
    InvalidRequestError,
    LifecycleError,
    LLMConnectionError,
    LLMTimeoutError,
    ModelNotAllowedError,
    ModelUnavailableError,
    NotFoundError,
    PermissionDeniedError,
    RAGServiceError,
    TokenBudgetExceededError,
    WriteForbiddenError,
)

logger = logging.getLogger(__name__)

# Domain errors -> (status, type), most specific first; anything else stays a 500.
_DOMAIN_ERRORS: tuple[tuple[type[BaseException], int, str], ...] = (
    (ModelNotAllowedError, 400, "model_not_allowed"),
    (TokenBudgetExceededError, 413, "token_budget_exceeded"),
    (ModelUnavailableError, 503, "model_unavailable"),
    (LLMTimeoutError, 504, "llm_timeout"),
    (LLMConnectionError, 503, "llm_unavailable"),
    (IndexingValidationError, 422, "validation_error"),
    (LifecycleError, 422, "validation_error"),
    (InvalidRequestError, 422, "validation_error"),
    (WriteForbiddenError, 403, "forbidden"),
    (NotFoundError, 404, "not_found"),
    (PermissionDeniedError, 403, "forbidden"),
    (InsufficientStorageError, 507, "insufficient_storage"),
    (ContextError, 503, "context_unavailable"),
    (RAGServiceError, 503, "service_unavailable"),
)


class ApiError(HTTPException):
    """
    An error answered to the client as ``{"error": type, "message": message}`` with ``status``.

    :param status: HTTP status code.
    :param error_type: Short machine-readable type, e.g. ``validation_error``.
    :param message: Human-readable text naming the problem and, where possible, the fix.
    """

    def __init__(self, status: int, error_type: str, message: str, headers: dict[str, str] | None = None):
        super().__init__(status_code=status, detail={"error": error_type, "message": message}, headers=headers)
        self.error_type = error_type
        self.message = message

    def __str__(self) -> str:
        return f"{self.status_code} {self.error_type}: {self.message}"


def unauthorized(message: str) -> ApiError:
    return ApiError(401, "unauthorized", message, headers={"WWW-Authenticate": "Bearer"})


def forbidden(message: str) -> ApiError:
    return ApiError(403, "forbidden", message)


def validation_error(message: str) -> ApiError:
    return ApiError(422, "validation_error", message)


def _error_location(loc: Iterable[Any]) -> str:
    # FastAPI prefixes body errors with "body"; the client knows where its fields are.
    parts = [str(part) for part in loc if part not in ("body",)]
    return ".".join(parts) or "body"


def describe_validation_errors(
    errors: Iterable[dict[str, Any]], allowed_fields: dict[str, list[str]] | None = None
) -> str:
    """
    One readable line per pydantic error: ``field: problem``, unknown fields named as such.

    :param errors: ``ValidationError.errors()`` or ``RequestValidationError.errors()``.
    :param allowed_fields: Optional map of a location prefix to the field names allowed there.
    """
    lines = []
    for error in errors:
        location = _error_location(error.get("loc", ()))
        if error.get("type") == "extra_forbidden":
            parent = location.rpartition(".")[0]
            allowed = (allowed_fields or {}).get(parent)
            hint = f" (allowed: {', '.join(allowed)})" if allowed else ""
            lines.append(f"unknown field '{location}'{hint}")
        elif error.get("type") == "missing":
            lines.append(f"{location}: field required")
        else:
            lines.append(f"{location}: {error.get('msg', 'invalid value')}")
    return "; ".join(lines) or "invalid request"


def _is_json_error(errors: list[dict[str, Any]]) -> bool:
    return any(error.get("type") in {"json_invalid", "json_type"} for error in errors)


def map_exception(error: BaseException) -> ApiError | None:
    """
    Map a domain exception to its ``ApiError``, or ``None`` when it is not a client-visible failure.

    Matched by class (``isinstance``), most specific first: see docs/contract.md, "Errors".
    """
    if isinstance(error, ApiError):
        return error
    if isinstance(error, ValidationError):
        return validation_error(describe_validation_errors(error.errors()))
    for error_class, status, kind in _DOMAIN_ERRORS:
        if isinstance(error, error_class):
            return ApiError(status, kind, str(error) or type(error).__name__)
    return None


def raise_api_errors(func: Callable) -> Callable:
    """Decorator for wrapper methods: re-raise domain exceptions as ``ApiError`` (unknown ones stay 500)."""

    @wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except HTTPException:
            raise
        except Exception as error:
            mapped = map_exception(error)
            if mapped is None:
                raise
            raise mapped from error

    return wrapper


def error_response(status: int, error_type: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(status_code=status, content={"error": error_type, "message": message}, headers=headers)


def _status_type(status: int) -> str:
    try:
        return HTTPStatus(status).phrase.lower().replace(" ", "_").replace("-", "_")
    except ValueError:
        return "error"


def install_error_handlers(app: FastAPI) -> None:
    """Render every error raised while serving as ``{"error", "message"}`` with the right status."""

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = exc.detail
        if isinstance(detail, dict) and {"error", "message"} <= detail.keys():
            return error_response(exc.status_code, detail["error"], detail["message"], getattr(exc, "headers", None))
        if exc.status_code >= 500:
            # Hayhooks wraps unexpected pipeline exceptions as 500 "Pipeline execution failed: ...".
            logger.error("Internal error: %s", detail)
            return error_response(exc.status_code, "internal_error", "Internal error; see the server log.")
        return error_response(
            exc.status_code, _status_type(exc.status_code), str(detail), getattr(exc, "headers", None)
        )

    @app.exception_handler(RequestValidationError)
    async def request_validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = list(exc.errors())
        if _is_json_error(errors):
            return error_response(
                400, "invalid_json", "The request body is not valid JSON: " + describe_validation_errors(errors)
            )
        return error_response(422, "validation_error", describe_validation_errors(errors))

    @app.exception_handler(ValidationError)
    async def pydantic_validation_error(_request: Request, exc: ValidationError) -> JSONResponse:
        return error_response(422, "validation_error", describe_validation_errors(exc.errors()))

    @app.exception_handler(Exception)
    async def unexpected_error(_request: Request, exc: Exception) -> JSONResponse:
        mapped = map_exception(exc)
        if mapped is not None:
            return error_response(mapped.status_code, mapped.error_type, mapped.message)
        logger.exception("Unhandled error while serving a request")
        return error_response(500, "internal_error", "Internal error; see the server log.")
