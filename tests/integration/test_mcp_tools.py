"""
Agents' routes end to end, in trusted mode: ``POST /enrich/run`` / ``POST /rag/enrich`` and the MCP
tools at ``/mcp`` (Streamable HTTP) and ``/sse`` of the real server, called with the real ``mcp``
client. One server for the module (the sample corpus indexed on its first start).

The access side in ``api_key`` mode (keys, cross-tenant probes) is ``test_mcp_access.py``.
"""

import re

import pytest
from support.api_server import ApiServer, error_of
from support.mcp_client import call_tool, error_text, initialize, list_tools

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ACME = {"tenant_id": "acme", "user_tags": ["hr", "all-staff", "finance"]}
MEAL = "What is the daily meal per diem when travelling for business within the Netherlands?"
LEAVE = "How many days of paid annual leave do full-time employees get?"
ABSENT = "What is the airspeed velocity of an unladen swallow?"
TOOL_NAMES = {"search_project_context", "enrich_message", "ask_with_citations"}
IDENTITY_FIELDS = {"tenant_id", "user_tags", "user_id", "project_id"}
SOURCE_ID = re.compile(r"\[SourceId: ([^\]]+)\]")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with ApiServer(tmp_path_factory.mktemp("mcp") / "data") as running:
        yield running


def rest(server, path, body, status=200):
    response = server.client.post(path, json=body)
    assert response.status_code == status, response.text[:1000]
    return response.json()["result"] if status == 200 else response


def without_query_id(result: dict) -> dict:
    """A result less its ``query_id``, which every call has and no two calls share."""
    assert len(result.get("query_id") or "") == 32, result
    return {key: value for key, value in result.items() if key != "query_id"}


def tool(server, name, arguments, transport="http"):
    result = call_tool(server.url, name, arguments, transport=transport)
    assert not result.isError, result.content
    return result


