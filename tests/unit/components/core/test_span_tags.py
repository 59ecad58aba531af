"""``components.core.span_tags``: tags on the running span, nothing when tracing is off."""

import pytest
from haystack import tracing
from haystack_integrations.tracing.opentelemetry import OpenTelemetryTracer
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from components.core.span_tags import DOCUMENTS_IN, DOCUMENTS_OUT, documents_in_out, tag_span

pytestmark = pytest.mark.unit


@pytest.fixture
def exporter():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.enable_tracing(OpenTelemetryTracer(provider.get_tracer("test")))
    yield exporter
    tracing.disable_tracing()
    provider.shutdown()


class TestTagSpan:
    def test_tags_the_current_span_and_skips_none(self, exporter):
        with tracing.tracer.trace("step"):
            tag_span(documents_in_out([1, 2, 3], [1]), {"sourcebound.action": "CITE", "sourcebound.llm": None})
        (span,) = exporter.get_finished_spans()
        assert dict(span.attributes) == {DOCUMENTS_IN: 3, DOCUMENTS_OUT: 1, "sourcebound.action": "CITE"}

    def test_nothing_outside_a_span(self, exporter):
        tag_span({"sourcebound.results": 1})  # no current span: no error, nothing exported
        assert exporter.get_finished_spans() == ()

    def test_noop_when_tracing_is_off(self):
        assert not tracing.is_tracing_enabled()
        with tracing.tracer.trace("step") as span:
            tag_span({"sourcebound.results": 1})
        assert span.raw_span() is span  # Haystack's null span: nothing recorded anywhere
