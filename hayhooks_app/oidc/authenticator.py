"""
A bearer token to a grant: verified (:mod:`.verifier`) against the provider's keys (:mod:`.provider`), then
mapped (:mod:`.claims`). Also what the web page needs to sign in (docs/api.md, "Web page").

Usage:

```python
from hayhooks_app.oidc.authenticator import OidcAuthenticator

oidc = OidcAuthenticator(OidcSettings.from_env())
grant = oidc.grant(token)       # OidcGrant, or InvalidToken / IdentityProviderUnavailable
```
"""

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from hayhooks_app.oidc.claims import ClaimMapping, OidcGrant
from hayhooks_app.oidc.provider import ProviderKeys
from hayhooks_app.oidc.settings import OidcSettings, check_provider_url
from hayhooks_app.oidc.verifier import TokenVerifier


class OidcAuthenticator:
    """
    :param settings: The OIDC settings.
    :param keys: The provider's keys; default: fetched with ``settings``.
    :param clock: Seconds since the epoch, for ``exp``/``nbf`` (tests pass their own).
    :raises ConfigError: If the mapping table cannot be used.
    """

    def __init__(
        self, settings: OidcSettings, keys: ProviderKeys | None = None, clock: Callable[[], float] = time.time
    ):
        self.settings = settings
        self.keys = keys or ProviderKeys(settings)
        self.verifier = TokenVerifier(settings, self.keys, clock)
        self.mapping = ClaimMapping(settings)

    def grant(self, token: str) -> OidcGrant:
        """The grant of a bearer token; nothing is cached: the next request verifies its token again."""
        return self.mapping.grant(self.verifier.verify(token))

    def web_config(self) -> dict[str, Any]:
        """
        What the page needs for the authorization code flow with PKCE: public values only (a public client
        has no secret). Without ``SOURCEBOUND_OIDC_CLIENT_ID`` the page has no sign-in.

        :raises IdentityProviderUnavailable: If the discovery document cannot be fetched.
        """
        settings = self.settings
        if not settings.client_id:
            return {"sign_in": False, "issuer": settings.issuer}
        metadata = self.keys.metadata()
        endpoints = {}
        for name in ("authorization_endpoint", "token_endpoint", "end_session_endpoint"):
            value = metadata.get(name)
            if isinstance(value, str) and value:
                check_provider_url(value, f"The discovery document's {name}")
                endpoints[name] = value
        return {
            "sign_in": "authorization_endpoint" in endpoints and "token_endpoint" in endpoints,
            "issuer": settings.issuer,
            "client_id": settings.client_id,
            "scopes": settings.scopes,
            "redirect_uri": settings.redirect_uri,
            "token": settings.web_token,
            **endpoints,
        }

    def token_origin(self) -> str | None:
        """The origin of the provider's token endpoint: the one address besides its own the page may call."""
        if not self.settings.client_id:
            return None
        endpoint = self.keys.metadata().get("token_endpoint")
        if not isinstance(endpoint, str):
            return None
        parts = urlsplit(endpoint)
        return f"{parts.scheme}://{parts.netloc}"