class TestEnrichRoute:
    def test_context_block_sources_and_tokens(self, server):
        result = rest(server, "/enrich/run", {"message": LEAVE, **ACME})
        assert result["message"] == LEAVE and result["empty_reason"] is None
        assert 0 < result["context_chunks_used"] == len(result["sources"]) <= 5
        # The context is the answer prompt's format: every chunk marked with its SourceId, in source order.
        assert SOURCE_ID.findall(result["context"]) == [source["source_id"] for source in result["sources"]]
        assert result["context"].startswith("[SourceId: ") and "[Document: " in result["context"]
        assert 0 < result["tokens_used"] <= 3000
        for source in result["sources"]:
            assert source["source_id"] == f"{source['document_id']}:{source['chunk_index']}"
            assert source["document_id"].startswith("acme-") and source["document_name"]
            assert source["score"] <= 1.0 and "url" in source
        # Hits reach the minimum similarity; a weaker chunk is a neighbour read around a hit (docs/contract.md,
        # "Retrieval"): the next or previous chunk of a hit's document.
        hits = {
            (source["document_id"], source["chunk_index"]) for source in result["sources"] if source["score"] >= 0.3
        }
        assert hits
        for source in result["sources"]:
            if source["score"] < 0.3:
                document, index = source["document_id"], source["chunk_index"]
                assert (document, index - 1) in hits or (document, index + 1) in hits, source
        assert "acme-hr-handbook" in {source["document_id"] for source in result["sources"]}

    def test_the_message_is_returned_unchanged(self, server):
        message = "  how many VACATION days?? \n(asking for a colleague)  "
        assert rest(server, "/enrich/run", {"message": message, **ACME})["message"] == message

    def test_rag_enrich_is_the_same_route(self, server):
        body = {"message": MEAL, "top_k": 3, **ACME}
        first, second = rest(server, "/rag/enrich", body), rest(server, "/enrich/run", body)
        assert without_query_id(first) == without_query_id(second) and first["query_id"] != second["query_id"]

    def test_top_k_bounds_the_sources(self, server):
        result = rest(server, "/enrich/run", {"message": LEAVE, "top_k": 1, **ACME})
        assert len(result["sources"]) == 1 and len(SOURCE_ID.findall(result["context"])) == 1

    def test_same_context_as_the_answer(self, server):
        """Enrichment uses /rag's retrieval and budget: the answer's citations come from the enrich sources."""
        enriched = rest(server, "/enrich/run", {"message": MEAL, **ACME})
        answer = rest(server, "/rag/run", {"query": MEAL, **ACME})
        assert answer["citations"], answer
        assert {c["source_id"] for c in answer["citations"]} <= {s["source_id"] for s in enriched["sources"]}
        assert answer["context_chunks_used"] == enriched["context_chunks_used"]
        assert answer["context_tokens_used"] == enriched["tokens_used"]

    def test_nothing_relevant_is_an_empty_result_with_a_reason(self, server):
        result = rest(server, "/enrich/run", {"message": ABSENT, **ACME})
        assert result["context"] == "" and result["sources"] == [] and result["tokens_used"] == 0
        assert "minimum similarity" in result["empty_reason"] and "RAG_MIN_SIMILARITY_SCORE" in result["empty_reason"]

    def test_nothing_visible_is_an_empty_result_with_a_reason(self, server):
        result = rest(server, "/enrich/run", {"message": LEAVE, "tenant_id": "nobody", "user_tags": ["hr"]})
        assert result["sources"] == [] and "may see" in result["empty_reason"]

    @pytest.mark.parametrize(
        ("body", "named"),
        [
            ({"tenant_id": "acme", "user_tags": ["hr"]}, "message"),
            ({"message": "   ", **ACME}, "message"),
            ({"message": "x", "top_k": 21, **ACME}, "top_k"),
            ({"message": "x", "top_k": "3", **ACME}, "top_k"),
            ({"message": "x", "query": "y", **ACME}, "query"),
            ({"message": "x", "filters": {"tenant_id": "globex"}, **ACME}, "tenant_id"),
            ({"message": "x", "user_tags": ["hr"]}, "tenant_id"),
        ],
    )
    def test_bad_bodies_are_422_naming_the_field(self, server, body, named):
        for path in ("/enrich/run", "/rag/enrich"):
            assert named in error_of(server.client.post(path, json=body), 422, "validation_error"), path


class TestMcpTools:
    def test_initialize_over_both_transports(self, server):
        for transport in ("http", "sse"):
            init = initialize(server.url, transport)
            assert init.serverInfo.name == "sourcebound" and init.capabilities.tools is not None
            assert "SourceId" in init.instructions

    def test_lists_exactly_the_three_tools(self, server):
        tools = {tool.name: tool for tool in list_tools(server.url)}
        assert set(tools) == TOOL_NAMES  # no deploy, undeploy, status or write tools
        for name, listed in tools.items():
            assert len(listed.description) > 80, name
            properties = listed.inputSchema["properties"]
            assert IDENTITY_FIELDS <= set(properties) and "headers" not in properties, name
            assert listed.inputSchema.get("additionalProperties") is False, name
        assert tools["search_project_context"].inputSchema["required"] == ["query"]
        assert tools["ask_with_citations"].inputSchema["required"] == ["query"]
        assert tools["enrich_message"].inputSchema["required"] == ["message"]
        assert "top_k" in tools["enrich_message"].inputSchema["properties"]

    def test_sse_lists_the_same_tools(self, server):
        assert [t.model_dump() for t in list_tools(server.url, transport="sse")] == [
            t.model_dump() for t in list_tools(server.url)
        ]

    def test_search_project_context(self, server):
        arguments = {"query": "expense claim receipts", "k": 3, **ACME}
        found = tool(server, "search_project_context", arguments).structuredContent
        hits = found["results"]
        assert 0 < len(hits) <= 3 and all(hit["document_id"].startswith("acme-") for hit in hits)
        in_context = SOURCE_ID.findall(found["context"])
        assert in_context and in_context == [hit["source_id"] for hit in hits][: len(in_context)]
        expected = rest(server, "/search/run", arguments)
        for answer in (found, expected):
            answer["metadata"].pop("latency_ms")
        assert without_query_id(found) == without_query_id(expected)

    @pytest.mark.parametrize("transport", ["http", "sse"])
    def test_enrich_message_equals_the_rest_route(self, server, transport):
        arguments = {"message": LEAVE, **ACME}
        result = tool(server, "enrich_message", arguments, transport)
        assert without_query_id(result.structuredContent) == without_query_id(rest(server, "/enrich/run", arguments))
        assert SOURCE_ID.findall(result.structuredContent["context"]) and result.structuredContent["sources"]
        (text,) = result.content
        assert "[SourceId: " in text.text  # the text content carries the same JSON for clients without structure

    def test_ask_with_citations_cites(self, server):
        result = tool(server, "ask_with_citations", {"query": MEAL, **ACME})
        answer = result.structuredContent
        assert answer["action"] == "CITE" and answer["citations"], answer
        cited = set(SOURCE_ID.findall(answer["answer"]))
        assert cited and cited <= {citation["source_id"] for citation in answer["citations"]}
        assert "45" in answer["answer"]  # EUR 45 within the Netherlands
        assert all(citation["document_id"].startswith("acme-") for citation in answer["citations"])


