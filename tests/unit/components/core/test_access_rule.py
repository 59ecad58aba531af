"""The access rule in its two forms: the store filter and the per-document check must agree."""

import itertools

import pytest
from haystack import Document

from components.core.access_rule import AccessRule, WriteRule


def _corpus() -> list[Document]:
    """Every combination of tenant, scope, owner, tags and flags."""
    documents = []
    combos = itertools.product(
        ["acme", "globex"],
        ["tenant", "user", "project", "public"],
        [None, "u1", "u2"],
        [None, "p1", "p2"],
        [["hr"], ["eng"], ["hr", "eng"], ["fin"]],
        [False, True],
        [False, True],
    )
    for number, (tenant, scope, user, project, tags, verified, tainted) in enumerate(combos):
        meta = {
            "tenant_id": tenant,
            "scope": scope,
            "tags": tags,
            "verified": verified,
            "tainted": tainted,
            "document_id": f"d{number}",
            "chunk_index": 0,
            # Interleaved so every combination above meets every language (and a chunk without one).
            "language": ("de", "ru", None)[number % 3],
        }
        if number % 5:  # the domain narrowing meets chunks with and without a domain
            meta["domain"] = ("code-general", "docs")[number % 2]
        if user:
            meta["user_id"] = user
        if project:
            meta["project_id"] = project
        documents.append(Document(id=f"d{number}:0", content=f"canary {number}", meta=meta))
    return documents


REQUESTS = [
    AccessRule("acme", ("hr",)),
    AccessRule("acme", ("hr", "eng"), user_id="u1"),
    AccessRule("acme", ("eng",), project_id="p2"),
    AccessRule("globex", ("fin", "hr"), user_id="u2", project_id="p1", verified_only=True),
    AccessRule("acme", ("hr",), user_id="u1", project_id="p1", exclude_tainted=False),
    AccessRule("acme", ("nobody-has-this",)),
    # The query scope keeps one branch (docs/contract.md "Access rule").
    AccessRule("acme", ("hr", "eng"), user_id="u1", project_id="p1", scope="project"),
    AccessRule("acme", ("hr", "eng"), user_id="u1", project_id="p1", scope="user"),
    AccessRule("acme", ("hr", "eng"), user_id="u1", project_id="p1", scope="tenant"),
    AccessRule("globex", ("fin",), user_id="u2", scope="public", verified_only=True),
    AccessRule("acme", ("hr",), scope="user"),  # no user: the narrowing leaves nothing
    # The language narrowing (docs/contract.md "Languages") on every branch, public included.
    AccessRule("acme", ("hr", "eng"), user_id="u1", project_id="p1", language="de"),
    AccessRule("globex", ("fin",), user_id="u2", language="ru", verified_only=True),
    AccessRule("acme", ("hr",), language="zh"),  # no chunk in that language
    # The metadata narrowings of the specification routes: a chunk's project and domain (filters, not identity).
    AccessRule("acme", ("hr", "eng"), user_id="u1", project_id="p1", in_project="p1"),
    AccessRule("acme", ("hr", "eng"), in_project="p2", domain="code-general"),
    AccessRule("globex", ("fin",), user_id="u2", domain="docs", verified_only=True, exclude_tainted=False),
]


