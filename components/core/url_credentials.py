"""
Credentials never leave in a URL (docs/contract.md, "Sources"): the one place that removes the userinfo
(``user:password@``) from URLs we return, log or show.

* :func:`strip_userinfo` — one URL without its userinfo (``https://deploy:TOKEN@git.example/r`` ->
  ``https://git.example/r``); anything that is not a URL with an authority comes back unchanged;
* :func:`redact_url_credentials` — the same for every URL inside a text (error messages, log lines), so a
  message that quotes a configured URL shows it without the password.

Usage:

```python
from components.core.url_credentials import redact_url_credentials, strip_userinfo

strip_userinfo("https://deploy:s3cret@git.example/acme/handbook.git")  # 'https://git.example/acme/handbook.git'
redact_url_credentials("Cannot connect to Ollama at http://u:p@ollama:11434: refused")
# 'Cannot connect to Ollama at http://ollama:11434: refused'
```
"""

import re

# scheme://userinfo@ inside any text: the userinfo runs up to the last '@' before the host (a password may hold
# '@' percent-encoded or, carelessly, raw), and never crosses whitespace, a quote or the path.
_USERINFO_IN_TEXT = re.compile(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^\s/?#@'\"<>]*(?:@[^\s/?#@'\"<>]*)*)@"
)


def strip_userinfo(url: str) -> str:
    """
    ``url`` without the ``user:password@`` of its authority.

    :param url: Any string; a value without ``scheme://...@`` is returned as given.
    :returns: The URL with nothing between ``://`` and the host.
    """
    if not isinstance(url, str) or "@" not in url or "://" not in url:
        return url
    return redact_url_credentials(url)


def redact_url_credentials(text: str) -> str:
    """
    ``text`` with the userinfo of every ``scheme://user:password@host`` in it removed.

    :param text: An error message, a log line, a URL.
    :returns: The text with each URL's credentials dropped (the rest of the text unchanged).
    """
    if not isinstance(text, str) or "@" not in text:
        return text
    return _USERINFO_IN_TEXT.sub(lambda match: match.group("scheme"), text)
