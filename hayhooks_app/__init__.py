"""The Hayhooks application: PipelineWrappers over the YAML pipelines, plus health, metrics and identity."""

import components  # noqa: F401  (offline set-up before any Haystack import)
