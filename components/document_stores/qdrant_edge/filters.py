"""
Haystack filter dicts -> ``qdrant_edge.Filter``.

Field names are Haystack's: ``id``, ``content`` and ``meta.<name>``. They map onto
the point payload ``{"id", "content", "meta": {...}}`` (see ``converters``), so
``meta.tenant_id`` is the payload path ``meta.tenant_id``; ``id`` conditions match
the payload ``id`` (indexed): point ids derive from tenant and id, so one Haystack id
may be several points, one per tenant.

Semantics, chosen to match Haystack's in-memory store wherever Qdrant can:

- ``==``/``!=`` with ``None`` test that the field is missing or null (``IsEmpty``);
  ``!=`` and ``not in`` match documents that lack the field.
- numbers compare as numbers (``2 == 2.0``) through a closed range; strings and
  booleans match exactly.
- on a list field (``meta.tags``) ``==`` means "contains" and ``in`` means "shares
  at least one value" (Qdrant ``MatchAny``).
- ``> >= < <=`` take numbers or ISO 8601 date strings; any other string, a list,
  or a boolean is a ``FilterError``; ``None`` matches nothing.
- ``NOT`` negates the conjunction of its conditions: NOT (a AND b).

The access rule (docs/contract.md, "Access rule"), when it appears as direct conditions of an
``AND`` (tenant_id ==, tags in, and the scope condition or OR of scope
branches, all with string values; with ``tainted != True`` and
``verified == True`` if present), becomes one ``MatchAny`` on the indexed
access keys (see ``converters``): same documents, a fraction of the cost.
``access_index=False`` turns the rewrite off (for tests that compare both).
"""

import threading
from collections.abc import Callable
from datetime import date, datetime
from typing import Any

import numpy as np
from qdrant_edge import (
    FieldCondition,
    Filter,
    HasIdCondition,
    IsEmptyCondition,
    MatchAny,
    MatchValue,
    RangeDateTime,
    RangeFloat,
)

from components.document_stores.qdrant_edge.converters import (
    ACCESS_KEYS_PATH,
    access_key,
    project_audience,
    public_access_key,
)
from components.document_stores.qdrant_edge.errors import FilterError

COMPARISON_OPERATORS = ("==", "!=", ">", ">=", "<", "<=", "in", "not in")
LOGICAL_OPERATORS = ("AND", "OR", "NOT")
# Integers beyond this lose precision as floats, so they match exactly instead of through a range.
_MAX_EXACT_FLOAT_INT = 2**53

Condition = Any  # one of qdrant_edge's condition classes


# Converting the access rule (one access key per tag and audience) takes ~0.15 ms, a tenth of a filtered hybrid
# query at 100k chunks, and a user's requests all carry the same filter: converted filters are kept. The key is
# an exact, type-tagged copy of the filter, so `1`, `1.0`, `True` and `"1"` never share an entry; a filter holding
# any other type (dates, tuples, objects) is converted every time. Engine filters are never modified after
# conversion, so sharing one between queries is safe.
FILTER_CACHE_SIZE = 1024
_CONVERTED: dict[tuple[Any, bool], Filter] = {}
_CONVERTED_LOCK = threading.Lock()
_KEY_SCALARS = (str, int, float, bool, type(None))


def convert_filters(filters: dict[str, Any] | None, access_index: bool = True) -> Filter | None:
    """
    Convert a Haystack filter dict into a ``qdrant_edge.Filter``.

    :param filters: A comparison (``{"field", "operator", "value"}``) or logical
        (``{"operator", "conditions"}``) filter, or ``None``/``{}`` for no filter.
    :param access_index: Answer the access rule from the access keys (see the module docstring).
    :returns: The engine filter, or ``None`` when there is nothing to filter on.
    :raises FilterError: If the filter is malformed, names an unknown operator or field,
        or compares with a value the operator cannot take.

    Usage:
    ```python
    convert_filters({"field": "meta.tenant_id", "operator": "==", "value": "acme"})
    ```
    """
    if filters is None:
        return None
    if not isinstance(filters, dict):
        raise FilterError(f"Filters must be a dict, got {type(filters).__name__}: {filters!r}.")
    if not filters:
        return None
    key = _cache_key(filters)
    if key is None:
        return _convert_root(filters, access_index)
    converted = _CONVERTED.get((key, access_index))
    if converted is None:
        converted = _convert_root(filters, access_index)  # a bad filter raises here: errors are never cached
        with _CONVERTED_LOCK:
            if len(_CONVERTED) >= FILTER_CACHE_SIZE:
                del _CONVERTED[next(iter(_CONVERTED))]  # the oldest entry (dicts keep insertion order)
            _CONVERTED[(key, access_index)] = converted
    return converted


