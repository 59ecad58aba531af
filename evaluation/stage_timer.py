"""
Per-component wall time of Haystack pipeline runs, through Haystack's tracing hook.

Haystack opens a ``haystack.component.run`` span around every component it runs; a
:class:`StageTimer` installed as the tracer sums their durations by component name.
Nothing in the pipelines changes, so the evaluated YAML is exactly the served YAML.

Usage:

```python
with StageTimer.installed() as timer:
    timer.reset()
    pipeline.run(data)
    print(timer.stages)   # {"retriever": 3.1, "answerer": 1.2, ...} in milliseconds
```
"""

import contextlib
import time
from collections.abc import Iterator
from typing import Any

from haystack import tracing
from haystack.tracing import Span, Tracer

COMPONENT_SPAN = "haystack.component.run"
COMPONENT_NAME_TAG = "haystack.component.name"


class _TimedSpan(Span):
    def __init__(self, tags: dict[str, Any] | None) -> None:
        self.tags = dict(tags or {})

    def set_tag(self, key: str, value: Any) -> None:
        self.tags[key] = value


class StageTimer(Tracer):
    """A Haystack tracer that records milliseconds per component name (summed over visits)."""

    def __init__(self) -> None:
        self.stages: dict[str, float] = {}
        self._current: list[_TimedSpan] = []

    def reset(self) -> None:
        self.stages = {}

    @contextlib.contextmanager
    def trace(
        self, operation_name: str, tags: dict[str, Any] | None = None, parent_span: Span | None = None
    ) -> Iterator[Span]:
        span = _TimedSpan(tags)
        self._current.append(span)
        started = time.perf_counter()
        try:
            yield span
        finally:
            elapsed_ms = (time.perf_counter() - started) * 1000
            self._current.pop()
            if operation_name == COMPONENT_SPAN:
                name = str(span.tags.get(COMPONENT_NAME_TAG, "?"))
                self.stages[name] = self.stages.get(name, 0.0) + elapsed_ms

    def current_span(self) -> Span | None:
        return self._current[-1] if self._current else None

    @classmethod
    @contextlib.contextmanager
    def installed(cls) -> Iterator["StageTimer"]:
        """Install a timer as Haystack's tracer for the block, then restore the previous tracer."""
        timer = cls()
        previous = tracing.tracer.actual_tracer
        tracing.enable_tracing(timer)
        try:
            yield timer
        finally:
            tracing.enable_tracing(previous)
