"""The Hayhooks application: PipelineWrappers over the YAML pipelines, plus health, metrics and identity."""

from components.runtime.offline import configure_offline

# The server and the CLI are entry points: offline set-up before any Haystack import.
configure_offline()
