"""
The MCP server: the search, enrich and answer wrappers as Model Context Protocol tools, mounted into
the REST app at ``/mcp`` (Streamable HTTP, stateless) and ``/sse`` (with ``/messages/``), so one
deployment on one port serves REST, the OpenAI-compatible route and MCP.

| tool | wrapper | arguments |
|---|---|---|
| ``search_project_context`` | ``search`` (``POST /search/run``) | ``SearchRequestBody``: ``query``, ``k``, ... |
| ``enrich_message`` | ``enrich`` (``POST /enrich/run``) | ``EnrichRequestBody``: ``message``, ``top_k``, ... |
| ``ask_with_citations`` | ``rag`` (``POST /rag/run``) | ``RAGRequestBody``: ``query``, ``chat_history``, ... |

Each tool's input schema is its REST request model's JSON schema (identity fields included), and a
call runs exactly the REST path: the arguments are checked strictly by the same model (the same
``field: problem`` messages as the 422), then the deployed wrapper's ``run_api`` runs with the
**headers of the MCP HTTP request** that carried the call. So the identity is resolved as on REST
(``identity.resolve_identity``): in ``api_key`` and ``oidc`` modes from the ``Authorization: Bearer`` key or
token of that request, with the arguments' identity fields only able to narrow it (another tenant is a 403); in
``trusted`` mode from the arguments. The access filter is then built server-side as on REST
(docs/contract.md, "Access").

Transport: Hayhooks' MCP transports (as ``hayhooks.server.utils.mcp_utils.create_starlette_app`` builds them),
with the ``mcp`` package's DNS-rebinding protection on: the Host and Origin of every MCP request must be among
the allowed hosts (``hayhooks_app.browser_guard``; docs/operations.md, "Hosts and browsers"). The
server itself is ours rather than ``create_mcp_server``: Hayhooks' server calls wrappers without the
request headers (``api_key`` mode needs the key), names tools after pipelines, and lists its
pipeline-status and deploy/undeploy tools. This one lists only the three tools above; nothing
deploys, undeploys or reaches the indexing and lifecycle wrappers through MCP.

A failed call is an MCP tool error (``isError``) whose text is ``<status> <type>: <message>``, the
REST error's status, type and message, e.g. ``403 forbidden: tenant_id 'globex' does not match the
API key's tenant.``

Usage (``app.create_application`` does this):

```python
from hayhooks_app.mcp_server import create_mcp_app, mount_mcp

mcp_app = create_mcp_app(app.state.pipeline_registry)
mount_mcp(app, mcp_app)   # routes /mcp, /sse, /messages/; run mcp_app's lifespan inside the app's
```
"""

import json
import logging
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, HTTPException
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ValidationError
from starlette.routing import Mount, Route

from hayhooks_app.config import service_version
from hayhooks_app.errors import ApiError, describe_validation_errors
from hayhooks_app.schemas import EnrichRequestBody, RAGRequestBody, SearchRequestBody, allowed_fields

logger = logging.getLogger(__name__)

SERVER_NAME = "sourcebound"
MCP_PATHS = ("/mcp", "/sse", "/messages/")
INSTRUCTIONS = (
    "Tools over an organisation's internal documents. Every result cites chunks as "
    "[SourceId: document_id:chunk_index]; pass those ids on when you use the text. Only documents the "
    "caller may see are ever returned. Use enrich_message to get context for a user's message into your "
    "own prompt, search_project_context to look documents up, ask_with_citations for a grounded answer."
)


