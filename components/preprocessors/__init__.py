"""Preprocessors: token chunking and chunk metadata."""
