"""
OpenID Connect sign-in (docs/contract.md, "Identity and delegation"; docs/configuration.md, "OpenID Connect").

* :mod:`.settings`: the ``SOURCEBOUND_OIDC_*`` variables, read once;
* :mod:`.provider`: the provider's discovery document and JWKS, cached, refreshed on an unknown key id
  (rate-limited) and after a maximum age;
* :mod:`.verifier`: a bearer JWT checked against them (signature, algorithm allowlist, ``iss``, ``aud``,
  ``exp``, ``nbf``), every refusal a :class:`~.verifier.InvalidToken` naming the problem;
* :mod:`.claims`: verified claims mapped to a grant (tenant, tags, user, permissions) by configuration.

Nothing here is cached per token: a grant lives exactly as long as the request that carried the token.
"""
