"""
The access rule (docs/contract.md, "Access rule"), in one place, in its two forms:

* :meth:`AccessRule.to_filters` — the Haystack filter ANDed into every retrieval;
* :meth:`AccessRule.allows` — the same rule checked on a retrieved document
  (defence in depth, used by :class:`components.validators.access_guard.AccessGuard`).

Beside it, the write rule (docs/contract.md, "Write rule"): :class:`WriteRule` decides which documents one
caller may write, invalidate, flag or overwrite.

A chunk is visible to a request when (docs/contract.md "Access rule")

    (    tenant_id == request.tenant_id
     AND tags ∩ request.user_tags ≠ ∅
     AND (scope == "tenant"
          OR (scope == "user"    AND user_id == request.user_id)
          OR (scope == "project" AND project_id == request.project_id AND user_id == request.user_id)))
    OR scope == "public"

plus the request's narrowing options: ``verified_only`` (``verified == True``),
``exclude_tainted`` (``tainted != True``; a chunk without the flag is not tainted),
``scope`` (``project``, ``user``, ``tenant`` or ``public``: only that branch of the rule),
``language`` (``language == value``, an ISO 639 code; docs/contract.md, "Languages") and the metadata
narrowings ``project_id`` and ``domain`` (``project_id == value``, ``domain == value`` on the chunk: the
specification routes' project and domain filters; docs/contract.md, "Access rule").

A project-scoped chunk is visible only to its owning user (``user_id``) within that
project. A ``public`` chunk (shared product documentation, written only with the
``public`` permission) is visible to every tenant whatever its tags. A chunk without a
``scope`` is not visible (the indexer always writes one; a missing scope is a bug that
must fail closed). A request without ``user_id`` sees no user- or project-scoped chunks,
one without ``project_id`` no project-scoped chunks, and one with no tags sees nothing:
:class:`AccessRule` refuses to exist without tags.

Usage:

```python
rule = AccessRule(tenant_id="acme", user_tags=("hr",), user_id="u1")
retriever.run(query=q, query_embedding=e, filters=rule.to_filters())
visible = [d for d in documents if rule.allows(d)]
```
"""

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from haystack import Document, default_from_dict, default_to_dict

from components.core.language import LANGUAGE_CODE_PATTERN

ALLOWED_OPTION_KEYS = frozenset({"verified_only", "exclude_tainted", "scope", "language", "project_id", "domain"})
# Options that keep only chunks whose metadata field equals the value (the field has the option's name).
META_NARROWING_KEYS = ("project_id", "domain")
# The query `scope` values: each keeps one branch of the rule; None keeps all of them.
QUERY_SCOPES = ("project", "user", "tenant", "public")
# A filter no document matches, for a narrowing that leaves no branch: a contradiction, not an empty `in` list,
# which qdrant-haystack turns into an empty `should` that Qdrant reads as "match everything".
_MATCH_NOTHING: dict[str, Any] = {
    "operator": "AND",
    "conditions": [
        {"field": "meta.scope", "operator": "==", "value": "public"},
        {"field": "meta.scope", "operator": "!=", "value": "public"},
    ],
}


def _flag_conditions(
    verified_only: bool, exclude_tainted: bool, language: str | None, narrowing: tuple[tuple[str, str], ...] = ()
) -> list[dict[str, Any]]:
    conditions: list[dict[str, Any]] = []
    if language is not None:
        conditions.append({"field": "meta.language", "operator": "==", "value": language})
    for field, value in narrowing:
        conditions.append({"field": f"meta.{field}", "operator": "==", "value": value})
    if verified_only:
        conditions.append({"field": "meta.verified", "operator": "==", "value": True})
    if exclude_tainted:
        conditions.append({"field": "meta.tainted", "operator": "!=", "value": True})
    return conditions


