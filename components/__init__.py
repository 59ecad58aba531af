"""
sourcebound's Haystack components, grouped by kind as Haystack groups its own (``components/<kind>/``).

- ``core``: the rules every layer shares (access rule, document identity, request/response models, errors,
  text analysis, prompts); importing it, or anything here, has no side effects.
- ``services``: indexing, querying and document lifecycle above the components.
- one folder per component kind: converters, preprocessors, embedders, retrievers, builders, filters, scorers,
  generators, extractors, routers, ... and ``document_stores/qdrant_edge``.

Entry points (server, CLI, evaluation, benchmarks, tests) call
``components.core.runtime.configure_offline()`` before they load a pipeline.
"""
