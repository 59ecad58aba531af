"""Benchmarks: `make bench-store` (store level) and `make bench` (everything)."""

from components.runtime.offline import configure_offline

# Benchmarks are an entry point: offline before Haystack, torch or tiktoken load anything.
configure_offline()
