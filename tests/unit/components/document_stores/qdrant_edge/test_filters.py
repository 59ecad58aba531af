"""Haystack filters -> Qdrant Edge filters: conversion errors, and semantics checked against the real engine."""

import pytest
from haystack import Document
from qdrant_edge import FieldCondition, Filter

from components.document_stores.qdrant_edge import FilterError, QdrantEdgeDocumentStore
from components.document_stores.qdrant_edge.filters import convert_filters


@pytest.mark.unit
class TestConvertFilters:
    def test_no_filter(self):
        assert convert_filters(None) is None
        assert convert_filters({}) is None

    def test_comparison_is_wrapped_in_a_filter(self):
        assert isinstance(convert_filters({"field": "meta.tenant_id", "operator": "==", "value": "acme"}), Filter)

    def test_id_matches_the_stored_id(self):
        # Point ids derive from tenant and id, so `id` matches the payload id (docs/contract.md "Document ids").
        converted = convert_filters({"field": "id", "operator": "in", "value": ["doc-1:0", "doc-1:1"]})
        condition = converted.must[0]
        assert isinstance(condition, FieldCondition) and condition.key == "id"
        assert list(condition.match.value) == ["doc-1:0", "doc-1:1"]

    @pytest.mark.parametrize(
        ("filters", "message"),
        [
            ("meta.tenant_id == acme", "must be a dict"),
            ({"field": "meta.a", "operator": "like", "value": "x"}, "Unknown filter operator 'like'"),
            ({"operator": "XOR", "conditions": []}, "Unknown filter operator 'XOR'"),
            ({"operator": "OR", "conditions": []}, "'OR'.*non-empty list"),
            ({"operator": "AND", "conditions": {"field": "meta.a"}}, "'AND'.*non-empty list"),
            ({"operator": "AND", "conditions": ["meta.a"]}, r"filters.conditions\[0\] must be a dict"),
            ({"operator": "NOT", "conditions": [{"operator": "==", "value": 1}]}, "needs a 'field'"),
            ({"field": "meta.a", "value": 1}, "no 'operator'"),
            ({"field": "meta.a", "operator": "!="}, "no 'value'"),
            ({"field": "name", "operator": "==", "value": "x"}, "Unknown filter field 'name'.*meta.name"),
            ({"field": "meta.", "operator": "==", "value": "x"}, "Unknown filter field"),
            ({"field": "meta.a", "operator": "==", "value": ["x"]}, "use the 'in' operator"),
            ({"field": "meta.a", "operator": ">=", "value": True}, "numbers or ISO 8601"),
            ({"field": "meta.a", "operator": "<", "value": [1]}, "numbers or ISO 8601"),
            ({"field": "meta.a", "operator": "not in", "value": (1, 2)}, "needs a list"),
            ({"field": "id", "operator": ">", "value": "a"}, "cannot compare document ids"),
            ({"field": "id", "operator": "==", "value": 3}, "string value"),
        ],
    )
    def test_malformed_filters_name_the_problem(self, filters, message):
        with pytest.raises(FilterError, match=message):
            convert_filters(filters)

    def test_converted_filters_are_reused_only_for_exactly_equal_filters(self):
        rule = {"operator": "AND", "conditions": [
            {"field": "meta.tenant_id", "operator": "==", "value": "acme"},
            {"field": "meta.tags", "operator": "in", "value": ["hr", "it"]},
            {"field": "meta.scope", "operator": "==", "value": "tenant"},
        ]}  # fmt: skip
        first = convert_filters(rule)
        assert convert_filters({**rule}) is first  # an equal filter: the converted one again
        assert convert_filters(rule, access_index=False) is not first
        assert str(convert_filters(rule, access_index=False)) != str(first)
        one, true, text = ({"field": "meta.a", "operator": "==", "value": value} for value in (1, True, "1"))
        assert len({str(convert_filters(item)) for item in (one, true, text)}) == 3  # never share an entry
        tuple_values = {"field": "meta.a", "operator": "not in", "value": (1, 2)}
        convert_filters({"field": "meta.a", "operator": "not in", "value": [1, 2]})
        for _ in range(2):  # a list-valued twin is cached, the tuple is still refused every time
            with pytest.raises(FilterError, match="needs a list"):
                convert_filters(tuple_values)

    def test_filter_error_is_haystacks(self):
        from haystack.errors import FilterError as HaystackFilterError

        with pytest.raises(HaystackFilterError):
            convert_filters({"field": "meta.a", "operator": "~", "value": 1})


