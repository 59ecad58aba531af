"""Evaluation of retrieval and grounding with ragas and our own metrics."""

from components.runtime.offline import configure_offline

# Evaluation is an entry point: offline set-up before ragas or Haystack are imported.
configure_offline()