@dataclass(frozen=True)
class ToolSpec:
    """
    One MCP tool over a deployed wrapper.

    :param name: Tool name an agent calls.
    :param wrapper: Name of the Hayhooks wrapper it runs (its REST route is ``POST /<wrapper>/run``).
    :param model: The REST request model: the input schema and the strict argument check.
    :param description: What the tool is for, for an agent choosing between tools.
    """

    name: str
    wrapper: str
    model: type[BaseModel]
    description: str

    def input_schema(self) -> dict[str, Any]:
        return self.model.model_json_schema()


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="search_project_context",
        wrapper="search",
        model=SearchRequestBody,
        description=(
            "Search the organisation's documents the caller may see (hybrid keyword + vector by default). Returns "
            "ranked chunks with their SourceId, document name, score and snippet, plus a context string in the "
            "[SourceId: ...] format. Use it to look up specs, policies, decisions and history."
        ),
    ),
    ToolSpec(
        name="enrich_message",
        wrapper="enrich",
        model=EnrichRequestBody,
        description=(
            "Get context for a user's message to put into your own prompt: the relevant chunks the caller may see, "
            "each marked [SourceId: ...], within a token budget, with the list of sources (SourceId, document name, "
            "url where known, score) and the tokens used. The message is not rewritten and no answer is generated; "
            "an empty result says why (e.g. nothing reached the minimum similarity)."
        ),
    ),
    ToolSpec(
        name="ask_with_citations",
        wrapper="rag",
        model=RAGRequestBody,
        description=(
            "Answer a question from the documents the caller may see, citing every claim as [SourceId: ...]. "
            "Returns the answer, its citations (SourceId, document, section, snippet), a confidence score and "
            "an action: CITE, or ROUTE with the person who owns the topic when the evidence is weak."
        ),
    ),
)
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}


class ToolCallError(Exception):
    """A tool call the server refuses or cannot answer; the message is what the agent sees."""


def _error_text(error: ApiError | HTTPException) -> str:
    if isinstance(error, ApiError):
        return str(error)
    detail = error.detail
    if isinstance(detail, dict):
        return f"{error.status_code} {detail.get('error', 'error')}: {detail.get('message', detail)}"
    return f"{error.status_code} error: {detail}"


def check_arguments(tool: ToolSpec, arguments: dict[str, Any]) -> BaseModel:
    """
    The arguments as the tool's strict REST model, or ``ToolCallError`` with the REST 422's message.

    The check runs on the JSON text, exactly as ``RequestGuard`` checks a REST body (no ``"5"`` for 5).
    """
    try:
        return tool.model.model_validate_json(json.dumps(arguments))
    except ValidationError as error:
        message = describe_validation_errors(error.errors(), allowed_fields(tool.model))
        raise ToolCallError(f"422 validation_error: {message}") from error
    except (TypeError, ValueError) as error:  # not JSON-serialisable, or too deeply nested
        raise ToolCallError(
            f"422 validation_error: the arguments are not a JSON object this tool takes ({error})."
        ) from error


async def run_tool(registry: Any, name: str, arguments: dict[str, Any] | None, headers: Any) -> dict[str, Any]:
    """
    Run one tool call through its REST wrapper.

    :param registry: Hayhooks' pipeline registry (the deployed wrappers).
    :param name: The tool name.
    :param arguments: The call's arguments.
    :param headers: Headers of the MCP HTTP request that carried the call (``None`` when there is none).
    :returns: The wrapper's result (the REST route's ``result``).
    :raises ToolCallError: Unknown tool, bad arguments, or the REST error of the call.
    """
    tool = TOOLS_BY_NAME.get(name)
    if tool is None:
        raise ToolCallError(f"404 not_found: unknown tool {name!r}; the tools are {', '.join(TOOLS_BY_NAME)}.")
    arguments = dict(arguments or {})
    check_arguments(tool, arguments)
    wrapper = registry.get(tool.wrapper)
    if wrapper is None:
        raise ToolCallError(f"503 service_unavailable: the {tool.wrapper!r} pipeline is not deployed yet.")
    # The tool name only: arguments hold user text and identities, which the log never records.
    logger.info("Running MCP tool '%s' (pipeline '%s').", name, tool.wrapper)
    try:
        return await run_in_threadpool(lambda: wrapper.run_api(headers=headers, **arguments))
    except HTTPException as error:
        raise ToolCallError(_error_text(error)) from error
    except Exception as error:
        logger.exception("MCP tool %s failed.", name)
        message = "500 internal_error: the tool failed on the server; the server log has the cause."
        raise ToolCallError(message) from error


