"""
A chunk's contextual header: the short line that says where a chunk belongs (docs/contract.md, "Documents, chunks
and SourceIds"). A man page's option paragraph rarely names its program and a slide rarely names its deck, so a
chunk is embedded and keyword-indexed with this line before its text, and the reader counts its words as the
chunk's own.

Usage:
```python
context_header({"document_name": "dpkg(1)", "section": "OPTIONS"})   # "dpkg(1) › OPTIONS"
```
"""

from collections.abc import Mapping
from typing import Any

CONTEXT_HEADER_FIELD = "context_header"
INDEX_FORMAT_FIELD = "index_format"
# The format chunks are written in: chunks of another (or none) are re-indexed when their source is indexed again.
INDEX_FORMAT = "context-header-v1"
HEADER_SEPARATOR = " › "
# A header is a pointer, not a summary (and shares the embedder's 256 word pieces with the chunk): past this it
# is cut at a word boundary.
MAX_HEADER_CHARS = 120


def context_header(meta: Mapping[str, Any]) -> str:
    """
    The header of a chunk with this ``meta``: its document's name, then its section path, as far as they are
    known and differ (``""`` when neither is). A stored ``context_header`` wins, so a chunk reads as it was indexed.
    """
    stored = meta.get(CONTEXT_HEADER_FIELD)
    if isinstance(stored, str):
        return stored
    parts: list[str] = []
    for field in ("document_name", "section"):
        value = meta.get(field)
        text = " ".join(str(value).split()) if value is not None else ""
        if text and all(text.lower() != part.lower() for part in parts):
            parts.append(text)
    header = HEADER_SEPARATOR.join(parts)
    if len(header) > MAX_HEADER_CHARS:
        header = header[:MAX_HEADER_CHARS].rsplit(" ", 1)[0]
    return header
