"""
Keeps request bodies out of the server log.

Hayhooks logs every pipeline call at INFO as ``Running pipeline '<name>'`` with the
whole request body bound as ``params``: query text, user tags, uploaded text. That
would undercut ``SOURCEBOUND_QUERY_LOG_TEXT=hash`` and put document text in plain
log files, so :func:`install_log_redaction` drops the bound body from every log
record (the line itself, with the pipeline name and request id, stays). What was
asked is recorded where we decide: the query log (``hayhooks_app.records``).

Usage:
```python
from hayhooks_app.log_redaction import install_log_redaction

install_log_redaction()  # once, before serving (python -m hayhooks_app serve does it)
```
"""

from typing import Any

# The `extra` keys Hayhooks binds request content to.
REDACTED_EXTRA_KEYS = ("params",)


def redact_record(record: dict[str, Any]) -> None:
    """A loguru patcher: remove request content from one record's ``extra``."""
    extra = record["extra"]
    for key in REDACTED_EXTRA_KEYS:
        extra.pop(key, None)


def install_log_redaction() -> None:
    """Make the Hayhooks (loguru) logger drop request content from every record."""
    from hayhooks.server.logger import log

    log.configure(patcher=redact_record)
