"""
The MCP tools in ``api_key`` mode: the identity comes from the bearer key of the MCP HTTP request,
exactly as on REST, never from the tool arguments alone.

One server for the module (``api_key`` mode, the sample corpus indexed on its first start), keys
for one acme and one globex requester. Besides the fixed cases, hypothesis probes every tool with
drawn identity arguments (other tenants, foreign and restricted tags, other users and projects,
filters, smuggled fields) under either key, and checks that each call either fails with a 4xx
naming the problem or returns only chunks the key's grant may see, and that the REST route answers
the same call identically.
"""

import re

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from support.api_server import REPO, ApiServer
from support.mcp_client import call_tool, error_text, list_tools

from components.stores import key_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MANIFEST = yaml.safe_load((REPO / "examples" / "sample_corpus" / "manifest.yml").read_text(encoding="utf-8"))
DOCUMENTS = {entry["document_id"]: entry for entry in MANIFEST["documents"]}
ALL_TAGS = sorted({tag for entry in DOCUMENTS.values() for tag in entry["tags"]})
GRANTS = {
    "acme": {
        "tenant_id": "acme",
        "tags": ["hr", "all-staff", "finance", "engineering"],
        "user_id": "u-acme-priya",
        "projects": ["atlas"],
    },
    "globex": {"tenant_id": "globex", "tags": ["people", "everyone", "accounting"]},
}
TOOLS = {  # tool -> (REST route, text argument)
    "search_project_context": ("/search/run", "query"),
    "enrich_message": ("/enrich/run", "message"),
    "ask_with_citations": ("/rag/run", "query"),
}
TOPICS = (
    "How many days of annual leave do employees get?",
    "What is the daily meal per diem?",
    "expense claim receipts",
    "Who is on call for incidents?",
    "FY2025 budget and salary bands",
    "payroll calendar",
    "Priya onboarding plan",
    "Atlas design decisions",
    "warehouse safety rules",
)
SOURCE_ID = re.compile(r"\[SourceId: ([^\]:]+):\d+\]")


def visible(document_id: str, grant: dict) -> bool:
    """The access rule (docs/contract.md, "Access") as an oracle over the sample corpus's manifest."""
    entry = DOCUMENTS[document_id]
    if entry["tenant_id"] != grant["tenant_id"] or not set(entry["tags"]) & set(grant["tags"]):
        return False
    scope = entry.get("scope", "tenant")
    if scope == "user":
        return entry.get("user_id") == grant.get("user_id")
    if scope == "project":
        return entry.get("project_id") in (grant.get("projects") or [])
    return True


def returned_documents(tool: str, result: dict) -> set[str]:
    """Every document a tool result shows: listed results, sources, citations and SourceIds in its text."""
    fields = {"search_project_context": "results", "enrich_message": "sources", "ask_with_citations": "citations"}
    listed = [entry["document_id"] for entry in result[fields[tool]]]
    text = result.get("context") or result.get("answer") or ""
    return set(listed) | set(SOURCE_ID.findall(text))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("mcp-keys") / "data"
    data_dir.mkdir(parents=True)
    keys = {name: key_store.register_key(data_dir / "api_keys.json", **grant)[0] for name, grant in GRANTS.items()}
    with ApiServer(data_dir, env={"SOURCEBOUND_AUTH_MODE": "api_key"}) as running:
        running.keys = keys
        yield running


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def rest_outcome(server, route: str, arguments: dict, key: str) -> tuple[str, object]:
    response = server.client.post(route, json=arguments, headers=bearer(key))
    body = response.json()
    if response.status_code == 200:
        return "ok", body["result"]
    return "error", f"{response.status_code} {body['error']}: {body['message']}"


