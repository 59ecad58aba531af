"""Benchmarks: `make bench-store` (store level) and `make bench` (everything)."""

import components  # noqa: F401