def doc(doc_id: str, **meta) -> Document:
    return Document(id=doc_id, content=f"content of {doc_id}", meta=meta)


@pytest.fixture(scope="module")
def filled_store(tmp_path_factory):
    store = QdrantEdgeDocumentStore(path=str(tmp_path_factory.mktemp("filters") / "qdrant"), embedding_dim=4)
    store.write_documents(
        [
            doc("a", tenant_id="acme", tags=["hr", "public"], scope="tenant", n=2, flag=True, day="2024-01-15"),
            doc(
                "b",
                tenant_id="acme",
                tags=["it"],
                scope="user",
                user_id="u1",
                n=2.0,
                flag=False,
                day="2024-03-01T12:00:00",
            ),
            doc(
                "c",
                tenant_id="acme",
                tags=["it", "hr"],
                scope="project",
                project_id="p1",
                user_id="u1",
                n=2.5,
                day="2023-12-31",
            ),
            doc("d", tenant_id="globex", tags=["hr"], scope="tenant", n=-1),
            doc("e", tenant_id="acme", tags=[], scope="user", user_id="u2"),
        ]
    )
    yield store
    store.close()


def ids(store: QdrantEdgeDocumentStore, filters) -> list[str]:
    return sorted(document.id for document in store.filter_documents(filters))


