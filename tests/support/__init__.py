"""Helpers shared by the tests: real servers, corpora, the Ollama double."""
