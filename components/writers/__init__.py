"""Document writers (atomic per-document replace)."""
