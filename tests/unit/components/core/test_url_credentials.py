"""URL credentials never leave (docs/contract.md, "Sources" and "Errors"): strip_userinfo, redact_url_credentials."""

import pytest

from components.core.url_canonicalizer import canonicalize_url
from components.core.url_credentials import redact_url_credentials, strip_userinfo


@pytest.mark.unit
class TestUrlCredentials:
    @pytest.mark.parametrize(
        "url, expected",
        [
            ("https://deploy:TOKEN@git.example/acme/handbook.git", "https://git.example/acme/handbook.git"),
            ("https://TOKEN@github.com/acme/handbook", "https://github.com/acme/handbook"),
            ("http://u:p%40ss@ollama:11434", "http://ollama:11434"),
            ("http://u:p@ss@ollama:11434/api", "http://ollama:11434/api"),  # a raw '@' in the password
            ("ssh://git:pw@host:22/r.git", "ssh://host:22/r.git"),
            ("https://host/a@b?x=c@d#e@f", "https://host/a@b?x=c@d#e@f"),  # '@' after the authority stays
            ("https://host/path", "https://host/path"),
            ("git@github.com:acme/handbook.git", "git@github.com:acme/handbook.git"),  # no authority: unchanged
            ("", ""),
        ],
    )
    def test_strip_userinfo(self, url, expected):
        assert strip_userinfo(url) == expected

    def test_redact_every_url_in_a_text(self):
        text = "Cannot connect to Ollama at http://admin:s3cret@ollama:11434: refused; retry http://k@x.example/y."
        redacted = redact_url_credentials(text)
        assert redacted == "Cannot connect to Ollama at http://ollama:11434: refused; retry http://x.example/y."
        assert "s3cret" not in redacted and "admin" not in redacted
        assert redact_url_credentials("mail alice@example.com about it") == "mail alice@example.com about it"

    def test_the_canonical_source_has_no_userinfo(self):
        assert canonicalize_url("HTTPS://deploy:TOKEN@Git.Example/a/") == "https://git.example/a"
