"""
The identity provider's public keys: its discovery document and JWKS, fetched over HTTP and cached
(docs/contract.md, "Identity and delegation").

* The keys are fetched on first use and again once older than ``jwks_max_age_s``, so a key the provider
  withdrew stops verifying within that bound.
* A token naming a key id the cache lacks fetches them again (the provider rotated its keys), but at
  most once per ``jwks_min_refresh_s``: a stream of tokens with made-up key ids costs the provider one
  request per interval, not one per token.
* A failed fetch keeps the keys already held (logged as a warning); with none held, verification answers
  :class:`IdentityProviderUnavailable` (503), never "bad token".

Usage:

```python
from hayhooks_app.oidc.provider import ProviderKeys

keys = ProviderKeys(settings)
key = keys.key("2024-rotation-1")     # a joserfc key, or None when the provider does not publish it
```
"""

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
from joserfc.errors import JoseError
from joserfc.jwk import Key, KeySet

from components.core.errors import SourceboundError
from components.runtime.environment import ConfigError
from hayhooks_app.oidc.settings import OidcSettings, check_provider_url

logger = logging.getLogger(__name__)


class IdentityProviderUnavailable(SourceboundError):
    """The provider's discovery document or keys cannot be fetched, and none are held: a 503, not the token's fault."""


class ProviderKeys:
    """
    The discovery document and signing keys of one issuer, cached.

    :param settings: Issuer, cache ages and HTTP timeout.
    :param clock: Monotonic seconds (tests pass their own).
    :param client: The HTTP client (tests may pass one); default: one with ``settings.http_timeout_s``.
    """

    def __init__(self, settings: OidcSettings, clock: Callable[[], float] = time.monotonic, client=None):
        self.settings = settings
        self._clock = clock
        self._client = client or httpx.Client(timeout=settings.http_timeout_s, follow_redirects=False)
        self._lock = threading.Lock()
        self._metadata: dict[str, Any] | None = None
        self._keys: dict[str | None, Key] = {}
        self._fetched_at: float | None = None  # last successful fetch
        self._attempted_at: float | None = None  # last fetch, successful or not
        self.fetches = 0  # fetches made (health and tests)
        self.last_error: str | None = None

    # ------------------------------------------------------------------ reading

    def metadata(self) -> dict[str, Any]:
        """The discovery document (fetched first if needed)."""
        self._ensure(fresh=False)
        return dict(self._metadata or {})

    def key(self, kid: str | None) -> Key | None:
        """
        The published signing key with id ``kid`` (``None``: the only key, when the provider publishes one).

        :raises IdentityProviderUnavailable: If no keys could ever be fetched.
        """
        self._ensure(fresh=False)
        key = self._find(kid)
        if key is None and self._may_refresh():
            self._ensure(fresh=True)  # the provider may have rotated its keys
            key = self._find(kid)
        return key

    def published(self) -> list[str]:
        """The key ids currently held (for messages and health)."""
        return sorted(str(kid) for kid in self._keys)

    def status(self) -> dict[str, Any]:
        """What ``GET /health`` shows of the provider: no secrets, no token."""
        age = None if self._fetched_at is None else round(self._clock() - self._fetched_at, 1)
        return {
            "issuer": self.settings.issuer,
            "keys": len(self._keys),
            "keys_age_s": age,
            "reachable": self.last_error is None and self._fetched_at is not None,
            "error": self.last_error,
        }

    def _find(self, kid: str | None) -> Key | None:
        if kid is None:
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None
        return self._keys.get(kid)

    def _may_refresh(self) -> bool:
        if self._attempted_at is None:
            return True
        return self._clock() - self._attempted_at >= self.settings.jwks_min_refresh_s

    # ------------------------------------------------------------------ fetching

    def _ensure(self, fresh: bool) -> None:
        """Fetch when forced (and allowed), when nothing is held, or when the keys are older than the maximum age."""
        with self._lock:
            now = self._clock()
            stale = self._fetched_at is None or now - self._fetched_at >= self.settings.jwks_max_age_s
            if not (fresh or stale) or not self._may_refresh():
                if self._fetched_at is None:
                    raise IdentityProviderUnavailable(self._unavailable())
                return
            self._attempted_at = now
            try:
                metadata, keys = self._fetch()
            except (httpx.HTTPError, ValueError, ConfigError, JoseError) as error:
                self.last_error = f"{type(error).__name__}: {error}"
                logger.warning("Fetching the OpenID Connect keys of %s failed: %s", self.settings.issuer, error)
                if self._fetched_at is None:
                    raise IdentityProviderUnavailable(self._unavailable()) from error
                return
            self._metadata, self._keys, self._fetched_at, self.last_error = metadata, keys, now, None

    def _unavailable(self) -> str:
        return (
            f"The identity provider {self.settings.issuer} cannot be reached to verify the token "
            f"({self.last_error or 'not fetched yet'}); try again shortly."
        )

    def _get_json(self, url: str) -> dict[str, Any]:
        response = self._client.get(url, headers={"Accept": "application/json"})
        response.raise_for_status()
        data = response.json()
        if not isinstance(data, dict):
            raise ValueError(f"{url} did not return a JSON object")
        return data

    def _fetch(self) -> tuple[dict[str, Any], dict[str | None, Key]]:
        self.fetches += 1
        metadata = self._get_json(self.settings.discovery_url)
        # OpenID Connect Discovery 1.0, section 4.3: the document's issuer must be the one asked for.
        if metadata.get("issuer") != self.settings.issuer:
            raise ValueError(
                f"the discovery document names issuer {metadata.get('issuer')!r}, not {self.settings.issuer!r} "
                "(SOURCEBOUND_OIDC_ISSUER must match it exactly, trailing slash included)"
            )
        jwks_uri = metadata.get("jwks_uri")
        if not isinstance(jwks_uri, str):
            raise ValueError("the discovery document has no jwks_uri")
        check_provider_url(jwks_uri, "The discovery document's jwks_uri")
        return metadata, self._signing_keys(self._get_json(jwks_uri))

    @staticmethod
    def _signing_keys(jwks: dict[str, Any]) -> dict[str | None, Key]:
        """The usable signature keys of a JWKS; encryption keys and key types we cannot read are skipped."""
        keys: dict[str | None, Key] = {}
        for entry in jwks.get("keys") or []:
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            try:
                key = KeySet.import_key_set({"keys": [entry]}).keys[0]
            except (JoseError, ValueError, TypeError, KeyError) as error:
                logger.warning("Skipping a JWKS entry (kid %r) that cannot be read: %s", entry.get("kid"), error)
                continue
            if key.is_private:
                # A provider never publishes private keys; one that does is misconfigured, not trusted more.
                logger.warning("Skipping JWKS entry %r: it holds a private key.", entry.get("kid"))
                continue
            keys[entry.get("kid")] = key
        return keys
