"""Services above the components: indexing, querying, document lifecycle, pipeline loading."""
