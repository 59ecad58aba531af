"""
The ``SOURCEBOUND_OIDC_*`` settings of the ``oidc`` identity mode, read once (docs/configuration.md,
"OpenID Connect"). A bad or missing value is a :class:`ConfigError` naming the variable and the fix, at start-up.

Usage:

```python
from hayhooks_app.oidc.settings import OidcSettings

settings = OidcSettings.from_env()      # SOURCEBOUND_OIDC_ISSUER, SOURCEBOUND_OIDC_AUDIENCE, ...
print(settings.discovery_url)
```
"""

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from components.runtime.environment import ConfigError, env_choice, env_int, env_number
from components.stores.key_store import PERMISSIONS

# Asymmetric signatures only: a provider signs with a private key and publishes the public one. HS* would
# let anyone holding the public JWKS forge a token (the key-confusion attack); "none" is no signature.
SIGNATURE_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
WEB_TOKENS = ("id_token", "access_token")
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def _env(name: str) -> str | None:
    return os.environ.get(name, "").strip() or None


def _csv(value: str | None) -> tuple[str, ...]:
    return tuple(dict.fromkeys(part.strip() for part in (value or "").split(",") if part.strip()))


def check_provider_url(url: str, what: str) -> None:
    """
    Refuse a provider address that is not https (plain http only on loopback, for a provider on this machine).

    :raises ConfigError: Naming ``what`` (a variable, or the discovery field the address came from).
    """
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return
    if parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS:
        return
    raise ConfigError(f"{what} must be an https:// URL (http:// only on 127.0.0.1/localhost), got {url!r}.")


