"""
``hayhooks_app.tracing`` in-process, with the OpenTelemetry SDK's ``InMemorySpanExporter``: the content
guard around Haystack's tracer (a real pipeline of our components), the span tree and error recording,
the environment switches, the FastAPI instrumentation toggle, the response headers and the log patcher.
"""

import pytest
from fastapi import FastAPI
from haystack import Document, Pipeline, tracing
from haystack.core.errors import PipelineRuntimeError
from haystack_integrations.tracing.opentelemetry import OpenTelemetryTracer
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, StatusCode, TraceFlags

from components.filters.duplicate_chunk_filter import DuplicateChunkFilter
from components.filters.per_document_limiter import PerDocumentLimiter
from components.scorers.dense_similarity_scorer import DenseSimilarityScorer
from hayhooks_app.tracing import (
    CONTENT_TAGS,
    TRACE_ID_HEADER,
    ContentGuardTracer,
    TracingConfigError,
    _trace_response_propagator,
    add_trace_ids,
    build_exporter,
    content_tracing_enabled,
    instrument_app,
    otlp_endpoint,
)

pytestmark = pytest.mark.unit

SECRET = "Margaret's salary is 81,250 guilders"
QUERY = "what does margaret earn"


@pytest.fixture
def exporter():
    """Haystack traced into an in-memory exporter through the content guard; restored afterwards."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    content = tracing.tracer.is_content_tracing_enabled
    tracing.tracer.is_content_tracing_enabled = False
    tracing.enable_tracing(ContentGuardTracer(OpenTelemetryTracer(provider.get_tracer("test"))))
    yield exporter
    tracing.disable_tracing()
    tracing.tracer.is_content_tracing_enabled = content
    provider.shutdown()


def documents() -> list[Document]:
    return [
        Document(id="a", content=SECRET, embedding=[1.0, 0.0], meta={"document_id": "payroll"}),
        Document(id="b", content=SECRET, embedding=[0.9, 0.1], meta={"document_id": "payroll"}),  # a duplicate
        Document(id="c", content="Office hours are nine to five.", embedding=[0.0, 1.0], meta={"document_id": "hr"}),
        Document(id="d", content="Badges are blue.", embedding=[-1.0, 0.0], meta={"document_id": "hr"}),
    ]


def pipeline() -> Pipeline:
    pipe = Pipeline()
    pipe.add_component("similarity", DenseSimilarityScorer(min_similarity=0.0))
    pipe.add_component("dedup", DuplicateChunkFilter())
    pipe.add_component("limiter", PerDocumentLimiter(max_chunks_per_doc=3, top_k=5))
    pipe.connect("similarity.documents", "dedup.documents")
    pipe.connect("dedup.documents", "limiter.documents")
    return pipe


def run(pipe: Pipeline, **limiter) -> dict:
    return pipe.run(
        {"similarity": {"documents": documents(), "query_embedding": [1.0, 0.0]}, "limiter": limiter},
        include_outputs_from={"dedup"},
    )


def by_name(exporter: InMemorySpanExporter) -> dict:
    """Finished spans by component name (component spans) or span name (the others)."""
    return {span.attributes.get("haystack.component.name", span.name): span for span in exporter.get_finished_spans()}


def exported_strings(exporter: InMemorySpanExporter) -> list[str]:
    texts = []
    for span in exporter.get_finished_spans():
        texts.append(span.name)
        texts.extend(str(value) for value in span.attributes.values())
        for event in span.events:
            texts.extend(str(value) for value in event.attributes.values())
    return texts


class TestContentGuardTracer:
    def test_span_tree_and_counts(self, exporter):
        result = run(pipeline())
        spans = by_name(exporter)
        assert set(spans) == {"haystack.pipeline.run", "similarity", "dedup", "limiter"}
        root = spans["haystack.pipeline.run"]
        assert root.parent is None
        for name in ("similarity", "dedup", "limiter"):
            assert spans[name].parent.span_id == root.context.span_id
            assert spans[name].context.trace_id == root.context.trace_id
        # d (cosine -1) falls below 0.0; b is a duplicate of a.
        assert spans["similarity"].attributes["sourcebound.documents.in"] == 4
        assert spans["similarity"].attributes["sourcebound.documents.out"] == 3
        assert spans["similarity"].attributes["sourcebound.documents.dropped"] == 1
        assert spans["dedup"].attributes["sourcebound.documents.in"] == 3
        assert spans["dedup"].attributes["sourcebound.documents.out"] == len(result["dedup"]["documents"]) == 2
        assert spans["limiter"].attributes["sourcebound.documents.out"] == len(result["limiter"]["documents"]) == 2
        assert spans["limiter"].attributes["sourcebound.top_k"] == 5

    def test_no_content_by_default(self, exporter):
        pipe = Pipeline()
        pipe.add_component("dedup", DuplicateChunkFilter())
        with tracing.tracer.trace("request", tags={"haystack.pipeline.input_data": {"query": QUERY}}) as span:
            span.set_tag("haystack.component.input", {"query": QUERY})
            span.set_content_tag("haystack.component.output", {"query": QUERY})
            pipe.run({"dedup": {"documents": documents()}})
        texts = exported_strings(exporter)
        assert len(exporter.get_finished_spans()) == 3
        assert not [text for text in texts if SECRET in text or QUERY in text]
        for span in exporter.get_finished_spans():
            assert not set(span.attributes) & CONTENT_TAGS

    def test_content_when_switched_on(self, exporter):
        tracing.tracer.is_content_tracing_enabled = True
        run(pipeline())
        texts = exported_strings(exporter)
        assert any(SECRET in text for text in texts)  # component input and output, pipeline input
        pipeline_span = [s for s in exporter.get_finished_spans() if s.name == "haystack.pipeline.run"][0]
        assert SECRET in pipeline_span.attributes["haystack.pipeline.input_data"]

    def test_failing_component_records_error_and_exception(self, exporter):
        with pytest.raises(PipelineRuntimeError):
            run(pipeline(), top_k=0)
        spans = by_name(exporter)
        for name in ("limiter", "haystack.pipeline.run"):
            assert spans[name].status.status_code == StatusCode.ERROR
            events = [event for event in spans[name].events if event.name == "exception"]
            assert events and "top_k must be a positive integer" in events[0].attributes["exception.message"]
        assert spans["dedup"].status.status_code != StatusCode.ERROR

    def test_current_span_is_guarded(self, exporter):
        with tracing.tracer.trace("outer"):
            current = tracing.tracer.current_span()
            current.set_tag("haystack.component.output", QUERY)
            current.set_tag("sourcebound.results", 3)
        (span,) = exporter.get_finished_spans()
        assert dict(span.attributes) == {"sourcebound.results": 3}


class TestEnvironment:
    def test_off_without_an_endpoint(self):
        assert otlp_endpoint({}) is None
        assert otlp_endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}) is None

    def test_endpoint_traces_variable_first(self):
        environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b"}
        assert otlp_endpoint(environ) == "http://b"
        assert otlp_endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318"}) == "http://a:4318"

    def test_sdk_disabled_turns_it_off(self):
        assert otlp_endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_SDK_DISABLED": "true"}) is None

    def test_content_switch(self):
        assert content_tracing_enabled({}) is False
        assert content_tracing_enabled({"HAYSTACK_CONTENT_TRACING_ENABLED": "false"}) is False
        assert content_tracing_enabled({"HAYSTACK_CONTENT_TRACING_ENABLED": "TRUE"}) is True

    def test_exporter_by_protocol(self):
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as Grpc
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as Http

        assert isinstance(build_exporter({}), Http)
        assert isinstance(build_exporter({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}), Grpc)
        assert isinstance(build_exporter({"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}), Http)

    def test_unknown_protocol_names_the_variable(self):
        with pytest.raises(TracingConfigError, match="OTEL_EXPORTER_OTLP_PROTOCOL='http/json'"):
            build_exporter({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})


class TestInstrumentApp:
    def test_on_then_off(self):
        app = FastAPI()
        instrument_app(app, enabled=True)
        assert app._is_instrumented_by_opentelemetry is True
        instrument_app(app, enabled=False)
        assert app._is_instrumented_by_opentelemetry is False
        assert app.middleware_stack is None  # still buildable: middleware can be added until start-up
        app.add_middleware(type("Noop", (), {"__init__": lambda self, app: None}))

    def test_off_leaves_an_uninstrumented_app_alone(self):
        app = FastAPI()
        instrument_app(app, enabled=False)
        assert not getattr(app, "_is_instrumented_by_opentelemetry", False)


TRACE_ID = 0x0AF7651916CD43DD8448EB211C80319C
SPAN_ID = 0xB7AD6B7169203331


def span_context() -> SpanContext:
    return SpanContext(TRACE_ID, SPAN_ID, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))


class TestResponseHeaders:
    def test_traceresponse_and_trace_id(self):
        carrier: dict[str, str] = {}
        context = trace.set_span_in_context(NonRecordingSpan(span_context()))
        _trace_response_propagator().inject(carrier, context=context)
        assert carrier["traceresponse"] == "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        assert carrier[TRACE_ID_HEADER] == "0af7651916cd43dd8448eb211c80319c"
        assert "x-trace-id" in carrier["access-control-expose-headers"]

    def test_nothing_without_a_span(self):
        carrier: dict[str, str] = {}
        _trace_response_propagator().inject(carrier)
        assert carrier == {}


class TestLogPatcher:
    def test_ids_of_the_current_span(self):
        record = {"extra": {"request_id": "abc"}}
        with trace.use_span(NonRecordingSpan(span_context())):
            add_trace_ids(record)
        assert record["extra"] == {
            "request_id": "abc",
            "trace_id": "0af7651916cd43dd8448eb211c80319c",
            "span_id": "b7ad6b7169203331",
        }

    def test_nothing_outside_a_span(self):
        record = {"extra": {}}
        add_trace_ids(record)
        assert record["extra"] == {}
