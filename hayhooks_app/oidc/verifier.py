"""
A bearer JWT verified against the provider's published keys (docs/contract.md, "Identity and delegation").

In order, each refusal an :class:`InvalidToken` whose message names the problem:

1. a compact JWS (``header.payload.signature``) with a readable header;
2. its ``alg`` in the allowlist (asymmetric only: never ``none``, never HS*);
3. its ``kid`` published by the issuer (the JWKS is fetched again for an unknown one, rate-limited), and that
   key of the algorithm's type;
4. the signature, with that key and only that algorithm;
5. ``iss`` exactly the configured issuer, ``aud`` holding a configured audience, ``exp`` present and in the
   future, ``nbf`` and ``iat`` not in the future, each within ``leeway_s`` of clock skew.

Usage:

```python
from hayhooks_app.oidc.verifier import TokenVerifier

verifier = TokenVerifier(settings, ProviderKeys(settings))
claims = verifier.verify(token)       # or InvalidToken("The token expired at ...")
```
"""

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from joserfc import jws, jwt
from joserfc.errors import (
    BadSignatureError,
    ClaimError,
    ExpiredTokenError,
    InvalidPayloadError,
    JoseError,
    MissingClaimError,
)

from hayhooks_app.oidc.settings import OidcSettings

# The key type each algorithm family verifies with (RFC 7518, section 3.1; RFC 8037 for EdDSA).
KEY_TYPES = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}


class InvalidToken(Exception):
    """A bearer token that is not accepted; ``str()`` is the reason, for the 401's message."""


def _when(seconds: Any) -> str:
    try:
        return datetime.fromtimestamp(float(seconds), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (TypeError, ValueError, OverflowError, OSError):
        return repr(seconds)


class TokenVerifier:
    """
    Verifies bearer JWTs of one issuer.

    :param settings: Issuer, audiences, algorithm allowlist and leeway.
    :param keys: The provider's keys (:class:`hayhooks_app.oidc.provider.ProviderKeys`).
    :param clock: Seconds since the epoch (tests pass their own).
    """

    def __init__(self, settings: OidcSettings, keys, clock: Callable[[], float] = time.time):
        self.settings = settings
        self.keys = keys
        self._clock = clock

    def verify(self, token: str) -> dict[str, Any]:
        """
        :param token: The compact JWT from ``Authorization: Bearer``.
        :returns: Its claims, verified.
        :raises InvalidToken: Naming the problem.
        :raises IdentityProviderUnavailable: If the provider's keys cannot be fetched (none held).
        """
        header = self._header(token)
        algorithm = header.get("alg")
        if algorithm not in self.settings.algorithms:
            unsigned = " (an unsigned token)" if str(algorithm).lower() == "none" else ""
            raise InvalidToken(
                f"The token's algorithm {algorithm!r}{unsigned} is not allowed; accepted: "
                f"{', '.join(self.settings.algorithms)} (SOURCEBOUND_OIDC_ALGORITHMS)."
            )
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise InvalidToken("The token's key id (kid) must be a string.")
        key = self.keys.key(kid)
        if key is None:
            if kid is None:
                raise InvalidToken(
                    "The token names no key id (kid) and the issuer publishes "
                    f"{len(self.keys.published())} keys: the signing key cannot be chosen."
                )
            raise InvalidToken(
                f"The token is signed with key {kid!r}, which the issuer {self.settings.issuer} does not publish."
            )
        expected = KEY_TYPES.get(algorithm[:2])
        if key.key_type != expected or (key.alg is not None and key.alg != algorithm):
            raise InvalidToken(
                f"The token says {algorithm} but the issuer's key {kid!r} is a {key.key_type} key"
                f"{f' for {key.alg}' if key.alg else ''}: the signature cannot be trusted."
            )
        try:
            claims = jwt.decode(token, key, algorithms=[algorithm]).claims
        except BadSignatureError as error:
            raise InvalidToken(f"The token's signature does not verify with the issuer's key {kid!r}.") from error
        except InvalidPayloadError as error:
            raise InvalidToken("The token's payload is not a JSON object.") from error
        except JoseError as error:
            raise InvalidToken(f"The token cannot be verified: {error}.") from error
        self._check_claims(claims)
        return claims

    @staticmethod
    def _header(token: str) -> dict[str, Any]:
        if token.count(".") != 2:
            raise InvalidToken("The bearer token is not a JWT (expected header.payload.signature).")
        try:
            return dict(jws.extract_compact(token.encode("ascii")).protected)
        except (JoseError, ValueError, UnicodeEncodeError) as error:
            raise InvalidToken("The bearer token is not a well-formed JWT: its header cannot be read.") from error

    def _check_claims(self, claims: dict[str, Any]) -> None:
        settings = self.settings
        registry = jwt.JWTClaimsRegistry(
            now=lambda: int(self._clock()),
            leeway=settings.leeway_s,
            iss={"essential": True, "value": settings.issuer},
            aud={"essential": True, "values": list(settings.audiences)},
            exp={"essential": True},
        )
        try:
            registry.validate(claims)
        except ExpiredTokenError as error:
            raise InvalidToken(f"The token expired at {_when(claims.get('exp'))} (exp); sign in again.") from error
        except MissingClaimError as error:
            raise InvalidToken(f"The token has no {error.claim!r} claim, which is required.") from error
        except ClaimError as error:
            raise InvalidToken(self._claim_problem(error.claim, claims)) from error

    def _claim_problem(self, claim: str, claims: dict[str, Any]) -> str:
        settings = self.settings
        if claim == "iss":
            return f"The token's issuer {claims.get('iss')!r} is not the configured issuer {settings.issuer!r}."
        if claim == "aud":
            return (
                f"The token's audience {claims.get('aud')!r} is not this service's "
                f"({', '.join(settings.audiences)}; SOURCEBOUND_OIDC_AUDIENCE)."
            )
        if claim == "nbf":
            return f"The token is not valid before {_when(claims.get('nbf'))} (nbf)."
        if claim == "iat":
            return f"The token was issued in the future ({_when(claims.get('iat'))}, iat): check the clocks."
        return f"The token's {claim!r} claim is invalid."
