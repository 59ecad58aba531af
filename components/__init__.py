"""
sourcebound's Haystack components, grouped by kind as Haystack groups its own (``components/<kind>/``).

- ``core``: the rules every layer shares (access rule, document identity, request/response models, errors,
  text analysis, prompts), without I/O; importing it, or anything here, has no side effects.
- ``runtime``: process set-up (offline model files, typed environment variables), just above ``core``.
- ``stores``: the service's state outside the vector store (API keys, tag owners, glossaries, conversations,
  records, sentence vectors, source sync state) over the state layer ``stores/state``.
- ``services``: indexing, querying, conversations, erasure, source jobs and the request handling above the
  components.
- one folder per component kind: converters, preprocessors, embedders, retrievers, builders, filters, scorers,
  generators, extractors, routers, ... and ``document_stores/qdrant_edge``.

Entry points (server, CLI, evaluation, benchmarks, tests) call
``components.runtime.offline.configure_offline()`` before they load a pipeline.
"""