@pytest.mark.unit
class TestAccessRule:
    def test_requires_tenant_and_tags(self):
        with pytest.raises(ValueError, match="tenant_id"):
            AccessRule("", ("hr",))
        with pytest.raises(ValueError, match="user_tags"):
            AccessRule("acme", ())

    def test_tags_sorted_and_deduplicated(self):
        assert AccessRule("acme", ("b", "a", "b")).user_tags == ("a", "b")

    def test_options_only_the_booleans_and_scope(self):
        rule = AccessRule.from_request("acme", ["hr"], options={"verified_only": True})
        assert rule.verified_only and rule.exclude_tainted
        with pytest.raises(ValueError, match="Unsupported filter option"):
            AccessRule.from_request("acme", ["hr"], options={"tenant_id": "globex"})
        with pytest.raises(ValueError, match="boolean"):
            AccessRule.from_request("acme", ["hr"], options={"verified_only": "true"})

    def test_language_option(self):
        rule = AccessRule.from_request("acme", ["hr"], options={"language": "de"})
        assert rule.language == "de" and rule.as_dict()["language"] == "de"
        for branch in rule.to_filters()["conditions"]:
            assert {"field": "meta.language", "operator": "==", "value": "de"} in branch["conditions"]
        assert AccessRule.from_request("acme", ["hr"]).language is None
        for bad in ("DE", "german", "de-DE", "", 7):
            with pytest.raises(ValueError, match="language"):
                AccessRule.from_request("acme", ["hr"], options={"language": bad})
        german = Document(content="x", meta={"tenant_id": "acme", "tags": ["hr"], "scope": "tenant", "language": "de"})
        assert rule.allows(german)
        assert AccessRule("acme", ("hr",), language="ru").violation(german) == "language is not 'ru'"

    def test_project_and_domain_options_narrow_by_the_chunk(self):
        rule = AccessRule.from_request(
            "acme", ["hr"], user_id="u1", options={"project_id": "p1", "domain": "code-general"}
        )
        assert (rule.in_project, rule.domain, rule.project_id) == ("p1", "code-general", None)
        assert rule.as_dict()["in_project"] == "p1" and rule.as_dict()["domain"] == "code-general"
        for branch in rule.to_filters()["conditions"]:  # every branch, public included
            assert {"field": "meta.project_id", "operator": "==", "value": "p1"} in branch["conditions"]
            assert {"field": "meta.domain", "operator": "==", "value": "code-general"} in branch["conditions"]
        meta = {"tenant_id": "acme", "tags": ["hr"], "scope": "tenant", "project_id": "p1", "domain": "code-general"}
        assert rule.allows(Document(content="x", meta=meta))
        assert rule.violation(Document(content="x", meta={**meta, "project_id": "p2"})) == "project_id is not 'p1'"
        assert rule.violation(Document(content="x", meta={**meta, "domain": None})) == "domain is not 'code-general'"
        with pytest.raises(ValueError, match="in_project"):
            AccessRule.from_request("acme", ["hr"], options={"project_id": ""})

    def test_filter_shape(self):
        filters = AccessRule("acme", ("hr",), user_id="u1").to_filters()
        # The tenant branch OR the public branch, each carrying the flag conditions.
        assert filters["operator"] == "OR"
        tenant_branch, public_branch = filters["conditions"]
        assert tenant_branch["operator"] == "AND"
        assert tenant_branch["conditions"][0] == {"field": "meta.tenant_id", "operator": "==", "value": "acme"}
        assert tenant_branch["conditions"][1] == {"field": "meta.tags", "operator": "in", "value": ["hr"]}
        assert tenant_branch["conditions"][-1] == {"field": "meta.tainted", "operator": "!=", "value": True}
        assert public_branch == {
            "operator": "AND",
            "conditions": [
                {"field": "meta.scope", "operator": "==", "value": "public"},
                {"field": "meta.tainted", "operator": "!=", "value": True},
            ],
        }

    def test_scope_narrows_and_is_checked(self):
        only_public = AccessRule("acme", ("hr",), scope="public").to_filters()
        assert only_public["conditions"][0] == {"field": "meta.scope", "operator": "==", "value": "public"}
        assert AccessRule.from_request("acme", ["hr"], options={"scope": "tenant"}).scope == "tenant"
        with pytest.raises(ValueError, match="scope must be one of"):
            AccessRule("acme", ("hr",), scope="everything")

    @pytest.mark.parametrize("rule", REQUESTS, ids=lambda rule: f"{rule.tenant_id}-{'-'.join(rule.user_tags)}")
    def test_allows_follows_the_rule(self, rule):
        for document in _corpus():
            meta = document.meta
            own_tenant = (
                meta["tenant_id"] == rule.tenant_id
                and bool(set(meta["tags"]) & set(rule.user_tags))
                and (
                    meta["scope"] == "tenant"
                    or (meta["scope"] == "user" and rule.user_id is not None and meta.get("user_id") == rule.user_id)
                    or (
                        meta["scope"] == "project"
                        and rule.project_id is not None
                        and meta.get("project_id") == rule.project_id
                        and rule.user_id is not None
                        and meta.get("user_id") == rule.user_id
                    )
                )
            )
            expected = (
                (own_tenant or meta["scope"] == "public")
                and (rule.scope is None or meta["scope"] == rule.scope)
                and (not rule.verified_only or meta["verified"])
                and (not rule.exclude_tainted or not meta["tainted"])
                and (rule.language is None or meta["language"] == rule.language)
                and (rule.in_project is None or meta.get("project_id") == rule.in_project)
                and (rule.domain is None or meta.get("domain") == rule.domain)
            )
            assert rule.allows(document) is expected, (rule, meta)

    def test_missing_scope_fails_closed(self):
        document = Document(id="x:0", content="c", meta={"tenant_id": "acme", "tags": ["hr"]})
        assert "scope" in AccessRule("acme", ("hr",)).violation(document)


def _edge_store(tmp_path):
    from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore

    return QdrantEdgeDocumentStore(path=str(tmp_path / "qdrant"), embedding_dim=8)


