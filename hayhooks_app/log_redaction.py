"""
Keeps request bodies and URL credentials out of the server log.

Hayhooks logs every pipeline call at INFO as ``Running pipeline '<name>'`` with the
whole request body bound as ``params``: query text, user tags, uploaded text. That
would undercut ``SOURCEBOUND_QUERY_LOG_TEXT=hash`` and put document text in plain
log files, so :func:`install_log_redaction` drops the bound body from every log
record (the line itself, with the pipeline name and request id, stays). What was
asked is recorded where we decide: the query log (``components.stores.record_store``). Every line also loses
the ``user:password@`` of any URL it quotes (``components.core.url_credentials``; docs/contract.md, "Errors"):
a configured ``OLLAMA_BASE_URL`` or a git source's clone URL never reaches the log with its secret.

Usage:
```python
from hayhooks_app.log_redaction import install_log_redaction

install_log_redaction()  # once, before serving (python -m hayhooks_app serve does it)
```
"""

from collections.abc import Callable
from typing import Any

from components.core.url_credentials import redact_url_credentials

# The `extra` keys Hayhooks binds request content to.
REDACTED_EXTRA_KEYS = ("params",)


def redact_record(record: dict[str, Any]) -> None:
    """A loguru patcher: remove request content from one record's ``extra`` and credentials from its message."""
    extra = record["extra"]
    for key in REDACTED_EXTRA_KEYS:
        extra.pop(key, None)
    record["message"] = redact_url_credentials(record["message"])


def install_log_redaction(*patchers: Callable[[dict[str, Any]], None]) -> None:
    """
    Make the Hayhooks (loguru) logger drop request content from every record.

    :param patchers: Further loguru patchers run after the redaction (loguru keeps one patcher, so they share it),
        e.g. ``hayhooks_app.tracing.add_trace_ids``.
    """
    from hayhooks.server.logger import log

    if not patchers:
        log.configure(patcher=redact_record)
        return

    def patch(record: dict[str, Any]) -> None:
        redact_record(record)
        for patcher in patchers:
            patcher(record)

    log.configure(patcher=patch)
