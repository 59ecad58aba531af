"""
OpenTelemetry tracing of the service, configured by the standard ``OTEL_*`` environment variables.

Off unless ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set (and
``OTEL_SDK_DISABLED`` is not ``true``): then nothing is installed, the app carries no tracing
middleware and Haystack keeps its null tracer. When on, :func:`configure_tracing` sets up

* an SDK ``TracerProvider``: resource ``service.name`` from ``OTEL_SERVICE_NAME`` (default
  ``sourcebound``) plus ``OTEL_RESOURCE_ATTRIBUTES``; the sampler from ``OTEL_TRACES_SAMPLER`` /
  ``OTEL_TRACES_SAMPLER_ARG``; a batch processor (``OTEL_BSP_*``) exporting over OTLP, HTTP/protobuf
  or gRPC after ``OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL``;
* Haystack's tracing with the ``opentelemetry-haystack`` tracer: a span per pipeline run and per
  component, under Hayhooks' ``hayhooks.pipeline.run`` span, under the HTTP server span that the
  FastAPI instrumentation opens from the incoming ``traceparent`` (:func:`instrument_app`);
* a response propagator: every response carries ``traceresponse`` (W3C) and ``x-trace-id``.

Content stays out of spans unless ``HAYSTACK_CONTENT_TRACING_ENABLED=true`` (Haystack's switch):
Haystack tags a pipeline span with its whole input (the query text) as an ordinary tag, so
:class:`ContentGuardTracer` drops the content tags (:data:`CONTENT_TAGS`) while the switch is off.
Components tag their spans with counts (``components.core.span_tags``).

:func:`add_trace_ids` is a loguru patcher that puts ``trace_id`` and ``span_id`` on every log line
written while a span is current (``python -m hayhooks_app serve`` installs it when tracing is on).

Usage:

```python
from hayhooks_app.tracing import configure_tracing, instrument_app

provider = configure_tracing()  # None when no OTLP endpoint is configured
app = create_app()
instrument_app(app, enabled=provider is not None)
```
"""

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from haystack import tracing
from haystack.tracing import Span, Tracer

from hayhooks_app.config import ConfigError, service_version

logger = logging.getLogger(__name__)

DEFAULT_SERVICE_NAME = "sourcebound"
TRACER_NAME = "sourcebound"
TRACE_ID_HEADER = "x-trace-id"
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
PROTOCOL_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
CONTENT_SWITCH = "HAYSTACK_CONTENT_TRACING_ENABLED"
# Tags holding request or document content: Haystack's pipeline input/output and component input/output.
CONTENT_TAGS = frozenset(
    {
        "haystack.pipeline.input_data",
        "haystack.pipeline.output_data",
        "haystack.component.input",
        "haystack.component.output",
    }
)
# Spans per message sent or received would double the spans of every request for nothing an operator reads.
EXCLUDED_ASGI_SPANS = ["send", "receive"]

_provider: Any = None


class TracingConfigError(ConfigError):
    """An ``OTEL_*`` variable has a value the service cannot use; the message names it."""