def _cache_key(value: Any) -> tuple | None:
    """A hashable, exact copy of a filter built only of str-keyed dicts, lists and JSON scalars; else None."""
    kind = type(value)
    if kind is dict:
        items = tuple((name, _cache_key(item)) for name, item in value.items())
        return None if any(type(name) is not str or key is None for name, key in items) else ("dict", items)
    if kind is list:
        keys = tuple(_cache_key(item) for item in value)
        return None if any(key is None for key in keys) else ("list", keys)
    if kind in _KEY_SCALARS:  # exact types: a subclass may convert differently
        return (kind.__name__, value)
    return None


def _convert_root(filters: dict[str, Any], access_index: bool) -> Filter:
    condition = _convert(filters, "filters", access_index)
    return condition if isinstance(condition, Filter) else Filter(must=[condition])


def _convert(item: Any, path: str, access_index: bool) -> Condition:
    if not isinstance(item, dict):
        raise FilterError(f"{path} must be a dict with an 'operator', got {type(item).__name__}: {item!r}.")
    if "operator" not in item:
        raise FilterError(
            f"{path} has no 'operator' key: {item!r}. Use {{'field', 'operator', 'value'}} or "
            "{'operator': 'AND'|'OR'|'NOT', 'conditions': [...]}."
        )
    operator = item["operator"]
    if operator in LOGICAL_OPERATORS:
        return _convert_logical(operator, item, path, access_index)
    if operator in COMPARISON_OPERATORS:
        return _convert_comparison(operator, item, path)
    raise FilterError(
        f"Unknown filter operator {operator!r} in {path}; "
        f"use one of {', '.join(COMPARISON_OPERATORS + LOGICAL_OPERATORS)}."
    )


def _convert_logical(operator: str, item: dict[str, Any], path: str, access_index: bool) -> Condition:
    conditions = item.get("conditions")
    if not isinstance(conditions, list) or not conditions:
        raise FilterError(
            f"Logical operator {operator!r} in {path} needs a non-empty list under 'conditions': {item!r}."
        )
    if access_index and operator == "OR":
        # The whole rule (docs/contract.md, "Access rule"): the tenant branch OR the public branch. When every
        # branch is answered by access keys, the OR is one indexed lookup of their union.
        branch_keys = [_branch_keys(condition) for condition in conditions]
        if all(keys is not None for keys in branch_keys):
            union = sorted({key for keys in branch_keys for key in keys})
            return Filter(must=[FieldCondition(key=ACCESS_KEYS_PATH, match=MatchAny(any=union))])
    rule = _access_rule(conditions) if access_index and operator == "AND" else None
    keys, used = rule if rule is not None else ([], set())
    converted = [
        _convert(condition, f"{path}.conditions[{index}]", access_index)
        for index, condition in enumerate(conditions)
        if index not in used
    ]
    if operator == "AND":
        if rule is not None:
            return Filter(must=[FieldCondition(key=ACCESS_KEYS_PATH, match=MatchAny(any=keys)), *converted])
        return Filter(must=converted)
    if operator == "OR":
        return Filter(should=converted)
    # Haystack's NOT negates the conjunction of its conditions.
    return Filter(must_not=[Filter(must=converted)])


def _comparison(item: Any, field: str, operator: str) -> Any:
    """The value of a comparison on ``field`` with ``operator``, or None if ``item`` is not one."""
    if isinstance(item, dict) and item.get("field") == field and item.get("operator") == operator and len(item) == 3:
        return item.get("value")
    return None


def _audiences(item: Any) -> list[tuple[str, str]] | None:
    """The audiences a scope condition admits, or None if ``item`` is not of the access rule's shape."""
    if _comparison(item, "meta.scope", "==") == "tenant":
        return [("tenant", "")]
    if not isinstance(item, dict) or len(item) != 2 or not isinstance(item.get("conditions"), list):
        return None
    operator, branches = item.get("operator"), item["conditions"]
    if operator == "OR" and branches:
        audiences: list[tuple[str, str]] = []
        for branch in branches:
            admitted = _audiences(branch)
            if admitted is None:
                return None
            audiences += admitted
        return audiences
    if operator == "AND" and len(branches) == 2:
        for first, second in (branches, branches[::-1]):
            audience_id = _comparison(second, "meta.user_id", "==")
            if _comparison(first, "meta.scope", "==") == "user" and isinstance(audience_id, str):
                return [("user", audience_id)]
    if operator == "AND" and len(branches) == 3:
        # scope == "project" AND project_id == P AND user_id == U, in any order (the owner rule).
        values = {}
        for branch in branches:
            for field in ("meta.scope", "meta.project_id", "meta.user_id"):
                value = _comparison(branch, field, "==")
                if isinstance(value, str) and field not in values:
                    values[field] = value
                    break
        if len(values) == 3 and values["meta.scope"] == "project":
            return [("project", project_audience(values["meta.project_id"], values["meta.user_id"]))]
    return None


