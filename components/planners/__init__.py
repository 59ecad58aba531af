"""Components that plan retrieval (how many candidates to fetch)."""
