"""Evaluation of retrieval and grounding with ragas and our own metrics."""

import components  # noqa: F401  (offline set-up before ragas or Haystack are imported)