@pytest.mark.integration
class TestFilterSemantics:
    @pytest.mark.parametrize(
        ("filters", "expected"),
        [
            # list fields: `in` shares at least one value, `==` contains
            ({"field": "meta.tags", "operator": "in", "value": ["hr", "finance"]}, ["a", "c", "d"]),
            ({"field": "meta.tags", "operator": "==", "value": "it"}, ["b", "c"]),
            ({"field": "meta.tags", "operator": "in", "value": []}, []),
            ({"field": "meta.tags", "operator": "not in", "value": ["hr"]}, ["b", "e"]),
            # numbers compare as numbers: 2 == 2.0
            ({"field": "meta.n", "operator": "==", "value": 2}, ["a", "b"]),
            ({"field": "meta.n", "operator": "in", "value": [2.5, -1]}, ["c", "d"]),
            ({"field": "meta.n", "operator": "!=", "value": 2}, ["c", "d", "e"]),
            ({"field": "meta.n", "operator": ">", "value": 0}, ["a", "b", "c"]),
            ({"field": "meta.n", "operator": "<=", "value": None}, []),
            ({"field": "meta.n", "operator": "==", "value": None}, ["e"]),
            # booleans match booleans only
            ({"field": "meta.flag", "operator": "==", "value": True}, ["a"]),
            ({"field": "meta.flag", "operator": "==", "value": False}, ["b"]),
            ({"field": "meta.flag", "operator": "in", "value": [True, False]}, ["a", "b"]),
            # ISO dates, with or without a time
            ({"field": "meta.day", "operator": ">=", "value": "2024-01-01"}, ["a", "b"]),
            ({"field": "meta.day", "operator": "<", "value": "2024-01-15T00:00:01"}, ["a", "c"]),
            # ids and content
            ({"field": "id", "operator": "==", "value": "c"}, ["c"]),
            ({"field": "id", "operator": "not in", "value": ["a", "b"]}, ["c", "d", "e"]),
            ({"field": "content", "operator": "==", "value": "content of d"}, ["d"]),
            # NOT negates the conjunction
            (
                {
                    "operator": "NOT",
                    "conditions": [
                        {"field": "meta.tenant_id", "operator": "==", "value": "acme"},
                        {"field": "meta.scope", "operator": "==", "value": "user"},
                    ],
                },
                ["a", "c", "d"],
            ),
        ],
    )
    def test_semantics(self, filled_store, filters, expected):
        assert ids(filled_store, filters) == expected
        assert filled_store.count_documents_by_filter(filters) == len(expected)

    @pytest.mark.parametrize(
        ("user_id", "project_id", "user_tags", "expected"),
        [
            ("u1", "p1", ["hr", "it"], ["a", "b", "c"]),
            ("u2", "p9", ["hr", "it"], ["a"]),  # e is u2's but has no tags
            ("u1", "p9", ["it"], ["b"]),
            ("u1", "p1", ["finance"], []),
        ],
    )
    def test_access_rule_from_the_contract(self, filled_store, user_id, project_id, user_tags, expected):
        access = {
            "operator": "AND",
            "conditions": [
                {"field": "meta.tenant_id", "operator": "==", "value": "acme"},
                {"field": "meta.tags", "operator": "in", "value": user_tags},
                {
                    "operator": "OR",
                    "conditions": [
                        {"field": "meta.scope", "operator": "==", "value": "tenant"},
                        {
                            "operator": "AND",
                            "conditions": [
                                {"field": "meta.scope", "operator": "==", "value": "user"},
                                {"field": "meta.user_id", "operator": "==", "value": user_id},
                            ],
                        },
                        {
                            "operator": "AND",
                            "conditions": [
                                {"field": "meta.scope", "operator": "==", "value": "project"},
                                {"field": "meta.project_id", "operator": "==", "value": project_id},
                                {"field": "meta.user_id", "operator": "==", "value": user_id},
                            ],
                        },
                    ],
                },
            ],
        }
        assert ids(filled_store, access) == expected


# --------------------------------------------------------------------------- the access-rule rewrite

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from qdrant_edge import ScrollRequest  # noqa: E402

from components.document_stores.qdrant_edge.converters import ACCESS_KEYS_PATH  # noqa: E402


def access_rule(tenant, tags, branches, extra=(), order=None) -> dict:
    """
    The tenant branch of the access rule as components.core.access_rule builds it, with branches as ("tenant",) /
    ("user", id) / ("project", id) (owned by "u1": project chunks are private to their owner) / ... "reversed".
    """
    scope_branches = []
    for branch in branches:
        if branch[0] == "tenant":
            scope_branches.append({"field": "meta.scope", "operator": "==", "value": "tenant"})
        elif branch[0] == "project":
            triple = [
                {"field": "meta.scope", "operator": "==", "value": "project"},
                {"field": "meta.project_id", "operator": "==", "value": branch[1]},
                {"field": "meta.user_id", "operator": "==", "value": "u1"},
            ]
            scope_branches.append({"operator": "AND", "conditions": triple if len(branch) == 2 else triple[::-1]})
        else:
            pair = [
                {"field": "meta.scope", "operator": "==", "value": branch[0]},
                {"field": f"meta.{branch[0]}_id", "operator": "==", "value": branch[1]},
            ]
            scope_branches.append({"operator": "AND", "conditions": pair if len(branch) == 2 else pair[::-1]})
    conditions = [
        {"field": "meta.tenant_id", "operator": "==", "value": tenant},
        {"field": "meta.tags", "operator": "in", "value": list(tags)},
        scope_branches[0] if len(scope_branches) == 1 else {"operator": "OR", "conditions": scope_branches},
        *extra,
    ]
    if order is not None:
        conditions = [conditions[index % len(conditions)] for index in order]
    return {"operator": "AND", "conditions": conditions}


