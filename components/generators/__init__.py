"""Answer generators: the extractive answerer (no LLM) and the Ollama answerer."""