def _branch_keys(item: Any) -> list[str] | None:
    """The access keys an AND branch stands for when access keys answer all of it (tenant or public), else None."""
    if not isinstance(item, dict) or item.get("operator") != "AND" or not isinstance(item.get("conditions"), list):
        return None
    conditions = item["conditions"]
    rule = _access_rule(conditions)
    if rule is not None:
        keys, used = rule
        return keys if len(used) == len(conditions) else None
    return _public_keys(conditions)


def _public_keys(conditions: list[Any]) -> list[str] | None:
    """Keys of the public branch: scope == "public", plus ``tainted != True`` / ``verified == True``; else None."""
    public = tainted = verified = False
    for condition in conditions:
        if not public and _comparison(condition, "meta.scope", "==") == "public":
            public = True
        elif not tainted and _comparison(condition, "meta.tainted", "!=") is True:
            tainted = True
        elif not verified and _comparison(condition, "meta.verified", "==") is True:
            verified = True
        else:
            return None
    if not public:
        return None
    return sorted(
        public_access_key(is_tainted, is_verified)
        for is_tainted in ((False,) if tainted else (False, True))
        for is_verified in ((True,) if verified else (False, True))
    )


def _access_rule(conditions: list[Any]) -> tuple[list[str], set[int]] | None:
    """
    Find the access rule among the conditions of an AND: tenant_id == T, tags in [...] and a scope condition,
    plus ``tainted != True`` and ``verified == True`` when present.

    :returns: The access keys the rule admits and the indexes of the conditions it replaces, or None.
    """
    tenant = tags = scope = tainted = verified = None
    for index, condition in enumerate(conditions):
        if tenant is None and isinstance(_comparison(condition, "meta.tenant_id", "=="), str):
            tenant = index
        elif tags is None and _is_string_list(_comparison(condition, "meta.tags", "in")):
            tags = index
        elif scope is None and _audiences(condition) is not None:
            scope = index
        elif tainted is None and _comparison(condition, "meta.tainted", "!=") is True:
            tainted = index
        elif verified is None and _comparison(condition, "meta.verified", "==") is True:
            verified = index
    if tenant is None or tags is None or scope is None:
        return None
    tainted_states = (False,) if tainted is not None else (False, True)
    verified_states = (True,) if verified is not None else (False, True)
    keys = sorted(
        {
            access_key(conditions[tenant]["value"], tag, kind, audience_id, is_tainted, is_verified)
            for tag in conditions[tags]["value"]
            for kind, audience_id in _audiences(conditions[scope]) or []
            for is_tainted in tainted_states
            for is_verified in verified_states
        }
    )
    return keys, {index for index in (tenant, tags, scope, tainted, verified) if index is not None}


def _is_string_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(item, str) for item in value)


def _convert_comparison(operator: str, item: dict[str, Any], path: str) -> Condition:
    field = item.get("field")
    if not isinstance(field, str) or not field:
        raise FilterError(f"Comparison {operator!r} in {path} needs a 'field' name (e.g. 'meta.tenant_id'): {item!r}.")
    if "value" not in item:
        raise FilterError(f"Comparison {operator!r} on {field!r} in {path} has no 'value' key: {item!r}.")
    value = item["value"]
    if isinstance(value, datetime | date):
        value = value.isoformat()
    if field == "id":
        return _id_condition(operator, value, path)
    key = _payload_key(field, path)
    return _BUILDERS[operator](key, value, path)


def _payload_key(field: str, path: str) -> str:
    if field == "content":
        return "content"
    if field.startswith("meta.") and len(field) > len("meta."):
        return field
    raise FilterError(
        f"Unknown filter field {field!r} in {path}: use 'id', 'content' or 'meta.<name>' (e.g. 'meta.{field}')."
    )