def uses_access_keys(converted) -> bool:
    return any(
        isinstance(condition, FieldCondition) and condition.key == ACCESS_KEYS_PATH
        for condition in converted.must or []
    )


@pytest.mark.unit
class TestAccessKey:
    def test_key_is_a_short_digest_of_every_part(self):
        from components.document_stores.qdrant_edge.converters import access_key

        key = access_key("acme", "hr", "user", "u1", False, True)
        assert len(key) == 22 and key.isascii() and "acme" not in key
        assert key == access_key("acme", "hr", "user", "u1", False, True)
        others = {
            access_key("acme", "hr", "user", "u1", False, False),
            access_key("acme", "hr", "user", "u1", True, True),
            access_key("acme", "hr", "user", "u2", False, True),
            access_key("acme", "hr", "tenant", "", False, True),
            access_key("acme", "it", "user", "u1", False, True),
            access_key("acme2", "hr", "user", "u1", False, True),
            # JSON keeps the parts apart: moving a character across a boundary is another key.
            access_key("acmeh", "r", "user", "u1", False, True),
        }
        assert key not in others and len(others) == 7


@pytest.mark.unit
class TestAccessRuleRewrite:
    def test_contract_rule_becomes_one_key_match(self):
        rule = access_rule("acme", ["hr", "it"], [("tenant",), ("user", "u1"), ("project", "p1", "reversed")])
        converted = convert_filters(rule)
        assert len(converted.must) == 1 and uses_access_keys(converted)
        assert len(converted.must[0].match.value) == 24  # 2 tags x 3 audiences x tainted or not x verified or not
        assert not uses_access_keys(convert_filters(rule, access_index=False))

    def test_flags_are_absorbed_and_other_conditions_stay(self):
        flags = [
            {"field": "meta.tainted", "operator": "!=", "value": True},
            {"field": "meta.verified", "operator": "==", "value": True},
        ]
        converted = convert_filters(access_rule("acme", ["hr"], [("tenant",)], extra=flags))
        assert uses_access_keys(converted) and len(converted.must) == 1
        assert len(converted.must[0].match.value) == 1  # only (acme, hr, tenant, not tainted, verified)
        other = {"field": "meta.source_type", "operator": "==", "value": "md"}
        converted = convert_filters(access_rule("acme", ["hr"], [("tenant",)], extra=[other]))
        assert uses_access_keys(converted) and len(converted.must) == 2

    @pytest.mark.parametrize(
        "rule",
        [
            access_rule("acme", [], [("tenant",)]),  # no tags: matches nothing, left to the plain filter
            {
                "operator": "AND",
                "conditions": [
                    {"field": "meta.tenant_id", "operator": "==", "value": "acme"},
                    {"field": "meta.tags", "operator": "in", "value": ["hr"]},
                    {"field": "meta.scope", "operator": "==", "value": "user"},
                ],
            },
            {"operator": "OR", "conditions": access_rule("acme", ["hr"], [("tenant",)])["conditions"]},
            access_rule(3, ["hr"], [("tenant",)]),
        ],
    )
    def test_other_shapes_are_not_rewritten(self, rule):
        assert not uses_access_keys(convert_filters(rule))


AUDIENCE_VALUES = {
    "tenant_id": ["t1", "t2", ["t1", "t2"], 7, None],
    "tags": [["a"], ["a", "b"], ["c"], [], "a", None, ["b", 3]],
    "scope": ["tenant", "user", "project", ["user", "project"], "public", None],
    "user_id": ["u1", "u2", ["u1", "u2"], 5, None],
    "project_id": ["p1", "p2", None],
    "tainted": [True, False, None, 1, [True, False]],
    "verified": [True, False, None, 0, [False], [True]],
    "source_type": ["md", "pdf", None],
}


