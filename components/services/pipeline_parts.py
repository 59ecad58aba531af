"""
Finding the parts a loaded pipeline is made of: its document store, its tag directory, a component by kind.
The wiring (``hayhooks_app.container``) and the health check use these instead of knowing the YAML.

Usage:

```python
from components.services.pipeline_parts import find_component, find_document_store

store = find_document_store(indexing_pipeline)
embedder = find_component(search_pipeline, lambda c: type(c).__name__.endswith("TextEmbedder"))
```
"""

from collections.abc import Callable
from typing import Any

from haystack import Pipeline


def find_component(pipeline: Pipeline, predicate: Callable[[Any], bool]) -> Any | None:
    """The first component of ``pipeline`` for which ``predicate`` holds."""
    for _name, component in pipeline.walk():
        if predicate(component):
            return component
    return None


def find_document_store(pipeline: Pipeline) -> Any | None:
    """The document store used by a pipeline's writer or retriever."""
    for _name, component in pipeline.walk():
        for attribute in ("document_store", "_document_store"):
            store = getattr(component, attribute, None)
            if store is not None and hasattr(store, "count_documents"):
                return store
    return None


def find_tag_directory(pipeline: Pipeline) -> Any | None:
    """The tag-owner directory (``TagDirectory``) a pipeline's router reads, or ``None``."""
    for _name, component in pipeline.walk():
        for attribute in ("tag_directory", "directory", "_directory"):
            candidate = getattr(component, attribute, None)
            if candidate is not None and type(candidate).__name__ == "TagDirectory":
                return candidate
    return None
