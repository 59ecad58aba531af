"""
sourcebound's Haystack components and the libraries under them.

Importing this package first makes the process offline (see ``runtime``), so
models and tokenizers always come from installed packages.
"""

from components.core.runtime import configure_offline

configure_offline()