def _id_condition(operator: str, value: Any, path: str) -> Condition:
    if operator in ("==", "!="):
        if not isinstance(value, str):
            raise FilterError(f"Filter on 'id' in {path} needs a string value, got {value!r}.")
        condition = FieldCondition(key="id", match=MatchValue(value=value))
    elif operator in ("in", "not in"):
        _require_list(operator, "id", value, path)
        if not all(isinstance(one, str) for one in value):
            raise FilterError(f"Filter on 'id' in {path} needs a list of strings, got {value!r}.")
        condition = (
            FieldCondition(key="id", match=MatchAny(any=list(dict.fromkeys(value)))) if value else _match_nothing()
        )
    else:
        raise FilterError(f"Operator {operator!r} cannot compare document ids in {path}; use ==, !=, in or not in.")
    return Filter(must_not=[condition]) if operator in ("!=", "not in") else condition


def _match_nothing() -> Condition:
    return HasIdCondition(point_ids=set())


def _equal(key: str, value: Any, path: str) -> Condition:
    if value is None:
        return IsEmptyCondition(key=key)
    if isinstance(value, bool):
        # The binding reads a Python bool as the integer 1/0 (bool subclasses int), which never matches a stored
        # boolean; numpy.bool_ is read as a boolean.
        return FieldCondition(key=key, match=MatchValue(value=np.bool_(value)))
    if isinstance(value, str):
        return FieldCondition(key=key, match=MatchValue(value=value))
    if isinstance(value, int | float):
        if isinstance(value, int) and abs(value) > _MAX_EXACT_FLOAT_INT:
            return FieldCondition(key=key, match=MatchValue(value=value))
        # A closed range matches 2 and 2.0 alike, as Python's == does.
        return FieldCondition(key=key, range=RangeFloat(gte=float(value), lte=float(value)))
    raise FilterError(
        f"Cannot compare {key!r} with {value!r} ({type(value).__name__}) in {path}: use a string, number, boolean "
        "or None; for a list of values use the 'in' operator."
    )


def _not_equal(key: str, value: Any, path: str) -> Condition:
    return Filter(must_not=[_equal(key, value, path)])


def _require_list(operator: str, key: str, value: Any, path: str) -> None:
    if not isinstance(value, list):
        raise FilterError(
            f"Operator {operator!r} on {key!r} in {path} needs a list value, got {type(value).__name__}: {value!r}."
        )


def _in(key: str, value: Any, path: str, operator: str = "in") -> Condition:
    _require_list(operator, key, value, path)
    if not value:
        return _match_nothing()
    # Strings share one MatchAny (served by the keyword indexes); numbers, booleans and None
    # keep their own equality semantics.
    strings = [one for one in value if isinstance(one, str)]
    conditions: list[Condition] = [FieldCondition(key=key, match=MatchAny(any=strings))] if strings else []
    conditions.extend(_equal(key, one, path) for one in value if not isinstance(one, str))
    return conditions[0] if len(conditions) == 1 else Filter(should=conditions)


def _not_in(key: str, value: Any, path: str) -> Condition:
    return Filter(must_not=[_in(key, value, path, operator="not in")])


def _range(operator: str) -> Callable[[str, Any, str], Condition]:
    bound = {">": "gt", ">=": "gte", "<": "lt", "<=": "lte"}[operator]

    def build(key: str, value: Any, path: str) -> Condition:
        if value is None:
            return _match_nothing()
        if isinstance(value, int | float) and not isinstance(value, bool):
            return FieldCondition(key=key, range=RangeFloat(**{bound: float(value)}))
        if isinstance(value, str):
            try:
                moment = datetime.fromisoformat(value)
            except ValueError:
                raise FilterError(
                    f"Operator {operator!r} on {key!r} in {path} compares numbers or ISO 8601 dates; "
                    f"{value!r} is neither."
                ) from None
            # isoformat() gives the RFC 3339 form the engine parses, also for date-only input.
            return FieldCondition(key=key, range=RangeDateTime(**{bound: moment.isoformat()}))
        raise FilterError(
            f"Operator {operator!r} on {key!r} in {path} compares numbers or ISO 8601 dates, "
            f"got {type(value).__name__}: {value!r}."
        )

    return build


_BUILDERS: dict[str, Callable[[str, Any, str], Condition]] = {
    "==": _equal,
    "!=": _not_equal,
    "in": _in,
    "not in": _not_in,
    ">": _range(">"),
    ">=": _range(">="),
    "<": _range("<"),
    "<=": _range("<="),
}
