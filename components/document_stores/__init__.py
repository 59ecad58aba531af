"""Document stores."""