def _first_set(environ: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    for name in names:
        value = (environ.get(name) or "").strip()
        if value:
            return value
    return None


def otlp_endpoint(environ: Mapping[str, str] | None = None) -> str | None:
    """The OTLP traces endpoint configured, or ``None`` (tracing off); ``OTEL_SDK_DISABLED=true`` turns it off."""
    environ = os.environ if environ is None else environ
    if (environ.get("OTEL_SDK_DISABLED") or "").strip().lower() == "true":
        return None
    return _first_set(environ, ENDPOINT_VARIABLES)


def content_tracing_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Haystack's content switch: ``HAYSTACK_CONTENT_TRACING_ENABLED=true``."""
    environ = os.environ if environ is None else environ
    return (environ.get(CONTENT_SWITCH) or "").strip().lower() == "true"


def build_exporter(environ: Mapping[str, str] | None = None):
    """
    The OTLP span exporter for ``OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL``: ``http/protobuf`` (default) or ``grpc``.
    The exporter reads its endpoint, headers, timeout and compression from the ``OTEL_EXPORTER_OTLP_*`` variables.

    :raises TracingConfigError: On another protocol.
    """
    environ = os.environ if environ is None else environ
    protocol = (_first_set(environ, PROTOCOL_VARIABLES) or "http/protobuf").lower()
    if protocol in ("http/protobuf", "http"):
        # requests imports these on its first request, which would be in the exporter's thread while Hayhooks
        # iterates sys.modules to load the wrappers ("dictionary changed size during iteration" at start-up).
        import netrc  # noqa: F401
        import shlex  # noqa: F401

        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter

        return GrpcSpanExporter()
    raise TracingConfigError(
        f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not supported: use 'http/protobuf' (default) or 'grpc'."
    )


class _GuardedSpan(Span):
    """A Haystack span that refuses content tags while content tracing is off."""

    def __init__(self, span: Span):
        self._span = span

    def set_tag(self, key: str, value: Any) -> None:
        if key in CONTENT_TAGS and not tracing.tracer.is_content_tracing_enabled:
            return
        self._span.set_tag(key, value)

    def set_content_tag(self, key: str, value: Any) -> None:
        if tracing.tracer.is_content_tracing_enabled:
            self._span.set_tag(key, value)

    def raw_span(self) -> Any:
        return self._span.raw_span()

    def get_correlation_data_for_logs(self) -> dict[str, Any]:
        return self._span.get_correlation_data_for_logs()


class ContentGuardTracer(Tracer):
    """
    A Haystack tracer around another that keeps content out of spans unless content tracing is on.

    :param delegate: The tracer that records spans (the ``opentelemetry-haystack`` tracer).
    """

    def __init__(self, delegate: Tracer):
        self.delegate = delegate

    @contextmanager
    def trace(
        self, operation_name: str, tags: dict[str, Any] | None = None, parent_span: Span | None = None
    ) -> Iterator[Span]:
        if tags and not tracing.tracer.is_content_tracing_enabled:
            tags = {key: value for key, value in tags.items() if key not in CONTENT_TAGS}
        if isinstance(parent_span, _GuardedSpan):
            parent_span = parent_span._span
        with self.delegate.trace(operation_name, tags=tags, parent_span=parent_span) as span:
            yield _GuardedSpan(span)

    def current_span(self) -> Span | None:
        span = self.delegate.current_span()
        return None if span is None else _GuardedSpan(span)


def _trace_response_propagator():
    from opentelemetry.instrumentation.propagators import TraceResponsePropagator, default_setter
    from opentelemetry.trace import INVALID_SPAN_CONTEXT, format_trace_id, get_current_span

    class TraceIdResponsePropagator(TraceResponsePropagator):
        """``traceresponse`` (W3C Trace Context, level 2) and ``x-trace-id`` (the bare id) on every response."""

        def inject(self, carrier, context=None, setter=default_setter) -> None:
            span_context = get_current_span(context).get_span_context()
            if span_context == INVALID_SPAN_CONTEXT:
                return
            super().inject(carrier, context=context, setter=setter)
            setter.set(carrier, TRACE_ID_HEADER, format_trace_id(span_context.trace_id))
            setter.set(carrier, "access-control-expose-headers", TRACE_ID_HEADER)

    return TraceIdResponsePropagator()


def configure_tracing(exporter: Any = None, environ: Mapping[str, str] | None = None) -> Any:
    """
    Set up tracing for this process when an OTLP endpoint is configured (once; later calls return the same).

    :param exporter: A span exporter to use instead of OTLP (tests pass the SDK's ``InMemorySpanExporter``);
        given, tracing is on whatever the environment says.
    :param environ: The environment to read (``os.environ`` when omitted).
    :returns: The SDK ``TracerProvider``, or ``None`` when tracing is off.
    :raises TracingConfigError: On an unsupported OTLP protocol.
    """
    global _provider
    if _provider is not None:
        return _provider
    environ = os.environ if environ is None else environ
    if exporter is None:
        endpoint = otlp_endpoint(environ)
        if endpoint is None:
            return None
        exporter = build_exporter(environ)
    else:
        endpoint = type(exporter).__name__

    from haystack_integrations.tracing.opentelemetry import OpenTelemetryTracer
    from opentelemetry import trace
    from opentelemetry.instrumentation.propagators import set_global_response_propagator
    from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    # Resource.create merges OTEL_RESOURCE_ATTRIBUTES; our attributes win, so the service name is read here.
    resource = Resource.create(
        {
            SERVICE_NAME: (environ.get("OTEL_SERVICE_NAME") or "").strip() or DEFAULT_SERVICE_NAME,
            SERVICE_VERSION: service_version(),
        }
    )
    provider = TracerProvider(resource=resource)  # sampler from OTEL_TRACES_SAMPLER / _ARG
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    tracing.tracer.is_content_tracing_enabled = content_tracing_enabled(environ)
    tracing.enable_tracing(ContentGuardTracer(OpenTelemetryTracer(provider.get_tracer(TRACER_NAME))))
    set_global_response_propagator(_trace_response_propagator())
    _provider = provider
    logger.info(
        "Tracing on: exporting to %s as service %r (content tracing %s).",
        endpoint,
        resource.attributes[SERVICE_NAME],
        "ON" if tracing.tracer.is_content_tracing_enabled else "off",
    )
    return provider


def tracing_provider() -> Any:
    """The provider :func:`configure_tracing` installed, or ``None``."""
    return _provider


def shutdown_tracing() -> None:
    """Export what is buffered and stop exporting (at server shutdown)."""
    if _provider is not None:
        _provider.shutdown()


def instrument_app(app: Any, enabled: bool) -> None:
    """
    Put the FastAPI instrumentation (one server span per request, ``traceparent`` honoured) on ``app`` when
    ``enabled``; take it off when not. Hayhooks instruments every app it builds once the instrumentation
    is installed, whether or not anything exports: with tracing off that middleware would be pure cost.
    Call after every ``add_middleware``.
    """
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

    instrumented = getattr(app, "_is_instrumented_by_opentelemetry", False)
    if enabled and not instrumented:
        FastAPIInstrumentor.instrument_app(app, exclude_spans=EXCLUDED_ASGI_SPANS)
    elif not enabled and instrumented:
        FastAPIInstrumentor.uninstrument_app(app)
        # uninstrument_app builds the middleware stack now; leave it to be built at start-up, as usual.
        app.middleware_stack = None


def add_trace_ids(record: dict[str, Any]) -> None:
    """A loguru patcher: ``trace_id`` and ``span_id`` of the current span into the record's ``extra``."""
    from opentelemetry.trace import format_span_id, format_trace_id, get_current_span

    span_context = get_current_span().get_span_context()
    if span_context.is_valid:
        record["extra"]["trace_id"] = format_trace_id(span_context.trace_id)
        record["extra"]["span_id"] = format_span_id(span_context.span_id)
