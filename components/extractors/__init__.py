"""Components that extract structured data from answers (citations)."""
