"""Components that keep a subset of the retrieved documents (dedup, per-document limit, token budget)."""
