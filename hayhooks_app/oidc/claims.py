"""
Verified token claims mapped to a grant by configuration (docs/contract.md, "Identity and delegation"):
the tenant (a claim or one fixed tenant), the tags (a groups or roles claim, optionally through a mapping
table), the user (``sub`` or another claim) and the permissions (a default, widened per group by the table).

The grant answers the same questions as an API key record (:class:`components.stores.key_store.ApiKeyRecord`),
so ``hayhooks_app.identity`` applies one rule to both: a token acts only as its own user, its tags are the
most a request can use, and nothing in a request body widens them.

The mapping table (``SOURCEBOUND_OIDC_TAG_MAP``), YAML:

```yaml
tags:                       # claim value -> tags; with a table, values it does not list grant no tags
  "2c8f5a8e-...": [finance, all-staff]      # an Entra ID group object id
  hr-team: [hr, all-staff]
permissions:                # claim value -> permissions beyond SOURCEBOUND_OIDC_PERMISSIONS
  sourcebound-editors: [write]
```

Usage:

```python
from hayhooks_app.oidc.claims import ClaimMapping

mapping = ClaimMapping(settings)
grant = mapping.grant({"sub": "u-1", "groups": ["hr-team"], "exp": 1767225600})
```
"""

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from components.core.models import MAX_IDENTIFIER_CHARS
from components.runtime.environment import ConfigError
from components.stores.key_store import PERMISSIONS
from hayhooks_app.oidc.settings import OidcSettings
from hayhooks_app.oidc.verifier import InvalidToken

OIDC_KEY_ID = "oidc"  # what the records hold as the credential of a token-authenticated request
MAX_TAGS = 100  # the query side's bound on user_tags (components/core/models.py)


@dataclass(frozen=True)
class OidcGrant:
    """
    What one verified token allows, for as long as the request that carried it.

    :param tenant_id: The token's tenant.
    :param user_id: The token's user (a token always acts as exactly this user).
    :param tags: The tags the token's groups or roles map to.
    :param permissions: ``read`` and what the configuration grants the token's groups.
    :param expires_at: The token's ``exp`` (seconds since the epoch).
    """

    tenant_id: str
    user_id: str
    tags: tuple[str, ...]
    permissions: tuple[str, ...]
    expires_at: float
    projects: tuple[str, ...] | None = None  # a user's project documents are private to it: no project list
    act_as_users: tuple[str, ...] | None = None  # tokens never delegate; services use API keys
    credential = "token"
    key_id = OIDC_KEY_ID
    kind = "user"

    def may_act_as(self, user_id: str) -> bool:
        return user_id == self.user_id


def claim_value(claims: Mapping[str, Any], name: str) -> Any:
    """
    The claim ``name``: a top-level claim of that exact name (names may contain dots, like
    ``https://example.com/groups``), else a dotted path into nested objects (``realm_access.roles``).
    """
    if name in claims:
        return claims[name]
    value: Any = claims
    for part in name.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _identifier(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    text = str(value)
    if not text or len(text) > MAX_IDENTIFIER_CHARS or any(ord(char) < 32 for char in text):
        return None
    return text


class TagMap:
    """
    The mapping table: claim values to tags and to extra permissions.

    :param path: The YAML file (``SOURCEBOUND_OIDC_TAG_MAP``).
    :raises ConfigError: If the file is missing or not of the documented shape; the message names it.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            data = yaml.safe_load(self.path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as error:
            raise ConfigError(f"SOURCEBOUND_OIDC_TAG_MAP: cannot read {self.path}: {error}") from error
        if not isinstance(data, dict) or set(data) - {"tags", "permissions"}:
            raise ConfigError(f"SOURCEBOUND_OIDC_TAG_MAP: {self.path} must have only 'tags' and 'permissions' maps.")
        self.tags = self._section(data, "tags")
        self.permissions = self._section(data, "permissions")
        unknown = sorted({p for granted in self.permissions.values() for p in granted} - set(PERMISSIONS))
        if unknown:
            raise ConfigError(f"SOURCEBOUND_OIDC_TAG_MAP: unknown permissions {unknown}; use {', '.join(PERMISSIONS)}.")

    def _section(self, data: dict, name: str) -> dict[str, tuple[str, ...]]:
        section = data.get(name) or {}
        if not isinstance(section, dict) or not all(
            isinstance(values, list) and all(isinstance(v, str) and v.strip() for v in values)
            for values in section.values()
        ):
            raise ConfigError(
                f"SOURCEBOUND_OIDC_TAG_MAP: '{name}' in {self.path} must map each claim value to a list of names."
            )
        return {str(key): tuple(value.strip() for value in values) for key, values in section.items()}


class ClaimMapping:
    """
    Claims to grant, as configured (:class:`hayhooks_app.oidc.settings.OidcSettings`).

    :param settings: The OIDC settings (claims, fixed tenant, mapping table, default permissions).
    :raises ConfigError: If the mapping table cannot be used.
    """

    def __init__(self, settings: OidcSettings):
        self.settings = settings
        self.tag_map = TagMap(settings.tag_map) if settings.tag_map is not None else None

    def grant(self, claims: Mapping[str, Any]) -> OidcGrant:
        """
        :param claims: Claims of a verified token.
        :returns: The grant of the token.
        :raises InvalidToken: If the user or tenant claim is missing or not an identifier.
        """
        settings = self.settings
        user_id = _identifier(claim_value(claims, settings.user_claim))
        if user_id is None:
            raise InvalidToken(
                f"The token has no usable '{settings.user_claim}' claim (SOURCEBOUND_OIDC_USER_CLAIM): it must be a "
                f"string of 1 to {MAX_IDENTIFIER_CHARS} printable characters."
            )
        if settings.tenant is not None:
            tenant_id = settings.tenant
        else:
            tenant_id = _identifier(claim_value(claims, settings.tenant_claim))
            if tenant_id is None:
                raise InvalidToken(
                    f"The token has no usable '{settings.tenant_claim}' claim (SOURCEBOUND_OIDC_TENANT_CLAIM) to name "
                    "its tenant."
                )
        values = self._values(claim_value(claims, settings.tags_claim))
        permissions = list(settings.permissions)
        if self.tag_map is None:
            tags = [value for value in values if len(value) <= MAX_IDENTIFIER_CHARS]
        else:
            tags = [tag for value in values for tag in self.tag_map.tags.get(value, ())]
            permissions += [p for value in values for p in self.tag_map.permissions.get(value, ())]
        return OidcGrant(
            tenant_id=tenant_id,
            user_id=user_id,
            tags=tuple(dict.fromkeys(tags))[:MAX_TAGS],
            permissions=tuple(dict.fromkeys(permissions)),
            expires_at=float(claims["exp"]),
        )

    @staticmethod
    def _values(raw: Any) -> list[str]:
        """A list claim's strings; one string is one value (Google's ``hd``); anything else grants nothing."""
        if isinstance(raw, str):
            return [raw] if raw else []
        if isinstance(raw, list):
            return [value for value in raw if isinstance(value, str) and value]
        return []