@dataclass(frozen=True)
class AccessRule:
    """
    The access rule of one request.

    :param tenant_id: The requester's tenant.
    :param user_tags: The requester's tags (at least one).
    :param user_id: The requester's user id, for user-scoped chunks.
    :param project_id: The requester's project id, for project-scoped chunks.
    :param verified_only: Keep only chunks with ``verified == True``.
    :param exclude_tainted: Drop chunks with ``tainted == True``.
    :param scope: Narrow to one branch (``project``, ``user``, ``tenant``, ``public``); ``None`` keeps all.
    :param language: Keep only chunks whose ``language`` is this ISO 639 code; ``None`` keeps all.
    :param in_project: Keep only chunks whose ``project_id`` is this (the request's ``filters.project_id``, a
        filter, unlike ``project_id``, which is who asks); ``None`` keeps all.
    :param domain: Keep only chunks whose ``domain`` is this; ``None`` keeps all.
    """

    tenant_id: str
    user_tags: tuple[str, ...]
    user_id: str | None = None
    project_id: str | None = None
    verified_only: bool = False
    exclude_tainted: bool = True
    scope: str | None = None
    language: str | None = None
    in_project: str | None = None
    domain: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.tenant_id, str) or not self.tenant_id.strip():
            raise ValueError("tenant_id is required: every retrieval is confined to one tenant.")
        tags = tuple(self.user_tags) if not isinstance(self.user_tags, str) else (self.user_tags,)
        if not tags or any(not isinstance(tag, str) or not tag for tag in tags):
            raise ValueError(
                "user_tags must name at least one non-empty tag; a request without tags sees nothing "
                "(reject it at the API)."
            )
        # Sorted and de-duplicated so the filter (and anything cached on it) is deterministic.
        object.__setattr__(self, "user_tags", tuple(sorted(set(tags))))
        for name in ("user_id", "project_id", "in_project", "domain"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise ValueError(f"{name} must be a non-empty string or None.")
        for name in ("verified_only", "exclude_tainted"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a boolean.")
        if self.scope is not None and self.scope not in QUERY_SCOPES:
            raise ValueError(
                f"scope must be one of {', '.join(QUERY_SCOPES)} (or omitted for everything visible), "
                f"got {self.scope!r}."
            )
        if self.language is not None and (
            not isinstance(self.language, str) or not re.match(LANGUAGE_CODE_PATTERN, self.language)
        ):
            raise ValueError(f"language must be a lower-case ISO 639 code such as 'de', got {self.language!r}.")

    def _narrowing(self) -> tuple[tuple[str, str], ...]:
        """The metadata narrowings as ``(field, value)`` pairs, in :data:`META_NARROWING_KEYS` order."""
        values = {"project_id": self.in_project, "domain": self.domain}
        return tuple((field, values[field]) for field in META_NARROWING_KEYS if values[field] is not None)

    def _wants(self, scope: str) -> bool:
        return self.scope is None or self.scope == scope

    @classmethod
    def from_request(
        cls,
        tenant_id: str,
        user_tags: Iterable[str],
        user_id: str | None = None,
        project_id: str | None = None,
        options: Mapping[str, Any] | None = None,
        default_verified_only: bool = False,
        default_exclude_tainted: bool = True,
    ) -> "AccessRule":
        """
        Build the rule from request fields and the request's options dict.

        :param options: ``{"verified_only": bool, "exclude_tainted": bool, "scope": str, "language": str,
            "project_id": str, "domain": str}``; any
            other key is rejected, because a request's own filters must never reach the store.
        :raises ValueError: On an unknown option key, a non-boolean option, or a missing tenant / tags.
        """
        options = dict(options or {})
        unknown = set(options) - ALLOWED_OPTION_KEYS
        if unknown:
            raise ValueError(
                f"Unsupported filter option(s) {sorted(unknown)}: a request may only set "
                f"{sorted(ALLOWED_OPTION_KEYS)}; "
                "tenant, tags and scope are enforced server-side."
            )
        verified_only = options.get("verified_only")
        exclude_tainted = options.get("exclude_tainted")
        return cls(
            tenant_id=tenant_id,
            user_tags=tuple(user_tags or ()),
            user_id=user_id,
            project_id=project_id,
            verified_only=default_verified_only if verified_only is None else verified_only,
            exclude_tainted=default_exclude_tainted if exclude_tainted is None else exclude_tainted,
            scope=options.get("scope"),
            language=options.get("language"),
            in_project=options.get("project_id"),
            domain=options.get("domain"),
        )

    def to_filters(self) -> dict[str, Any]:
        """
        The Haystack filter expressing this rule: the tenant branch (one ``AND`` the store answers from its access
        keys) OR the public branch, each with the flag conditions; only the branches ``scope`` keeps.
        """
        flags = _flag_conditions(self.verified_only, self.exclude_tainted, self.language, self._narrowing())
        scope_branches: list[dict[str, Any]] = []
        if self._wants("tenant"):
            scope_branches.append({"field": "meta.scope", "operator": "==", "value": "tenant"})
        if self._wants("user") and self.user_id is not None:
            scope_branches.append(
                {
                    "operator": "AND",
                    "conditions": [
                        {"field": "meta.scope", "operator": "==", "value": "user"},
                        {"field": "meta.user_id", "operator": "==", "value": self.user_id},
                    ],
                }
            )
        if self._wants("project") and self.project_id is not None and self.user_id is not None:
            scope_branches.append(
                {
                    "operator": "AND",
                    "conditions": [
                        {"field": "meta.scope", "operator": "==", "value": "project"},
                        {"field": "meta.project_id", "operator": "==", "value": self.project_id},
                        # Project documents are private to their owner within the project.
                        {"field": "meta.user_id", "operator": "==", "value": self.user_id},
                    ],
                }
            )
        branches: list[dict[str, Any]] = []
        if scope_branches:
            tenant_conditions: list[dict[str, Any]] = [
                {"field": "meta.tenant_id", "operator": "==", "value": self.tenant_id},
                # On the list field `tags`, `in` means "shares at least one value" (contract).
                {"field": "meta.tags", "operator": "in", "value": list(self.user_tags)},
                scope_branches[0] if len(scope_branches) == 1 else {"operator": "OR", "conditions": scope_branches},
            ]
            branches.append({"operator": "AND", "conditions": tenant_conditions + flags})
        if self._wants("public"):
            branches.append(
                {
                    "operator": "AND",
                    "conditions": [{"field": "meta.scope", "operator": "==", "value": "public"}, *flags],
                }
            )
        if not branches:
            return _MATCH_NOTHING
        return branches[0] if len(branches) == 1 else {"operator": "OR", "conditions": branches}

    def violation(self, document: Document) -> str | None:
        """Why ``document`` is not visible under this rule, or ``None`` when it is."""
        meta = document.meta or {}
        scope = meta.get("scope")
        if scope not in QUERY_SCOPES:
            return f"unknown or missing scope {scope!r}"
        if not self._wants(scope):
            return f"{scope}-scoped chunk outside the requested scope {self.scope!r}"
        if scope != "public":
            if meta.get("tenant_id") != self.tenant_id:
                return "tenant_id differs from the request's tenant"
            tags = meta.get("tags")
            tags = [tags] if isinstance(tags, str) else list(tags or [])
            if not set(tags) & set(self.user_tags):
                return "shares no tag with the request's user_tags"
        if scope == "user":
            if self.user_id is None or meta.get("user_id") != self.user_id:
                return "user-scoped chunk of another user"
        elif scope == "project":
            if self.project_id is None or meta.get("project_id") != self.project_id:
                return "project-scoped chunk of another project"
            if self.user_id is None or meta.get("user_id") != self.user_id:
                return "project-scoped chunk of another user"
        if self.verified_only and meta.get("verified") is not True:
            return "not verified while verified_only is set"
        if self.exclude_tainted and meta.get("tainted") is True:
            return "tainted while exclude_tainted is set"
        if self.language is not None and meta.get("language") != self.language:
            return f"language is not {self.language!r}"
        for field, value in self._narrowing():
            if meta.get(field) != value:
                return f"{field} is not {value!r}"
        return None

    def allows(self, document: Document) -> bool:
        """Whether ``document`` is visible under this rule."""
        return self.violation(document) is None

    def as_dict(self) -> dict[str, Any]:
        """The rule's fields, for logging and pipeline outputs."""
        return {
            "tenant_id": self.tenant_id,
            "user_tags": list(self.user_tags),
            "user_id": self.user_id,
            "project_id": self.project_id,
            "verified_only": self.verified_only,
            "exclude_tainted": self.exclude_tainted,
            "scope": self.scope,
            "language": self.language,
            "in_project": self.in_project,
            "domain": self.domain,
        }


class RequestOptionDefaults:
    """
    Init, (de)serialisation and rule building shared by the components that apply the access rule of a
    request (:class:`components.builders.access_filter_builder.AccessFilterBuilder`,
    :class:`components.validators.access_guard.AccessGuard`),
    so both read the request's options with the same defaults.
    """

    def __init__(self, default_verified_only: bool = False, default_exclude_tainted: bool = True) -> None:
        """
        :param default_verified_only: ``verified_only`` when the request does not set it.
        :param default_exclude_tainted: ``exclude_tainted`` when the request does not set it.
        """
        for name, value in (
            ("default_verified_only", default_verified_only),
            ("default_exclude_tainted", default_exclude_tainted),
        ):
            if not isinstance(value, bool):
                raise ValueError(f"{name} must be a boolean, got {value!r}.")
        self.default_verified_only = default_verified_only
        self.default_exclude_tainted = default_exclude_tainted

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(
            self, default_verified_only=self.default_verified_only, default_exclude_tainted=self.default_exclude_tainted
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        """Deserialize the component."""
        return default_from_dict(cls, data)

    def request_rule(
        self,
        tenant_id: str,
        user_tags: Iterable[str],
        user_id: str | None,
        project_id: str | None,
        options: Mapping[str, Any] | None,
    ) -> AccessRule:
        """The request's :class:`AccessRule` with this component's option defaults (:meth:`AccessRule.from_request`)."""
        return AccessRule.from_request(
            tenant_id=tenant_id,
            user_tags=user_tags,
            user_id=user_id,
            project_id=project_id,
            options=options,
            default_verified_only=self.default_verified_only,
            default_exclude_tainted=self.default_exclude_tainted,
        )


def _tag_list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])


def _optional_names(name: str, value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    names = (value,) if isinstance(value, str) else tuple(value)
    if any(not isinstance(one, str) or not one for one in names):
        raise ValueError(f"{name} must be non-empty strings or None (no limit), got {value!r}.")
    return tuple(sorted(set(names)))


@dataclass(frozen=True)
class WriteRule:
    """
    Which documents one caller may change (docs/contract.md, "Write rule"): a write, an invalidation, a flag
    change or an overwrite applies to a document only when :meth:`violation` finds nothing. The same check
    runs on a document about to be written and on the stored document it would replace; a stored document the
    rule refuses is treated exactly like one that does not exist.

    A document is writable when

    * its ``tenant_id`` is one of ``tenant_ids``;
    * its ``tags`` are all among ``tags`` (``None``: any tags);
    * its owner (``user_id``, when set) is a user the caller may act as: one of ``user_ids`` or matching one of
      the ``user_patterns`` (``fnmatch``, case-sensitive; ``("*",)``: any user);
    * its ``project_id`` (when set) is among ``projects`` (``None``: any project);
    * its scope is known, and ``public`` only when the caller holds ``public``.

    :param tenant_ids: The tenants the caller writes in (an API key: its one tenant).
    :param tags: The caller's tags; ``None`` places no limit (the tenant's operator).
    :param user_ids: Users the caller acts as, by exact id (a user key: its user).
    :param user_patterns: Users the caller acts as, by ``fnmatch`` pattern (a service key's grant).
    :param projects: Projects the caller writes in; ``None`` places no limit.
    :param public: Whether the caller may write ``public`` documents.

    Usage:

    ```python
    rule = WriteRule(tenant_ids=("acme",), tags=("finance",), user_ids=("bob",))
    rule.violation({"tenant_id": "acme", "tags": ["hr"], "scope": "user", "user_id": "alice"})
    # "tags ['hr'] are not among the caller's tags"
    ```
    """

    tenant_ids: tuple[str, ...]
    tags: tuple[str, ...] | None = None
    user_ids: tuple[str, ...] = ()
    user_patterns: tuple[str, ...] = ()
    projects: tuple[str, ...] | None = None
    public: bool = False

    def __post_init__(self) -> None:
        tenants = _optional_names("tenant_ids", self.tenant_ids)
        if not tenants:
            raise ValueError("tenant_ids must name at least one tenant: every write is confined to its tenants.")
        object.__setattr__(self, "tenant_ids", tenants)
        object.__setattr__(self, "tags", _optional_names("tags", self.tags))
        object.__setattr__(self, "user_ids", _optional_names("user_ids", self.user_ids) or ())
        object.__setattr__(self, "user_patterns", _optional_names("user_patterns", self.user_patterns) or ())
        object.__setattr__(self, "projects", _optional_names("projects", self.projects))
        if not isinstance(self.public, bool):
            raise ValueError(f"public must be a boolean, got {self.public!r}.")

    @classmethod
    def operator(cls, tenant_ids: Iterable[str] | str, public: bool = True) -> "WriteRule":
        """The rule of a caller with the tenants' full authority (the operator's CLI, declared sources)."""
        tenants = (tenant_ids,) if isinstance(tenant_ids, str) else tuple(tenant_ids)
        return cls(tenant_ids=tenants, tags=None, user_patterns=("*",), projects=None, public=public)

    @property
    def unlimited(self) -> bool:
        """Whether the rule refuses nothing within its tenants (an operator), so stored documents need no check."""
        return self.tags is None and "*" in self.user_patterns and self.projects is None and self.public

    def may_act_as(self, user_id: str) -> bool:
        """Whether the caller may write documents owned by ``user_id``."""
        return user_id in self.user_ids or any(fnmatch.fnmatchcase(user_id, one) for one in self.user_patterns)

    def tags_outside(self, tags: Iterable[str]) -> list[str]:
        """The tags among ``tags`` the caller does not hold (empty when it holds them all, or has no limit)."""
        if self.tags is None:
            return []
        return sorted(set(_tag_list(tags)) - set(self.tags))

    def allows_project(self, project_id: str | None) -> bool:
        """Whether a document naming ``project_id`` (``None``: none) is within the caller's projects."""
        return project_id is None or self.projects is None or project_id in self.projects

    def violation(self, meta: Mapping[str, Any] | None) -> str | None:
        """Why the caller may not change a document with this ``meta``, or ``None`` when it may."""
        meta = meta or {}
        scope = meta.get("scope") or "tenant"
        if scope not in QUERY_SCOPES:
            return f"unknown scope {scope!r}"
        if meta.get("tenant_id") not in self.tenant_ids:
            return f"tenant_id {meta.get('tenant_id')!r} is not the caller's tenant"
        outside = self.tags_outside(meta.get("tags"))
        if outside:
            return f"tags {outside} are not among the caller's tags"
        if self.tags is not None and not _tag_list(meta.get("tags")):
            return "the document has no tags, so no tag-limited caller covers it"
        owner = meta.get("user_id")
        if owner is not None and not self.may_act_as(str(owner)):
            return f"user_id {owner!r} is a user the caller may not act as"
        if not self.allows_project(meta.get("project_id")):
            return f"project_id {meta.get('project_id')!r} is not among the caller's projects"
        if scope == "public" and not self.public:
            return "scope 'public' documents (visible to every tenant) need the 'public' permission"
        return None

    def allows(self, meta: Mapping[str, Any] | None) -> bool:
        """Whether the caller may change a document with this ``meta``."""
        return self.violation(meta) is None