@dataclass(frozen=True)
class OidcSettings:
    """
    How bearer JWTs are verified and mapped to an identity, and how the web page signs in.

    :param issuer: ``SOURCEBOUND_OIDC_ISSUER``: the ``iss`` every token must carry; discovery at
        ``<issuer>/.well-known/openid-configuration``.
    :param audiences: ``SOURCEBOUND_OIDC_AUDIENCE`` (comma-separated): a token's ``aud`` must hold one of them.
        Unset: the web page's client id.
    :param tenant_claim: ``SOURCEBOUND_OIDC_TENANT_CLAIM``: the claim naming the tenant (exclusive with ``tenant``).
    :param tenant: ``SOURCEBOUND_OIDC_TENANT``: one fixed tenant for every token.
    :param tags_claim: ``SOURCEBOUND_OIDC_TAGS_CLAIM`` (default ``groups``): a list (or one string) of groups or
        roles; a dotted path reaches a nested claim (``realm_access.roles``).
    :param user_claim: ``SOURCEBOUND_OIDC_USER_CLAIM`` (default ``sub``): the claim holding the user id.
    :param tag_map: ``SOURCEBOUND_OIDC_TAG_MAP``: a YAML file mapping claim values to tags (and permissions);
        with it, values it does not map grant nothing.
    :param permissions: ``SOURCEBOUND_OIDC_PERMISSIONS`` (default ``read``): what every signed-in user may do.
    :param algorithms: ``SOURCEBOUND_OIDC_ALGORITHMS``: accepted signature algorithms (asymmetric only).
    :param leeway_s: ``SOURCEBOUND_OIDC_LEEWAY_SECONDS`` (default 30): clock skew allowed on ``exp``/``nbf``/``iat``.
    :param jwks_max_age_s: ``SOURCEBOUND_OIDC_JWKS_MAX_AGE_SECONDS`` (default 600): the JWKS is fetched again after.
    :param jwks_min_refresh_s: ``SOURCEBOUND_OIDC_JWKS_MIN_REFRESH_SECONDS`` (default 60): an unknown key id
        fetches the JWKS again at most this often.
    :param http_timeout_s: ``SOURCEBOUND_OIDC_HTTP_TIMEOUT_SECONDS`` (default 5): each call to the provider.
    :param client_id: ``SOURCEBOUND_OIDC_CLIENT_ID``: the web page's (public) client; unset: the page has no sign-in.
    :param scopes: ``SOURCEBOUND_OIDC_SCOPES`` (default ``openid profile email``): what the page asks for.
    :param redirect_uri: ``SOURCEBOUND_OIDC_REDIRECT_URI``: where the provider sends the page back; unset: the
        page's own address (``<origin>/``).
    :param web_token: ``SOURCEBOUND_OIDC_WEB_TOKEN`` (default ``id_token``): which token the page sends.
    """

    issuer: str
    audiences: tuple[str, ...]
    tenant_claim: str | None = None
    tenant: str | None = None
    tags_claim: str = "groups"
    user_claim: str = "sub"
    tag_map: Path | None = None
    permissions: tuple[str, ...] = ("read",)
    algorithms: tuple[str, ...] = SIGNATURE_ALGORITHMS
    leeway_s: int = 30
    jwks_max_age_s: int = 600
    jwks_min_refresh_s: int = 60
    http_timeout_s: float = 5.0
    client_id: str | None = None
    scopes: str = "openid profile email"
    redirect_uri: str | None = None
    web_token: str = "id_token"

    def __post_init__(self) -> None:
        check_provider_url(self.issuer, "SOURCEBOUND_OIDC_ISSUER")
        if not self.audiences:
            raise ConfigError(
                "SOURCEBOUND_OIDC_AUDIENCE is required in oidc mode: the audience your provider puts in tokens for "
                "this service (for ID tokens, the client id)."
            )
        if (self.tenant is None) == (self.tenant_claim is None):
            raise ConfigError(
                "Set exactly one of SOURCEBOUND_OIDC_TENANT (one fixed tenant) and SOURCEBOUND_OIDC_TENANT_CLAIM "
                "(the claim naming the tenant)."
            )
        refused = [name for name in self.algorithms if name not in SIGNATURE_ALGORITHMS]
        if refused or not self.algorithms:
            raise ConfigError(
                f"SOURCEBOUND_OIDC_ALGORITHMS: {refused or 'none given'} not allowed; use asymmetric algorithms "
                f"({', '.join(SIGNATURE_ALGORITHMS)}): HS* would accept tokens forged with the public key, 'none' "
                "is no signature."
            )
        unknown = sorted(set(self.permissions) - set(PERMISSIONS))
        if unknown:
            raise ConfigError(f"SOURCEBOUND_OIDC_PERMISSIONS: unknown {unknown}; use {', '.join(PERMISSIONS)}.")
        if self.redirect_uri is not None:
            parts = urlsplit(self.redirect_uri)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ConfigError(f"SOURCEBOUND_OIDC_REDIRECT_URI must be an http(s) URL, got {self.redirect_uri!r}.")
        if self.client_id and self.web_token == "id_token" and self.client_id not in self.audiences:
            raise ConfigError(
                f"The web page sends ID tokens, whose audience is its client id {self.client_id!r}: add it to "
                "SOURCEBOUND_OIDC_AUDIENCE, or set SOURCEBOUND_OIDC_WEB_TOKEN=access_token."
            )

    @property
    def discovery_url(self) -> str:
        """Where the provider's metadata is (OpenID Connect Discovery 1.0, section 4)."""
        return self.issuer.rstrip("/") + "/.well-known/openid-configuration"

    @classmethod
    def from_env(cls) -> "OidcSettings":
        """Read the ``SOURCEBOUND_OIDC_*`` variables; raise ``ConfigError`` naming a bad or missing one."""
        issuer = _env("SOURCEBOUND_OIDC_ISSUER")
        if issuer is None:
            raise ConfigError(
                "SOURCEBOUND_OIDC_ISSUER is required in oidc mode: your provider's issuer URL (its discovery "
                "document is <issuer>/.well-known/openid-configuration)."
            )
        client_id = _env("SOURCEBOUND_OIDC_CLIENT_ID")
        audiences = _csv(_env("SOURCEBOUND_OIDC_AUDIENCE")) or ((client_id,) if client_id else ())
        tag_map = _env("SOURCEBOUND_OIDC_TAG_MAP")
        algorithms = _env("SOURCEBOUND_OIDC_ALGORITHMS")
        return cls(
            issuer=issuer,
            audiences=audiences,
            tenant_claim=_env("SOURCEBOUND_OIDC_TENANT_CLAIM"),
            tenant=_env("SOURCEBOUND_OIDC_TENANT"),
            tags_claim=_env("SOURCEBOUND_OIDC_TAGS_CLAIM") or "groups",
            user_claim=_env("SOURCEBOUND_OIDC_USER_CLAIM") or "sub",
            tag_map=Path(tag_map).resolve() if tag_map else None,
            permissions=_csv(_env("SOURCEBOUND_OIDC_PERMISSIONS")) or ("read",),
            algorithms=_csv(algorithms) if algorithms else SIGNATURE_ALGORITHMS,
            leeway_s=env_int("SOURCEBOUND_OIDC_LEEWAY_SECONDS", 30, 0),
            jwks_max_age_s=env_int("SOURCEBOUND_OIDC_JWKS_MAX_AGE_SECONDS", 600, 1),
            jwks_min_refresh_s=env_int("SOURCEBOUND_OIDC_JWKS_MIN_REFRESH_SECONDS", 60, 0),
            http_timeout_s=env_number("SOURCEBOUND_OIDC_HTTP_TIMEOUT_SECONDS", 5.0, 0.1, float),
            client_id=client_id,
            scopes=_env("SOURCEBOUND_OIDC_SCOPES") or "openid profile email",
            redirect_uri=_env("SOURCEBOUND_OIDC_REDIRECT_URI"),
            web_token=env_choice("SOURCEBOUND_OIDC_WEB_TOKEN", "id_token", WEB_TOKENS),
        )
