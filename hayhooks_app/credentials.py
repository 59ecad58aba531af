"""
Which credential a request's bearer token is, and what it grants (docs/contract.md, "Identity and delegation").

``SOURCEBOUND_AUTH_MODE`` is ``trusted`` or a comma-separated set of ``api_key`` and ``oidc``:

* ``api_key``: the token is looked up in the key store;
* ``oidc``: the token is a JWT from the configured provider (:mod:`hayhooks_app.oidc`);
* ``oidc,api_key``: people sign in with the provider, services keep API keys. A JWT always has two dots and
  an API key none, so the token's shape picks the check; a JWT is never tried as a key, nor a key as a JWT.

Either way the answer is a grant with the same fields (tenant, user, tags, projects, permissions, delegation),
so ``hayhooks_app.identity`` applies one rule to both. A refused token is a 401 whose message names the
problem, with ``WWW-Authenticate: Bearer error="invalid_token"`` (RFC 6750, section 3.1).

Usage:

```python
from hayhooks_app.credentials import Credentials

credentials = Credentials("oidc,api_key", keys=ApiKeyStore(path), oidc=OidcAuthenticator(oidc_settings))
grant = credentials.authenticate(request.headers)
```
"""

from collections.abc import Mapping

from components.stores.key_store import ApiKeyRecord, ApiKeyStore
from hayhooks_app.config import auth_methods
from hayhooks_app.errors import ApiError, unauthorized
from hayhooks_app.oidc.authenticator import OidcAuthenticator
from hayhooks_app.oidc.claims import OidcGrant
from hayhooks_app.oidc.provider import IdentityProviderUnavailable
from hayhooks_app.oidc.verifier import InvalidToken

Grant = ApiKeyRecord | OidcGrant


def looks_like_jwt(token: str) -> bool:
    """A compact JWS has exactly two dots; API keys (``sb_`` + URL-safe base64) have none."""
    return token.count(".") == 2


def bearer_token(headers: Mapping[str, str] | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or ``None``."""
    if not headers:
        return None
    value = headers.get("authorization") or headers.get("Authorization")
    if not value:
        return None
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def invalid_token(message: str) -> ApiError:
    """401 naming the problem; the header carries it too, as RFC 6750 says (quotes and controls removed)."""
    description = "".join(char for char in message if 32 <= ord(char) < 127 and char not in '"\\')
    return ApiError(
        401,
        "unauthorized",
        message,
        headers={"WWW-Authenticate": f'Bearer error="invalid_token", error_description="{description}"'},
    )


class Credentials:
    """
    The bearer credentials of one identity mode.

    :param mode: A value of :func:`hayhooks_app.config.parse_auth_mode` other than ``trusted``.
    :param keys: The key store (``api_key`` in the mode).
    :param oidc: The token verifier (``oidc`` in the mode).
    """

    def __init__(self, mode: str, keys: ApiKeyStore | None = None, oidc: OidcAuthenticator | None = None):
        self.mode = mode
        self.methods = auth_methods(mode)
        self.keys = keys
        self.oidc = oidc
        if "oidc" in self.methods and oidc is None:
            raise ValueError("oidc mode needs an OidcAuthenticator")

    def authenticate(self, headers: Mapping[str, str] | None) -> Grant:
        """
        The grant of the request's bearer token.

        :raises ApiError: 401 naming the problem; 503 when the provider's keys cannot be fetched.
        """
        token = bearer_token(headers)
        if token is None:
            raise unauthorized(self._missing())
        if "oidc" in self.methods and (looks_like_jwt(token) or "api_key" not in self.methods):
            try:
                return self.oidc.grant(token)
            except InvalidToken as error:
                raise invalid_token(str(error)) from error
            except IdentityProviderUnavailable as error:
                raise ApiError(503, "identity_provider_unavailable", str(error)) from error
        record = self.keys.lookup(token) if self.keys is not None else None
        if record is None:
            if "oidc" in self.methods:
                raise invalid_token(
                    f"Unknown API key (and not a JWT: a token from {self.oidc.settings.issuer} has the form "
                    "header.payload.signature)."
                )
            raise unauthorized("Unknown API key.")
        return record

    def _missing(self) -> str:
        if self.methods == {"api_key"}:
            return "Missing API key: send 'Authorization: Bearer <key>' (the server runs in api_key mode)."
        issuer = self.oidc.settings.issuer
        if self.methods == {"oidc"}:
            return f"Missing bearer token: sign in with {issuer} and send 'Authorization: Bearer <token>'."
        return f"Missing bearer token: send 'Authorization: Bearer <token>' with a token from {issuer} or an API key."
