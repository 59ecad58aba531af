"""Components that build something from their inputs: access filters, prompts, search results, the RAG answer."""
