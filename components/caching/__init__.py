"""Components that skip work already done (unchanged documents)."""
