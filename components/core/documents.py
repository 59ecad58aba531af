"""
``evolve``: ``dataclasses.replace`` for a Haystack ``Document``, ~10x cheaper.

Why: Haystack's ``Document`` constructor runs through a metaclass, tracks the instance in a set while it
initialises, checks every field assignment for in-place mutation and recomputes nothing it was given: ~7 µs per
copy. The query path makes one per stored sentence (the sentence vectors) and per hybrid result, a hundred or more
per ``/rag/run`` (bench/README.md, "Stage profile").

What: the new Document gets the old one's attributes and the changed ones directly (the attributes are shared, as
``dataclasses.replace`` shares them), with what ``Document.__post_init__`` would do to the changed fields: a NumPy
embedding becomes a list, ``content`` must be a string or ``None``. An ``id`` is never recomputed: ``replace``
keeps it too, since the old Document always has one.

Usage:

```python
from components.core.documents import evolve

embedded = evolve(sentence, embedding=[0.1, 0.2])   # == dataclasses.replace(sentence, embedding=[0.1, 0.2])
```
"""

from dataclasses import fields, replace
from typing import Any

from haystack import Document
from numpy import ndarray

_FIELDS = frozenset(field.name for field in fields(Document))


def evolve(document: Document, **changes: Any) -> Document:
    """
    ``dataclasses.replace(document, **changes)`` without the constructor's per-field bookkeeping.

    :param document: A ``haystack.Document`` (a subclass goes through ``dataclasses.replace``).
    :param changes: New values of Document fields.
    :returns: A new Document equal to what ``dataclasses.replace`` returns.
    :raises TypeError: For a name that is not a Document field (as ``dataclasses.replace``).
    :raises ValueError: For ``content`` that is neither a string nor ``None`` (as ``Document``).
    """
    if type(document) is not Document or not _FIELDS.issuperset(changes):
        return replace(document, **changes)
    content = changes.get("content")
    if content is not None and not isinstance(content, str):
        raise ValueError("The `content` field must be a string or None.")
    if isinstance(changes.get("embedding"), ndarray):
        changes["embedding"] = changes["embedding"].tolist()
    clone = Document.__new__(Document)
    state = clone.__dict__
    state.update(document.__dict__)
    state.update(changes)
    return clone
