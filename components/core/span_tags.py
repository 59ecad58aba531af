"""
Span tags that components add to their own Haystack span: counts, modes, scores, never content.

Haystack opens one span per component run (``haystack.component.run``); a component tags it
through ``haystack.tracing``'s current span, as Haystack's own components do. The tags say
what a step did (how many documents came in and went out, tokens, the action taken) so an
operator can see where a request lost its chunks; query, document and answer text never go
into a tag (docs/operations.md, "Tracing"). With tracing off Haystack's tracer is a null
tracer and :func:`tag_span` returns at once.

Tag names: ``sourcebound.`` followed by what is counted, e.g. ``sourcebound.documents.in``.

Usage (in a component's ``run``):

```python
from components.core.span_tags import documents_in_out, tag_span

tag_span(documents_in_out(documents, kept), {"sourcebound.documents.dropped": dropped})
```
"""

from collections.abc import Mapping, Sized
from typing import Any

from haystack import tracing

PREFIX = "sourcebound."
DOCUMENTS_IN = "sourcebound.documents.in"
DOCUMENTS_OUT = "sourcebound.documents.out"


def tag_span(*tags: Mapping[str, Any]) -> None:
    """
    Set tags on the current span (the running component's); nothing when tracing is off.

    :param tags: Mappings of tag name to a number, bool or short label; ``None`` values are skipped.
    """
    if not tracing.is_tracing_enabled():
        return
    span = tracing.tracer.current_span()
    if span is None:
        return
    for mapping in tags:
        for key, value in mapping.items():
            if value is not None:
                span.set_tag(key, value)


def documents_in_out(documents_in: Sized, documents_out: Sized) -> dict[str, int]:
    """``sourcebound.documents.in`` / ``.out``: how many documents a step received and passed on."""
    return {DOCUMENTS_IN: len(documents_in), DOCUMENTS_OUT: len(documents_out)}
