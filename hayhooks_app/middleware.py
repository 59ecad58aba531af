"""
ASGI middleware of the HTTP layer.

* ``RequestGuard`` enforces body size limits (413) on every POST, and for the JSON routes in
  ``schemas.REQUEST_MODELS`` checks the raw body before Hayhooks parses it: not JSON -> 400,
  not matching the strict model (unknown fields, wrong JSON types, bounds) -> 422, a chat
  completion for another model than ``rag`` -> 400. Hayhooks' generated request models ignore
  unknown fields, so without this a typo or a smuggled field would be silently dropped.
* ``SSEDoneTerminator`` appends ``data: [DONE]`` to the chat-completion event stream, which
  the OpenAI protocol ends with (Hayhooks' stream stops without it).
"""

import json

from pydantic import ValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hayhooks_app.config import Limits
from hayhooks_app.errors import describe_validation_errors, error_response
from hayhooks_app.schemas import REQUEST_MODELS, ChatCompletionRequest, allowed_fields

UPLOAD_PATH = "/index/upload"
CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
CHAT_MODEL_NAME = "rag"


class _BodyTooLarge(Exception):
    pass


async def _send_error(scope: Scope, receive: Receive, send: Send, status: int, error_type: str, message: str) -> None:
    await error_response(status, error_type, message)(scope, receive, send)


class RequestGuard:
    """
    Size limits and strict JSON validation in front of the application.

    :param app: The wrapped ASGI app.
    :param limits: ``max_request_bytes`` for JSON bodies, ``max_upload_bytes`` for ``/index/upload``.
    """

    def __init__(self, app: ASGIApp, limits: Limits):
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in {"POST", "PUT", "PATCH"}:
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        limit = self.limits.max_upload_bytes if path == UPLOAD_PATH else self.limits.max_request_bytes
        too_large = f"The request body exceeds {limit} bytes (SOURCEBOUND_MAX_{'UPLOAD' if path == UPLOAD_PATH else 'REQUEST'}_BYTES)."
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await _send_error(scope, receive, send, 413, "payload_too_large", too_large)
            return

        model = REQUEST_MODELS.get(path)
        if model is None:
            await self._stream_with_limit(scope, receive, send, limit, too_large)
            return
        try:
            body = await _read_body(receive, limit)
        except _BodyTooLarge:
            await _send_error(scope, receive, send, 413, "payload_too_large", too_large)
            return
        problem = _check_json(body, model)
        if problem is not None:
            await _send_error(scope, receive, send, *problem)
            return

        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _stream_with_limit(self, scope: Scope, receive: Receive, send: Send, limit: int, message: str) -> None:
        received = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal received
            event = await receive()
            if event["type"] == "http.request":
                received += len(event.get("body", b""))
                if received > limit:
                    raise _BodyTooLarge
            return event

        async def tracking_send(event: Message) -> None:
            nonlocal started
            if event["type"] == "http.response.start":
                started = True
            await send(event)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except _BodyTooLarge:
            if not started:
                await _send_error(scope, receive, send, 413, "payload_too_large", message)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _read_body(receive: Receive, limit: int) -> bytes:
    chunks, size = [], 0
    while True:
        event = await receive()
        if event["type"] == "http.disconnect":
            break
        chunk = event.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _BodyTooLarge
        chunks.append(chunk)
        if not event.get("more_body", False):
            break
    return b"".join(chunks)


def _check_json(body: bytes, model) -> tuple[int, str, str] | None:
    """``(status, type, message)`` for a body that must not reach the application, else ``None``."""
    try:
        parsed = json.loads(body)
    except RecursionError:
        # Nesting deeper than the interpreter's recursion limit: no request of this API nests beyond a few levels.
        return 400, "invalid_json", "The request body is not valid JSON for this API: it is nested too deeply."
    except (ValueError, UnicodeDecodeError) as error:
        return 400, "invalid_json", f"The request body is not valid JSON: {error}"
    if not isinstance(parsed, dict):
        return 422, "validation_error", f"The request body must be a JSON object, got {type(parsed).__name__}."
    try:
        model.model_validate_json(body)
    except ValidationError as error:
        return 422, "validation_error", describe_validation_errors(error.errors(), allowed_fields(model))
    if model is ChatCompletionRequest and parsed.get("model") != CHAT_MODEL_NAME:
        return (
            400,
            "model_not_allowed",
            (
                f"model {parsed.get('model')!r} is not served here: use model '{CHAT_MODEL_NAME}' "
                "(choose the LLM with the extra field llm_model)."
            ),
        )
    return None


class SSEDoneTerminator:
    """Append ``data: [DONE]`` to event streams of the chat-completion routes."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in CHAT_PATHS:
            await self.app(scope, receive, send)
            return
        is_event_stream = False

        async def terminating_send(event: Message) -> None:
            nonlocal is_event_stream
            if event["type"] == "http.response.start":
                content_type = dict(event.get("headers", [])).get(b"content-type", b"")
                is_event_stream = content_type.startswith(b"text/event-stream")
            elif event["type"] == "http.response.body" and is_event_stream and not event.get("more_body", False):
                event = {**event, "body": event.get("body", b"") + b"data: [DONE]\n\n"}
            await send(event)

        await self.app(scope, receive, terminating_send)
