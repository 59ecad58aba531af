"""Components that classify queries."""