class TestKeyIsTheIdentity:
    @pytest.mark.parametrize("tool", sorted(TOOLS))
    @pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer sb_unknown"}, {"Authorization": "Basic eDp5"}])
    def test_no_valid_key_is_401_whatever_the_arguments_say(self, server, tool, headers):
        arguments = {TOOLS[tool][1]: "vacation", "tenant_id": "acme", "user_tags": ["hr"], "user_id": "u-acme-priya"}
        assert error_text(call_tool(server.url, tool, arguments, headers=headers)).startswith("401 unauthorized:")

    @pytest.mark.parametrize("tool", sorted(TOOLS))
    def test_the_key_alone_gives_its_tenant(self, server, tool):
        for name, grant in GRANTS.items():
            result = call_tool(server.url, tool, {TOOLS[tool][1]: TOPICS[1]}, headers=bearer(server.keys[name]))
            assert not result.isError, result.content
            shown = returned_documents(tool, result.structuredContent)
            assert shown and all(visible(document_id, grant) for document_id in shown), (name, shown)

    @pytest.mark.parametrize("tool", sorted(TOOLS))
    def test_another_tenant_in_the_arguments_is_403(self, server, tool):
        arguments = {TOOLS[tool][1]: TOPICS[1], "tenant_id": "globex", "user_tags": ["everyone"]}
        message = error_text(call_tool(server.url, tool, arguments, headers=bearer(server.keys["acme"])))
        assert message == "403 forbidden: tenant_id 'globex' does not match the API key's tenant."

    def test_restricted_tags_are_cut_to_the_key(self, server):
        headers = bearer(server.keys["acme"])
        only_restricted = {"message": TOPICS[4], "user_tags": ["finance-restricted"]}
        assert error_text(call_tool(server.url, "enrich_message", only_restricted, headers=headers)).startswith(
            "403 forbidden:"
        )
        mixed = {"message": TOPICS[4], "user_tags": ["finance", "finance-restricted"], "top_k": 20}
        sources = call_tool(server.url, "enrich_message", mixed, headers=headers).structuredContent["sources"]
        assert sources and "acme-fy2025-budget" not in {source["document_id"] for source in sources}

    def test_sse_takes_the_key_of_each_message(self, server):
        arguments = {"message": TOPICS[0]}
        for name, grant in GRANTS.items():
            result = call_tool(
                server.url, "enrich_message", arguments, headers=bearer(server.keys[name]), transport="sse"
            )
            shown = returned_documents("enrich_message", result.structuredContent)
            assert shown and all(visible(document_id, grant) for document_id in shown), name
        assert error_text(call_tool(server.url, "enrich_message", arguments, transport="sse")).startswith("401")

    def test_rag_enrich_takes_the_key_too(self, server):
        body = {"message": TOPICS[0], "tenant_id": "globex"}
        assert server.client.post("/rag/enrich", json=body).status_code == 401
        assert server.client.post("/rag/enrich", json=body, headers=bearer(server.keys["acme"])).status_code == 403
        response = server.client.post("/rag/enrich", json={"message": TOPICS[0]}, headers=bearer(server.keys["acme"]))
        shown = returned_documents("enrich_message", response.json()["result"])
        assert shown and all(visible(document_id, GRANTS["acme"]) for document_id in shown)

    def test_listing_the_tools_needs_no_key_and_shows_no_data(self, server):
        assert {tool.name for tool in list_tools(server.url)} == set(TOOLS)


identity_arguments = st.fixed_dictionaries(
    {},
    optional={
        "tenant_id": st.sampled_from(["acme", "globex", "initech", "ACME", "acme "]),
        "user_tags": st.lists(st.sampled_from([*ALL_TAGS, "admin", "*"]), min_size=1, max_size=4, unique=True),
        "user_id": st.sampled_from(["u-acme-priya", "u-acme-maria", "u-globex-sam", "*"]),
        "project_id": st.sampled_from(["atlas", "apollo", "*"]),
        "filters": st.fixed_dictionaries(
            {}, optional={"verified_only": st.booleans(), "exclude_tainted": st.booleans()}
        ),
    },
)
smuggled = st.sampled_from(
    [
        {},
        {},
        {},
        {"tenant": "globex"},
        {"scope": "tenant"},
        {"tags": ["everyone"]},
        {"filters": {"tenant_id": "globex"}},
    ]
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    key_name=st.sampled_from(sorted(GRANTS)),
    tool=st.sampled_from(sorted(TOOLS)),
    text=st.sampled_from(TOPICS),
    identity=identity_arguments,
    extra=smuggled,
)
def test_no_tool_argument_widens_the_key(server, key_name, tool, text, identity, extra):
    route, text_field = TOOLS[tool]
    arguments = {text_field: text, **identity, **extra}
    result = call_tool(server.url, tool, arguments, headers=bearer(server.keys[key_name]))
    expected_kind, expected = rest_outcome(server, route, arguments, server.keys[key_name])
    if result.isError:
        message = error_text(result)
        event(f"tool error {message.split(' ', 1)[0]}")
        assert message.split(" ", 1)[0] in {"401", "403", "422"}, message
        assert expected_kind == "error" and message == expected
        return
    assert expected_kind == "ok", expected
    event("answered")
    shown = returned_documents(tool, result.structuredContent)
    assert all(visible(document_id, GRANTS[key_name]) for document_id in shown), (key_name, arguments, shown)
    assert shown == returned_documents(tool, expected)
