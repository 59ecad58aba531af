"""
A local OTLP/HTTP trace receiver, for the tests that check what the real server exports.

``OtlpReceiver`` is a real HTTP server (threaded ``http.server`` on 127.0.0.1, a free port) that
accepts ``POST /v1/traces`` with an OTLP protobuf body (gzip or not), as the SDK's OTLP/HTTP
exporter sends it, decodes it with ``opentelemetry-proto`` and keeps every span as a
:class:`ReceivedSpan` (hex ids, plain attribute values, events).

Usage:

```python
with OtlpReceiver() as receiver:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    ...  # start the server with env, send a request
    spans = receiver.wait_for(lambda spans: any(s.name == "POST /search/run" for s in spans))
```
"""

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from bench.service_bench import OtlpSink

# opentelemetry.proto.trace.v1.Status.StatusCode
STATUS_UNSET, STATUS_OK, STATUS_ERROR = 0, 1, 2
SPAN_KIND_SERVER = 2


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {item.key: _value(item.value) for item in value.kvlist_value.values}
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, kind) if kind else None


def _attributes(items) -> dict[str, Any]:
    return {item.key: _value(item.value) for item in items}


@dataclass
class ReceivedSpan:
    """One exported span, decoded."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str | None
    kind: int
    status_code: int
    status_message: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    resource: dict[str, Any] = field(default_factory=dict)

    def strings(self) -> list[str]:
        """Every text this span exports: name, status message, attribute and event values, resource values."""
        texts = [self.name, self.status_message]
        for attributes in (self.attributes, self.resource, *(attrs for _, attrs in self.events)):
            texts.extend(str(value) for value in attributes.values())
        texts.extend(name for name, _ in self.events)
        return texts


class OtlpReceiver(OtlpSink):
    """The benchmark's local OTLP/HTTP endpoint, keeping every span it receives, decoded."""

    def __init__(self):
        super().__init__()
        self.received: list[ReceivedSpan] = []

    def handle(self, request: ExportTraceServiceRequest) -> None:
        super().handle(request)
        self._record(request)

    def _record(self, request: ExportTraceServiceRequest) -> None:
        decoded = []
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    decoded.append(
                        ReceivedSpan(
                            name=span.name,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_span_id=span.parent_span_id.hex() or None,
                            kind=span.kind,
                            status_code=span.status.code,
                            status_message=span.status.message,
                            attributes=_attributes(span.attributes),
                            events=[(event.name, _attributes(event.attributes)) for event in span.events],
                            resource=resource,
                        )
                    )
        with self._lock:
            self.received.extend(decoded)

    def snapshot(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self.received)

    def trace(self, trace_id: str) -> list[ReceivedSpan]:
        """The spans received so far of one trace."""
        return [span for span in self.snapshot() if span.trace_id == trace_id]

    def wait_for(self, condition: Callable[[list[ReceivedSpan]], bool], timeout: float = 10.0) -> list[ReceivedSpan]:
        """Poll until ``condition(spans)`` holds; fail with what arrived otherwise."""
        deadline = time.monotonic() + timeout
        while True:
            spans = self.snapshot()
            if condition(spans):
                return spans
            if time.monotonic() > deadline:
                names = sorted({span.name for span in spans})
                raise AssertionError(f"The spans expected did not arrive within {timeout} s; got {names}")
            time.sleep(0.05)


def render_tree(spans: list[ReceivedSpan], skip: tuple[str, ...] = ("haystack.component.input_spec",
                "haystack.component.output_spec", "haystack.component.fully_qualified_type",
                "haystack.component.input_types")) -> str:  # fmt: skip
    """One trace as indented text (parents before children, attributes after each name), for reading."""
    by_parent: dict[str | None, list[ReceivedSpan]] = {}
    ids = {span.span_id for span in spans}
    for span in spans:
        by_parent.setdefault(span.parent_span_id if span.parent_span_id in ids else None, []).append(span)
    lines: list[str] = []

    def walk(parent: str | None, depth: int) -> None:
        for span in by_parent.get(parent, []):
            status = " ERROR" if span.status_code == STATUS_ERROR else ""
            tags = ", ".join(f"{k}={v}" for k, v in span.attributes.items() if k not in skip)
            lines.append(f"{'  ' * depth}{span.name}{status} [{tags}]")
            walk(span.span_id, depth + 1)

    walk(None, 0)
    return "\n".join(lines)
