"""hayhooks_app.mcp_server without a server: the tool list, the input schemas and the argument check."""

import asyncio
import json

import pytest

from hayhooks_app import mcp_server
from hayhooks_app.middleware import _check_json
from hayhooks_app.schemas import REQUEST_MODELS

ACME = {"tenant_id": "acme", "user_tags": ["hr"]}
ROUTES = {"search_project_context": "/search/run", "enrich_message": "/enrich/run", "ask_with_citations": "/rag/run"}


@pytest.mark.unit
class TestTools:
    def test_three_read_tools_over_the_read_wrappers(self):
        assert {tool.name: tool.wrapper for tool in mcp_server.TOOLS} == {
            "search_project_context": "search",
            "enrich_message": "enrich",
            "ask_with_citations": "rag",
        }

    def test_input_schema_is_the_rest_request_model(self):
        for tool in mcp_server.TOOLS:
            assert tool.model is REQUEST_MODELS[ROUTES[tool.name]]
            assert tool.input_schema() == tool.model.model_json_schema()

    def test_mcp_routes_are_mounted_next_to_rest(self):
        from fastapi import FastAPI
        from hayhooks.server.pipelines.registry import ImmutablePipelineRegistry

        app = FastAPI()
        mcp_server.mount_mcp(app, mcp_server.create_mcp_app(ImmutablePipelineRegistry()))
        assert {getattr(route, "path", None) for route in app.router.routes} >= {"/mcp", "/sse", "/messages"}
        assert "/status" not in {getattr(route, "path", None) for route in app.router.routes}


@pytest.mark.unit
class TestArguments:
    @pytest.mark.parametrize(
        ("name", "arguments"),
        [
            ("enrich_message", {"message": " ", **ACME}),
            ("enrich_message", {"message": "x", "tenant": "globex", **ACME}),
            ("search_project_context", {"query": "x", "k": "5", **ACME}),
            ("search_project_context", {"query": "x", "filters": {"tenant_id": "globex"}, **ACME}),
            ("ask_with_citations", {"query": "x" * 5000, **ACME}),
            ("ask_with_citations", {"max_context_chunks": 3, **ACME}),
        ],
    )
    def test_bad_arguments_get_the_rest_422_message(self, name, arguments):
        tool = mcp_server.TOOLS_BY_NAME[name]
        with pytest.raises(mcp_server.ToolCallError) as raised:
            mcp_server.check_arguments(tool, arguments)
        status, error_type, message = _check_json(json.dumps(arguments).encode(), tool.model)
        assert str(raised.value) == f"{status} {error_type}: {message}"

    def test_good_arguments_pass(self):
        tool = mcp_server.TOOLS_BY_NAME["enrich_message"]
        assert mcp_server.check_arguments(tool, {"message": "leave", "top_k": 3, **ACME}).top_k == 3

    def test_unknown_tool_and_missing_wrapper(self):
        from hayhooks.server.pipelines.registry import ImmutablePipelineRegistry

        registry = ImmutablePipelineRegistry()
        with pytest.raises(mcp_server.ToolCallError, match="404 not_found: unknown tool 'deploy_pipeline'"):
            asyncio.run(mcp_server.run_tool(registry, "deploy_pipeline", {}, None))
        with pytest.raises(mcp_server.ToolCallError, match="503 service_unavailable"):
            asyncio.run(mcp_server.run_tool(registry, "enrich_message", {"message": "x", **ACME}, None))