def access_documents(count: int = 400) -> list[Document]:
    import random

    rng = random.Random(7)
    documents = []
    for index in range(count):
        meta = {}
        for field, values in AUDIENCE_VALUES.items():
            value = rng.choice(values)
            if value is not None:
                meta[field] = value
        documents.append(Document(id=f"doc-{index}:0", content=f"chunk {index}", meta=meta))
    return documents


@pytest.fixture(scope="module")
def access_store(tmp_path_factory):
    store = QdrantEdgeDocumentStore(path=str(tmp_path_factory.mktemp("access") / "qdrant"), embedding_dim=4)
    store.write_documents(access_documents())
    yield store
    store.close()


def engine_ids(store: QdrantEdgeDocumentStore, filters: dict, access_index: bool) -> set:
    shard = store._shard_state().shard
    records, _ = shard.scroll(ScrollRequest(limit=10_000, filter=convert_filters(filters, access_index=access_index)))
    return {record.id for record in records}


branch_strategy = st.one_of(
    st.just(("tenant",)),
    st.tuples(st.just("user"), st.sampled_from(["u1", "u2", "u3"])),
    st.tuples(st.just("project"), st.sampled_from(["p1", "p2"])),
    st.tuples(st.sampled_from(["user", "project"]), st.sampled_from(["u1", "p1"]), st.just("reversed")),
)


@pytest.mark.integration
class TestAccessRuleEquivalence:
    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(
        tenant=st.sampled_from(["t1", "t2", "t3"]),
        tags=st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=3, unique=True),
        branches=st.lists(branch_strategy, min_size=1, max_size=3),
        extras=st.lists(
            st.sampled_from(
                [
                    {"field": "meta.tainted", "operator": "!=", "value": True},
                    {"field": "meta.verified", "operator": "==", "value": True},
                    {"field": "meta.source_type", "operator": "==", "value": "md"},
                ]
            ),
            unique_by=lambda condition: condition["field"],
        ),
        order=st.permutations(range(6)),
    )
    def test_rewrite_selects_exactly_what_the_plain_filter_selects(
        self, access_store, tenant, tags, branches, extras, order
    ):
        size = 3 + len(extras)
        rule = access_rule(tenant, tags, branches, extra=extras, order=[index for index in order if index < size])
        assert uses_access_keys(convert_filters(rule))
        assert engine_ids(access_store, rule, access_index=True) == engine_ids(access_store, rule, access_index=False)

    def test_update_by_filter_recomputes_access_keys(self, tmp_path):
        store = QdrantEdgeDocumentStore(path=str(tmp_path / "qdrant"), embedding_dim=4)
        try:
            store.write_documents(access_documents(60))
            flags = [{"field": "meta.tainted", "operator": "!=", "value": True}]
            rules = [
                access_rule(tenant, ["c"], [("tenant",), ("user", "u1"), ("project", "p2")], extra=flags)
                for tenant in ("t1", "t2")
            ]
            changes = [
                ({"field": "meta.tags", "operator": "in", "value": ["a"]}, {"tags": ["c"]}),
                ({"field": "meta.scope", "operator": "==", "value": "user"}, {"scope": "tenant", "verified": True}),
                (
                    {"field": "meta.project_id", "operator": "==", "value": "p1"},
                    {"project_id": "p2", "scope": "project", "tags": ["c"]},
                ),
                ({"field": "meta.tenant_id", "operator": "==", "value": "t1"}, {"tenant_id": "t2"}),
                ({"field": "meta.tags", "operator": "in", "value": ["c"]}, {"tainted": True}),
            ]
            for filters, meta in changes:
                before = [engine_ids(store, rule, False) for rule in rules]
                assert store.update_by_filter(filters, meta) > 0
                after = [engine_ids(store, rule, False) for rule in rules]
                assert after != before  # each change alters what the rule admits ...
                assert [engine_ids(store, rule, True) for rule in rules] == after  # ... and the keys follow
        finally:
            store.close()
