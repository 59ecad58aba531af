"""Converters from source files to Haystack Documents (sections and pages kept)."""
