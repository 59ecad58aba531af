"""Scorers: dense similarity, LLM support rating, hybrid confidence."""
