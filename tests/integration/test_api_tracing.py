"""
Tracing end to end: the real server (``python -m hayhooks_app serve``) with ``OTEL_EXPORTER_OTLP_ENDPOINT``
at a local OTLP/HTTP receiver (``support.otlp_receiver``), on the Ollama backend against the Ollama test
double, talked to over HTTP. What the server exports is decoded from the OTLP protobuf it sends.

Checked: the span tree of ``/search/run`` and ``/rag/run`` (HTTP server span under the caller's
``traceparent`` -> Hayhooks' pipeline run -> Haystack's pipeline run -> one span per component),
the count, mode, token, action and confidence tags against the response, a failing request (error
status and an exception event), the trace id in the response headers and in every log line of the
request, and that by default no exported value carries query, document or answer text.
"""

import re
import secrets

import pytest
from support.api_server import ApiServer, error_of
from support.ollama_double import ollama_server_env
from support.otlp_receiver import SPAN_KIND_SERVER, STATUS_ERROR, OtlpReceiver

pytestmark = [pytest.mark.integration, pytest.mark.ollama, pytest.mark.slow]

IDENTITY = {"tenant_id": "acme", "user_tags": ["hr"]}
DOCUMENT_TEXT = (
    "Zanzibar couriers receive eleven quokka vouchers every quarter. "
    "Vouchers expire after ninety days and cannot be exchanged for cash."
)
QUERY = "How many quokka vouchers does a Zanzibar courier receive?"
# Text that must never leave the process while content tracing is off (compared case-insensitively).
CONTENT_MARKERS = (QUERY, DOCUMENT_TEXT.split(". ")[0], "quokka", "zanzibar", "ninety days")
SEARCH_COMPONENTS = {
    "access_filter", "expander", "embedder", "planner", "router", "hybrid_retriever", "selector", "similarity", "guard",
    "domain_allowlist", "results",
}  # fmt: skip
RAG_STEPS = ("retriever", "similarity", "guard", "domain_allowlist", "dedup", "limiter", "budgeter")


@pytest.fixture(scope="module")
def receiver():
    with OtlpReceiver() as running:
        yield running


@pytest.fixture(scope="module")
def server(tmp_path_factory, receiver, ollama):
    env = ollama_server_env(
        ollama.url,
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url,
        OTEL_SERVICE_NAME="sourcebound-test",
        OTEL_BSP_SCHEDULE_DELAY="100",  # export every 0.1 s instead of 5 s
    )
    with ApiServer(tmp_path_factory.mktemp("tracing") / "data", env=env) as running:
        document = {"content": DOCUMENT_TEXT, **{"tenant_id": "acme", "tags": ["hr"]}, "document_id": "vouchers"}
        assert running.client.post("/index/run", json={"documents": [document]}).status_code == 200
        yield running


@pytest.fixture(autouse=True)
def reset_double(ollama):
    ollama.delay, ollama.reply, ollama.models = 0.0, None, ["llama3.2:latest"]
    yield


def traced_post(server, path, body):
    """POST with a fresh ``traceparent``; returns the response and the caller's (trace id, span id)."""
    trace_id, parent_id = secrets.token_hex(16), secrets.token_hex(8)
    response = server.client.post(path, json=body, headers={"traceparent": f"00-{trace_id}-{parent_id}-01"})
    return response, trace_id, parent_id


def trace_of(receiver, trace_id, server_span_name):
    """The spans of one trace, once its server span (which ends last) has arrived."""
    receiver.wait_for(lambda spans: any(s.trace_id == trace_id and s.name == server_span_name for s in spans))
    return receiver.trace(trace_id)


def only(spans, name, **attributes):
    matching = [
        span
        for span in spans
        if span.name == name and all(span.attributes.get(key) == value for key, value in attributes.items())
    ]
    assert len(matching) == 1, f"{len(matching)} spans {name} {attributes}: {[s.name for s in spans]}"
    return matching[0]


def components_of(spans, pipeline_span):
    return {
        span.attributes["haystack.component.name"]: span
        for span in spans
        if span.name == "haystack.component.run" and span.parent_span_id == pipeline_span.span_id
    }