class TestMcpBadArguments:
    @pytest.mark.parametrize(
        ("name", "arguments", "expected"),
        [
            ("enrich_message", {"tenant_id": "acme", "user_tags": ["hr"]}, "422 validation_error: message"),
            ("enrich_message", {"message": "", **ACME}, "422 validation_error: message"),
            ("enrich_message", {"query": LEAVE, **ACME}, "query"),
            ("search_project_context", {"query": "x", "k": "3", **ACME}, "k"),
            ("search_project_context", {"query": "x", "search_mode": "psychic", **ACME}, "search_mode"),
            ("ask_with_citations", {"query": "x", "max_context_chunks": 0, **ACME}, "max_context_chunks"),
            ("ask_with_citations", {"query": "x", "filters": {"tags": ["x"]}, **ACME}, "tags"),
            ("ask_with_citations", {"query": "x", "headers": {"authorization": "Bearer x"}, **ACME}, "headers"),
            ("search_project_context", {"query": "x", "user_tags": ["hr"]}, "tenant_id"),
            ("enrich_message", {"message": "x", "tenant_id": "acme"}, "user_tags"),
            ("ask_with_citations", {"query": "x", "model": "gpt-9", **ACME}, "400 model_not_allowed"),
            ("deploy_pipeline", {"name": "x", "files": {}}, "404 not_found: unknown tool 'deploy_pipeline'"),
            ("undeploy_pipeline", {"pipeline_name": "rag"}, "unknown tool"),
            ("index", {"documents": []}, "unknown tool"),
        ],
    )
    def test_tool_error_names_the_problem(self, server, name, arguments, expected):
        message = error_text(call_tool(server.url, name, arguments))
        assert expected in message, message
        assert "Traceback" not in message

    def test_errors_match_the_rest_errors(self, server):
        for arguments in ({"message": "x", "top_k": 0, **ACME}, {"message": "x", "user_tags": ["hr"]}):
            response = server.client.post("/enrich/run", json=arguments)
            body = response.json()
            expected = f"{response.status_code} {body['error']}: {body['message']}"
            assert error_text(call_tool(server.url, "enrich_message", arguments)) == expected

    def test_server_log_names_the_tool_call_but_not_its_arguments(self, server):
        marker = "zanzibar quokka enrichment"  # a message no other test sends
        tool(server, "enrich_message", {"message": marker, **ACME})
        log = server.log_path.read_text(encoding="utf-8", errors="replace")
        assert "Running MCP tool 'enrich_message' (pipeline 'enrich')" in log and marker not in log

    def test_server_still_serves_after_bad_calls(self, server):
        assert server.client.get("/health").json()["status"] == "healthy"
        assert tool(server, "enrich_message", {"message": LEAVE, **ACME}).structuredContent["sources"]