def _server_store(tmp_path):
    # The server profile's store on qdrant-client's local engine: its filters go through qdrant-haystack's conversion.
    from components.document_stores.qdrant_server import TenantQdrantDocumentStore

    return TenantQdrantDocumentStore(local_location=str(tmp_path / "qdrant-local"), index="rule", embedding_dim=8)


def _meta(**fields):
    return {"tenant_id": "acme", "tags": ["hr"], "scope": "tenant", **fields}


@pytest.mark.unit
class TestWriteRule:
    """docs/contract.md, "Write rule": tags cover, owner actable, project within, public with the permission."""

    def test_init_normalises_and_validates(self):
        rule = WriteRule(tenant_ids=("acme", "acme"), tags=("hr", "finance", "hr"), user_ids=("bob",))
        assert rule.tenant_ids == ("acme",) and rule.tags == ("finance", "hr") and rule.projects is None
        for bad in ({"tenant_ids": ()}, {"tenant_ids": ("",)}, {"tenant_ids": ("acme",), "tags": ("",)},
                    {"tenant_ids": ("acme",), "public": "yes"}):  # fmt: skip
            with pytest.raises(ValueError):
                WriteRule(**bad)

    def test_tags_must_all_be_held(self):
        rule = WriteRule(tenant_ids=("acme",), tags=("finance",))
        assert rule.violation(_meta(tags=["finance"])) is None
        assert "['hr']" in rule.violation(_meta(tags=["hr", "finance"]))
        assert rule.violation(_meta(tags=[])) is not None  # a tag-limited caller covers no untagged document
        assert WriteRule.operator("acme").violation(_meta(tags=["anything"])) is None

    def test_tenant_and_scope(self):
        rule = WriteRule.operator("acme")
        assert "tenant" in rule.violation(_meta(tenant_id="globex"))
        assert "scope" in rule.violation(_meta(scope="everyone"))

    def test_owner_must_be_a_user_the_caller_acts_as(self):
        bob = WriteRule(tenant_ids=("acme",), tags=("hr",), user_ids=("bob",))
        assert bob.violation(_meta(scope="user", user_id="bob")) is None
        assert "alice" in bob.violation(_meta(scope="user", user_id="alice"))
        assert bob.violation(_meta()) is None  # tenant documents have no owner
        service = WriteRule(tenant_ids=("acme",), tags=("hr",), user_patterns=("u-acme-*",))
        assert service.allows(_meta(scope="user", user_id="u-acme-eva"))
        assert not service.allows(_meta(scope="user", user_id="u-globex-eva"))
        tenant_key = WriteRule(tenant_ids=("acme",), tags=("hr",))
        assert not tenant_key.allows(_meta(scope="user", user_id="bob"))
        # An exact user id is not a pattern: a user key of user "*" acts for "*" only.
        star = WriteRule(tenant_ids=("acme",), tags=("hr",), user_ids=("*",))
        assert star.allows(_meta(scope="user", user_id="*")) and not star.allows(_meta(scope="user", user_id="bob"))

    def test_projects_and_public(self):
        p1 = WriteRule(tenant_ids=("acme",), tags=("hr",), user_ids=("bob",), projects=("p1",))
        assert p1.allows(_meta(scope="project", project_id="p1", user_id="bob"))
        assert "p2" in p1.violation(_meta(scope="project", project_id="p2", user_id="bob"))
        assert "public" in p1.violation(_meta(scope="public"))
        assert WriteRule(tenant_ids=("acme",), tags=("hr",), public=True).allows(_meta(scope="public"))

    @pytest.mark.parametrize("scope", ["tenant", "user", "project", "public"])
    def test_the_operator_writes_everything_of_its_tenants(self, scope):
        meta = _meta(scope=scope, user_id="anyone", project_id="p9", tags=["x", "y"])
        assert WriteRule.operator(["acme", "globex"]).allows(meta) and WriteRule.operator("acme").unlimited
        assert not WriteRule(tenant_ids=("acme",), tags=("hr",), user_patterns=("*",), public=True).unlimited
        assert not WriteRule.operator("acme", public=False).allows(_meta(scope="public"))


@pytest.mark.integration
class TestAccessRuleInTheStore:
    @pytest.mark.parametrize("make_store", [_edge_store, _server_store], ids=["edge", "server-profile"])
    def test_store_filter_and_python_check_agree(self, tmp_path, make_store):
        store = make_store(tmp_path)
        corpus = _corpus()
        store.write_documents(corpus)
        for rule in REQUESTS:
            from_store = {doc.id for doc in store.filter_documents(rule.to_filters())}
            from_python = {doc.id for doc in corpus if rule.allows(doc)}
            assert from_store == from_python, rule
        assert not {doc.id for doc in store.filter_documents(REQUESTS[13].to_filters())}  # language "zh"
        store.close()