def check_request_tree(spans, path, parent_id, pipeline_name):
    """HTTP server span (child of the caller's span) -> hayhooks.pipeline.run -> haystack.pipeline.run."""
    http = only(spans, f"POST {path}")
    assert http.kind == SPAN_KIND_SERVER and http.parent_span_id == parent_id
    assert http.attributes["http.route"] == path
    assert http.resource["service.name"] == "sourcebound-test"
    run = only(spans, "hayhooks.pipeline.run", **{"hayhooks.pipeline.name": pipeline_name})
    assert run.parent_span_id == http.span_id
    pipeline = only(spans, "haystack.pipeline.run")
    assert pipeline.parent_span_id == run.span_id
    return http, run, pipeline


class TestSearchTrace:
    def test_span_tree_and_tags(self, server, receiver):
        response, trace_id, parent_id = traced_post(
            server, "/search/run", {"query": QUERY, **IDENTITY, "k": 3, "search_mode": "hybrid"}
        )
        assert response.status_code == 200, response.text
        result = response.json()["result"]
        assert response.headers["x-trace-id"] == trace_id
        assert re.fullmatch(rf"00-{trace_id}-[0-9a-f]{{16}}-01", response.headers["traceresponse"])

        spans = trace_of(receiver, trace_id, "POST /search/run")
        http, run, pipeline = check_request_tree(spans, "/search/run", parent_id, "search")
        assert http.attributes["http.status_code"] == 200 and http.status_code != STATUS_ERROR
        components = components_of(spans, pipeline)
        assert set(components) == SEARCH_COMPONENTS  # one mode's retriever only: the router skips the others
        assert components["access_filter"].attributes["sourcebound.tenant_id"] == "acme"
        assert components["router"].attributes["sourcebound.search_mode"] == "hybrid"
        retrieved = components["hybrid_retriever"].attributes["sourcebound.documents.out"]
        selector = components["selector"].attributes
        assert selector["sourcebound.documents.in"] == retrieved and selector["sourcebound.documents.out"] <= 3
        similarity, guard = components["similarity"].attributes, components["guard"].attributes
        assert similarity["sourcebound.documents.in"] == selector["sourcebound.documents.out"]
        assert guard["sourcebound.documents.in"] == similarity["sourcebound.documents.out"]
        assert guard["sourcebound.access.violations"] == 0
        assert guard["sourcebound.documents.out"] == len(result["results"]) >= 1
        allowlist = components["domain_allowlist"].attributes  # no RAG_ALLOWLIST_DOMAINS: every result passes
        assert allowlist["sourcebound.documents.in"] == allowlist["sourcebound.documents.out"] == len(result["results"])
        assert allowlist["sourcebound.allowlist.excluded"] == 0
        assert components["results"].attributes["sourcebound.tokens.context"] == result["tokens_used"]
        assert run.attributes["sourcebound.results"] == len(result["results"])
        assert (
            run.attributes["sourcebound.tenant_id"] == "acme" and run.attributes["sourcebound.search_mode"] == "hybrid"
        )

    def test_every_log_line_of_the_request_names_its_trace(self, server, receiver):
        response, trace_id, _ = traced_post(server, "/search/run", {"query": QUERY, **IDENTITY})
        assert response.status_code == 200
        request_id = response.headers["x-request-id"]
        trace_of(receiver, trace_id, "POST /search/run")  # the request is over
        lines = [
            line for line in server.log_path.read_text(errors="replace").splitlines() if f"| {request_id} |" in line
        ]
        assert len(lines) >= 3, lines  # running the pipeline, completed, the access log line
        assert all(f"trace_id='{trace_id}'" in line for line in lines), lines


