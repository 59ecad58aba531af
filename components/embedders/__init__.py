"""Embedders (BM25 sparse vectors for qdrant-haystack)."""
