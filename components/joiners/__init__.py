"""Components that join the outputs of alternative branches."""