class TestRagTrace:
    def test_span_tree_and_tags(self, server, receiver, ollama):
        response, trace_id, parent_id = traced_post(server, "/rag/run", {"query": QUERY, **IDENTITY})
        assert response.status_code == 200, response.text
        result = response.json()["result"]
        assert response.headers["x-trace-id"] == trace_id

        spans = trace_of(receiver, trace_id, "POST /rag/run")
        _, run, pipeline = check_request_tree(spans, "/rag/run", parent_id, "rag")
        components = components_of(spans, pipeline)
        assert {*RAG_STEPS, "classifier", "answerer", "citations", "confidence", "router", "assembler"} <= set(
            components
        )
        # Counts chain from step to step: what a step passed on is what the next one received.
        for sender, receiving in zip(RAG_STEPS, RAG_STEPS[1:], strict=False):
            assert (
                components[sender].attributes["sourcebound.documents.out"]
                == components[receiving].attributes["sourcebound.documents.in"]
            ), (sender, receiving)
        budgeter = components["budgeter"].attributes
        assert budgeter["sourcebound.documents.out"] == result["context_chunks_used"] >= 1
        assert budgeter["sourcebound.tokens.context"] == result["context_tokens_used"]
        assert budgeter["sourcebound.model"].startswith("llama3.2")
        answerer = components["answerer"].attributes
        assert answerer["sourcebound.llm_called"] is True and answerer["sourcebound.model"] == result["model_used"]
        assert components["router"].attributes["sourcebound.action"] == result["action"]
        assert components["confidence"].attributes["sourcebound.confidence"] == result["confidence"]["overall"]
        assert components["citations"].attributes["sourcebound.citations"] == len(result["citations"])
        assert run.attributes["sourcebound.action"] == result["action"]
        assert run.attributes["sourcebound.confidence"] == result["confidence"]["overall"]
        assert run.attributes["sourcebound.tokens.context"] == result["context_tokens_used"]
        assert ollama.chat_requests(), "the trace says the LLM was called; so does the double"


class TestFailingRequest:
    def test_error_status_and_exception_event(self, server, receiver, ollama):
        ollama.models = []  # the model is not pulled: the first component to ask the LLM raises, a 503
        response, trace_id, parent_id = traced_post(server, "/rag/run", {"query": QUERY, **IDENTITY})
        error_of(response, 503, "model_unavailable")
        assert response.headers["x-trace-id"] == trace_id

        spans = trace_of(receiver, trace_id, "POST /rag/run")
        http, run, pipeline = check_request_tree(spans, "/rag/run", parent_id, "rag")
        assert http.status_code == STATUS_ERROR and http.attributes["http.status_code"] == 503
        assert run.status_code == STATUS_ERROR and run.attributes["hayhooks.success"] is False
        assert run.attributes["hayhooks.http.status_code"] == 503
        failed = [span for span in components_of(spans, pipeline).values() if span.status_code == STATUS_ERROR]
        assert [span.attributes["haystack.component.name"] for span in failed] == ["classifier"]
        for span in (failed[0], pipeline):
            assert span.status_code == STATUS_ERROR
            events = [attributes for name, attributes in span.events if name == "exception"]
            assert events and events[0]["exception.type"].endswith(("ModelUnavailableError", "PipelineRuntimeError"))
            assert "exception.stacktrace" in events[0]


class TestNoContentByDefault:
    def test_no_exported_value_carries_query_document_or_answer_text(self, server, receiver):
        # Every kind of request this module sends, then every span the server exported since it started.
        search, search_trace, _ = traced_post(server, "/search/run", {"query": QUERY, **IDENTITY})
        rag, rag_trace, _ = traced_post(server, "/rag/run", {"query": QUERY, **IDENTITY})
        chat = {"model": "rag", "messages": [{"role": "user", "content": QUERY}], **IDENTITY}
        completion, chat_trace, _ = traced_post(server, "/v1/chat/completions", chat)
        streamed, streamed_trace, _ = traced_post(server, "/v1/chat/completions", {**chat, "stream": True})
        assert search.status_code == 200 and rag.status_code == 200
        assert completion.status_code == 200 and streamed.status_code == 200 and "quokka" in streamed.text.lower()
        assert "quokka" in rag.json()["result"]["answer"].lower()  # the answer carries the document's text
        trace_of(receiver, search_trace, "POST /search/run")
        for trace_id in (chat_trace, streamed_trace):
            assert any(
                s.name == "haystack.pipeline.run" for s in trace_of(receiver, trace_id, "POST /v1/chat/completions")
            )
        spans = trace_of(receiver, rag_trace, "POST /rag/run") and receiver.snapshot()
        assert any(span.name == "POST /index/run" for span in spans)  # indexing was traced too
        assert len(spans) > 40
        for span in spans:
            assert not set(span.attributes) & {"haystack.pipeline.input_data", "haystack.component.input"}, span.name
            for text in span.strings():
                lowered = text.lower()
                leaked = [marker for marker in CONTENT_MARKERS if marker.lower() in lowered]
                assert not leaked, f"{span.name} exports {leaked}: {text[:300]}"