def create_mcp_server(registry: Any):
    """The MCP server (``mcp.server.lowlevel.Server``) with the three tools over ``registry``'s wrappers."""
    from mcp import types
    from mcp.server.lowlevel import Server

    server = Server(SERVER_NAME, version=service_version(), instructions=INSTRUCTIONS)
    listed = [
        types.Tool(name=tool.name, description=tool.description, inputSchema=tool.input_schema()) for tool in TOOLS
    ]

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return listed

    # Arguments are checked by the REST models in run_tool (the same messages as the REST 422s).
    @server.call_tool(validate_input=False)
    async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        request = server.request_context.request
        headers = getattr(request, "headers", None)
        try:
            result = await run_tool(registry, name, arguments, headers)
        except ToolCallError as error:
            return types.CallToolResult(content=[types.TextContent(type="text", text=str(error))], isError=True)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(result, ensure_ascii=False))],
            structuredContent=result,
            isError=False,
        )

    return server


def create_mcp_app(registry: Any, security: Any = None):
    """
    The MCP Starlette app (``/mcp``, ``/sse``, ``/messages/``) around our server: Hayhooks' transports
    (``hayhooks.server.utils.mcp_utils.create_starlette_app``, stateless Streamable HTTP and SSE) with their
    DNS-rebinding protection on.

    :param security: The transports' ``TransportSecuritySettings`` (allowed hosts and origins:
        ``browser_guard.AllowedHosts.mcp_security``); ``None``: loopback names only.
    """
    from contextlib import asynccontextmanager

    from hayhooks.server.tracing import instrument_starlette_app
    from mcp.server.sse import SseServerTransport
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.applications import Starlette

    if security is None:
        from hayhooks_app.browser_guard import AllowedHosts

        security = AllowedHosts().mcp_security()
    server = create_mcp_server(registry)
    # The transports check Host and Origin themselves too: the app's BrowserGuard is the first line, this the second.
    sessions = StreamableHTTPSessionManager(
        app=server, event_store=None, json_response=False, stateless=True, security_settings=security
    )
    sse = SseServerTransport("/messages/", security_settings=security)

    async def handle_streamable_http(scope, receive, send) -> None:
        await sessions.handle_request(scope, receive, send)

    async def handle_sse(request):
        async with sse.connect_sse(request.scope, request.receive, request._send) as streams:
            await server.run(streams[0], streams[1], server.create_initialization_options())

    @asynccontextmanager
    async def lifespan(app):
        async with sessions.run():
            yield

    app = Starlette(
        routes=[
            Route("/sse", endpoint=handle_sse),
            Mount("/messages/", app=sse.handle_post_message),
            Mount("/mcp", app=handle_streamable_http),
        ],
        lifespan=lifespan,
    )
    instrument_starlette_app(app)
    return app


class _AsgiEndpoint:
    """An ASGI app as a ``Route`` endpoint (a class instance, so Starlette does not wrap it as a request handler)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        await self.app(scope, receive, send)


def mount_mcp(app: FastAPI, mcp_app) -> None:
    """
    Add the MCP routes of ``mcp_app`` to ``app``: ``/mcp`` (exactly, and below), ``/sse``, ``/messages/``.

    ``mcp_app``'s lifespan (the Streamable HTTP session manager) must run inside ``app``'s.
    """
    routes = []
    for route in mcp_app.routes:
        path = getattr(route, "path", None)
        if path == "/mcp" and isinstance(route, Mount):
            # Clients POST to /mcp itself; a Mount alone would answer that with a redirect to /mcp/.
            routes.append(Route("/mcp", endpoint=_AsgiEndpoint(route.app), methods=["GET", "POST", "DELETE"]))
            routes.append(route)
        elif path in ("/sse", "/messages"):
            routes.append(route)
    app.router.routes.extend(routes)
