"""
OpenAI-compatible chat completions over the RAG pipeline (``model: "rag"``).

Request mapping:

* the last message (role ``user``) is the query; earlier ``user``/``assistant`` messages are the
  chat history, oldest first. ``system`` messages are dropped: the grounding rules of our own
  system prompt are not negotiable by a client;
* with ``conversation_id`` (a server-side conversation, ``POST /conversations``) the server's summary and
  recent turns are the history and the earlier messages are ignored; the turn is recorded;
* ``tenant_id``, ``user_tags``, ``user_id``, ``project_id``, ``llm_model``, ``conversation_id`` and
  ``max_context_chunks`` are extra top-level body fields (openai client:
  ``extra_body={...}``); identity follows the server's mode exactly as on ``/rag/run``;
* OpenAI sampling fields (``temperature``, ``max_tokens``, ...) are accepted and ignored.

Response mapping: the answer (with its inline ``[SourceId: doc:chunk]`` markers) is the
assistant message. Everything else of the ``RAGResponse`` (``citations``, ``confidence``,
``action``, ``route_to``, ``grounded``, ``model_used``, token and timing figures) is returned
alongside it in a top-level ``sourcebound`` object, with ``sources``: each cited document once,
with its ``title`` and ``url`` (the link back to the source):

* non-streaming: ``completion.sourcebound`` (openai client: ``completion.model_extra["sourcebound"]``
  or ``completion.to_dict()["sourcebound"]``);
* streaming: the last chunk before ``data: [DONE]`` has ``finish_reason: "stop"`` and the same
  ``sourcebound`` object (openai client: ``chunk.model_extra["sourcebound"]``).

The answer is produced in full (cited, scored and routed) before the first byte is sent, so a
failure is always a proper HTTP error rather than a broken stream, and a stream never shows
text that the confidence check later routes away: on ROUTE the streamed text is the decline
(docs/contract.md "Routed answers"), never the LLM's draft. The text is then streamed in small
pieces; the first token therefore comes after the whole answer is generated and routed.
"""

import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

from fastapi_openai_compat import ChatCompletion, Choice, Message
from starlette.datastructures import Headers

from hayhooks_app.container import ServiceContainer
from hayhooks_app.identity import resolve_identity
from hayhooks_app.schemas import ChatCompletionRequest

CHAT_MODEL_NAME = "rag"
# Pieces of roughly this many characters, cut after whitespace, make up the stream.
_STREAM_PIECE = re.compile(r"\S+\s*|\s+")


def to_rag_request(request: ChatCompletionRequest) -> dict[str, Any]:
    """The ``/rag/run`` body equivalent of a chat request (identity fields left to the caller)."""
    conversation = [message for message in request.messages if message.role != "system"]
    *history, last = conversation
    rag: dict[str, Any] = {"query": last.text()}
    if request.conversation_id is not None:
        # The server's stored history replaces the client's earlier messages (docs/api.md, "Conversations").
        rag["conversation_id"] = request.conversation_id
    elif history:
        rag["chat_history"] = [{"role": message.role, "content": message.text()} for message in history]
    if request.llm_model:
        rag["model"] = request.llm_model
    if request.max_context_chunks is not None:
        rag["max_context_chunks"] = request.max_context_chunks
    if request.scope is not None:
        rag["scope"] = request.scope
    return rag


def reply_sources(citations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """
    The documents an answer cites, once each in order of first citation, with their title and link
    (docs/contract.md, "Sources"): ``[{"document_id", "title", "url", "source_ids"}]``.
    """
    sources: dict[str, dict[str, Any]] = {}
    for citation in citations:
        document_id = citation.get("document_id") or str(citation["source_id"]).rsplit(":", 1)[0]
        entry = sources.setdefault(
            document_id,
            {
                "document_id": document_id,
                "title": citation.get("title") or citation.get("document_name"),
                "url": citation.get("url"),
                "source_ids": [],
            },
        )
        entry["source_ids"].append(citation["source_id"])
    return list(sources.values())


def sourcebound_extra(result: dict[str, Any]) -> dict[str, Any]:
    """The RAG response without its answer, plus the cited sources with their links: beside the message."""
    extra = {key: value for key, value in result.items() if key != "answer"}
    extra["sources"] = reply_sources(result.get("citations") or [])
    return extra


def completion(result: dict[str, Any], completion_id: str, created: int) -> ChatCompletion:
    """A non-streaming ``chat.completion`` with the ``sourcebound`` object."""
    return ChatCompletion(
        id=completion_id,
        object="chat.completion",
        created=created,
        model=CHAT_MODEL_NAME,
        choices=[Choice(index=0, message=Message(role="assistant", content=result["answer"]), finish_reason="stop")],
        sourcebound=sourcebound_extra(result),
    )


def completion_chunks(
    result: dict[str, Any], completion_id: str, created: int, piece_words: int = 4
) -> Iterator[ChatCompletion]:
    """``chat.completion.chunk`` objects: the answer in small pieces, then a final chunk with ``sourcebound``."""

    def chunk(delta: Message, finish_reason: str | None = None, **extra: Any) -> ChatCompletion:
        return ChatCompletion(
            id=completion_id,
            object="chat.completion.chunk",
            created=created,
            model=CHAT_MODEL_NAME,
            choices=[Choice(index=0, delta=delta, finish_reason=finish_reason)],
            **extra,
        )

    words = _STREAM_PIECE.findall(result["answer"])
    yield chunk(Message(role="assistant", content=""))
    for start in range(0, len(words), piece_words):
        yield chunk(Message(role="assistant", content="".join(words[start : start + piece_words])))
    yield chunk(Message(role="assistant"), finish_reason="stop", sourcebound=sourcebound_extra(result))


def complete(
    container: ServiceContainer, body: dict[str, Any], headers: Headers | None
) -> ChatCompletion | Iterator[ChatCompletion]:
    """
    Run a chat completion: validate, resolve identity, answer through the shared RAG service.

    :param container: The process's service container.
    :param body: The chat request body (Hayhooks passes every field, extras included).
    :param headers: Request headers (API-key identity).
    :returns: A ``ChatCompletion``, or an iterator of chunks when ``stream`` is true.
    """
    request = ChatCompletionRequest.model_validate(body, strict=False)
    identity = resolve_identity(
        container.settings.auth_mode,
        container.credentials,
        headers,
        tenant_id=request.tenant_id,
        user_tags=request.user_tags,
        user_id=request.user_id,
        project_id=request.project_id,
    )
    result = container.requests.answer(to_rag_request(request), identity, endpoint="chat")
    completion_id = f"chatcmpl-{uuid.uuid4().hex}"
    created = int(time.time())
    if request.stream:
        return completion_chunks(result, completion_id, created)
    return completion(result, completion_id, created)
