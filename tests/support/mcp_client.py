"""
The real MCP client (the ``mcp`` package) against a running ``ApiServer``, as blocking calls.

Each call opens one client session over Streamable HTTP (``/mcp``) or SSE (``/sse``), initialises
it, does its work and closes it, so every call carries the headers given (an API key or none).

Usage:

```python
tools = list_tools(server.url)
result = call_tool(server.url, "enrich_message", {"message": "..."}, headers={"Authorization": "Bearer sb_..."})
result.isError, result.structuredContent
```
"""

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from mcp import ClientSession, types
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client


async def _with_session(
    base_url: str, work: Callable[[ClientSession], Awaitable[Any]], headers: dict[str, str] | None, transport: str
) -> Any:
    if transport == "sse":
        async with sse_client(f"{base_url}/sse", headers=headers or {}, timeout=30) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await work(session)
    async with httpx.AsyncClient(headers=headers or {}, timeout=120) as http:
        async with streamable_http_client(f"{base_url}/mcp", http_client=http) as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await work(session)


def initialize(base_url: str, transport: str = "http") -> types.InitializeResult:
    """The server's answer to ``initialize`` (name, version, instructions, capabilities)."""

    async def run() -> types.InitializeResult:
        if transport == "sse":
            async with sse_client(f"{base_url}/sse", timeout=30) as (read, write):
                async with ClientSession(read, write) as session:
                    return await session.initialize()
        async with streamable_http_client(f"{base_url}/mcp") as (read, write, _):
            async with ClientSession(read, write) as session:
                return await session.initialize()

    return asyncio.run(run())


def list_tools(base_url: str, headers: dict[str, str] | None = None, transport: str = "http") -> list[types.Tool]:
    """The tools the server lists."""

    async def work(session: ClientSession) -> list[types.Tool]:
        return (await session.list_tools()).tools

    return asyncio.run(_with_session(base_url, work, headers, transport))


def call_tool(
    base_url: str,
    name: str,
    arguments: dict[str, Any],
    headers: dict[str, str] | None = None,
    transport: str = "http",
) -> types.CallToolResult:
    """One tool call's result (an error result has ``isError`` and the message as its text)."""

    async def work(session: ClientSession) -> types.CallToolResult:
        return await session.call_tool(name, arguments)

    return asyncio.run(_with_session(base_url, work, headers, transport))


def error_text(result: types.CallToolResult) -> str:
    """Assert a tool error result and return its message."""
    assert result.isError, f"expected a tool error, got {result.structuredContent or result.content}"
    (content,) = result.content
    assert content.type == "text"
    return content.text
