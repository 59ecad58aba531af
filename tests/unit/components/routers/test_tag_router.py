"""TagRouter (specification test_get_route_target_with_owner / _fallback)."""

import asyncio

import pytest
from haystack import Document

from components.routers.tag_router import TagRouter, primary_tag
from components.stores.tag_directory import TagDirectory

CITATION = [{"source_id": "d0:0"}]


def _docs(*tag_lists: list[str]) -> list[Document]:
    return [Document(id=f"d{i}:0", content="c", score=0.5, meta={"tags": tags}) for i, tags in enumerate(tag_lists)]


@pytest.fixture
def directory_path(tmp_path):
    path = tmp_path / "tags.sqlite"
    directory = TagDirectory(path)
    directory.add_user("u-maria", "maria@acme.example")
    directory.add_user("u-marcus", "marcus@globex.example")
    directory.set_tag_owner("acme", "hr", "u-maria")
    directory.set_tag_owner("acme", "it", None)
    directory.set_tag_owner("globex", "hr", "u-marcus")
    directory.set_tag_owner("globex", "finance", None)
    return str(path)


def _run(router: TagRouter, overall: int, documents, user_tags, citations=CITATION, all_cited=True, tenant_id="acme"):
    return router.run(
        confidence={"overall": overall},
        documents=documents,
        tenant_id=tenant_id,
        user_tags=user_tags,
        citations=citations,
        all_sentences_cited=all_cited,
    )


@pytest.mark.unit
class TestTagRouter:
    def test_init(self, directory_path):
        router = TagRouter(directory_path=directory_path)
        assert router.confidence_threshold == 60 and router.admin_email == "admin@company.com"
        with pytest.raises(ValueError):
            TagRouter(directory_path=directory_path, admin_email="nobody")

    def test_to_dict(self, directory_path):
        assert TagRouter(directory_path=directory_path, admin_email="ops@x.example").to_dict() == {
            "type": "components.routers.tag_router.TagRouter",
            "init_parameters": {
                "directory_path": directory_path,
                "admin_email": "ops@x.example",
                "confidence_threshold": 60,
            },
        }

    def test_from_dict(self, directory_path):
        router = TagRouter.from_dict(TagRouter(directory_path=directory_path, confidence_threshold=75).to_dict())
        assert router.confidence_threshold == 75

    def test_run_cite(self, directory_path):
        out = _run(TagRouter(directory_path=directory_path), 60, _docs(["hr"]), ["hr"])
        assert out == {"action": "CITE", "route_to": None, "grounded": True, "primary_tag": "hr"}
        out = _run(TagRouter(directory_path=directory_path), 90, _docs(["hr"]), ["hr"], all_cited=False)
        assert out["action"] == "CITE" and out["grounded"] is False

    def test_get_route_target_with_owner(self, directory_path):
        out = _run(
            TagRouter(directory_path=directory_path),
            45,
            _docs(["hr", "all-staff"], ["hr"], ["it"]),
            ["hr", "it", "all-staff"],
        )
        assert out["action"] == "ROUTE" and out["grounded"] is False and out["primary_tag"] == "hr"
        assert out["route_to"] == {
            "tag": "hr",
            "owner_user_id": "u-maria",
            "owner_email": "maria@acme.example",
            "reason": "Low confidence: 45%, routing to hr owner",
            "fallback": False,
        }

    def test_get_route_target_fallback(self, directory_path):
        router = TagRouter(directory_path=directory_path, admin_email="admin@acme.example")
        no_owner = _run(router, 30, _docs(["it"]), ["it"])["route_to"]
        assert no_owner == {
            "tag": "it",
            "owner_user_id": None,
            "owner_email": "admin@acme.example",
            "reason": "Low confidence: 30%; no owner for tag 'it' - routing to admin",
            "fallback": True,
        }
        unknown_tag = _run(router, 30, _docs(["legal"]), ["legal"])["route_to"]
        assert (
            unknown_tag["fallback"]
            and unknown_tag["tag"] == "legal"
            and unknown_tag["owner_email"] == "admin@acme.example"
        )
        no_context = _run(router, 0, [], ["hr"], citations=[], all_cited=False)
        assert no_context["action"] == "ROUTE" and no_context["primary_tag"] is None
        assert no_context["route_to"]["tag"] == "system" and no_context["route_to"]["fallback"] is True
        assert no_context["route_to"]["reason"].startswith("No relevant context found")

    def test_primary_tag_only_among_held_tags_ties_alphabetical(self):
        documents = _docs(["secret", "b"], ["secret", "a"], ["secret"])
        assert primary_tag(documents, ["a", "b"]) == "a"  # "secret" is most common but not held
        assert primary_tag(documents, ["zzz"]) is None

    def test_uncited_answer_routes_even_with_high_confidence(self, directory_path):
        out = _run(TagRouter(directory_path=directory_path), 95, _docs(["hr"]), ["hr"], citations=[], all_cited=False)
        assert out["action"] == "ROUTE" and out["route_to"]["owner_email"] == "maria@acme.example"
        assert out["route_to"]["reason"].startswith("Answer cites no context")

    def test_run_async(self, directory_path):
        out = asyncio.run(
            TagRouter(directory_path=directory_path).run_async(
                confidence={"overall": 10},
                documents=_docs(["hr"]),
                tenant_id="acme",
                user_tags=["hr"],
                citations=[],
                all_sentences_cited=False,
            )
        )
        assert out["route_to"]["owner_user_id"] == "u-maria"
        out = asyncio.run(
            TagRouter(directory_path=directory_path).run_async(
                confidence={"overall": 10},
                documents=_docs(["hr"]),
                tenant_id="globex",
                user_tags=["hr"],
                citations=[],
                all_sentences_cited=False,
            )
        )
        assert out["route_to"]["owner_user_id"] == "u-marcus"

    def test_tenant_id_is_a_required_input(self, directory_path):
        sockets = TagRouter(directory_path=directory_path).__haystack_input__._sockets_dict
        assert sockets["tenant_id"].is_mandatory

    def test_same_tag_in_two_tenants_routes_to_each_tenants_own_owner(self, directory_path):
        router = TagRouter(directory_path=directory_path, admin_email="admin@x.example")
        acme = _run(router, 20, _docs(["hr"]), ["hr"], tenant_id="acme")["route_to"]
        globex = _run(router, 20, _docs(["hr"]), ["hr"], tenant_id="globex")["route_to"]
        assert (acme["owner_user_id"], acme["owner_email"], acme["fallback"]) == (
            "u-maria",
            "maria@acme.example",
            False,
        )
        assert (globex["owner_user_id"], globex["owner_email"], globex["fallback"]) == (
            "u-marcus",
            "marcus@globex.example",
            False,
        )

    def test_tag_owned_only_in_another_tenant_falls_back_to_admin(self, directory_path):
        router = TagRouter(directory_path=directory_path, admin_email="admin@x.example")
        for tenant_id in ("initech", ""):  # no hr tag in this tenant / no tenant at all
            route = _run(router, 20, _docs(["hr"]), ["hr"], tenant_id=tenant_id)["route_to"]
            assert route["fallback"] is True and route["owner_email"] == "admin@x.example"
            assert route["owner_user_id"] is None and route["tag"] == "hr"
        # acme's "it" has no owner; globex has no "it" at all: both go to the admin, never across tenants.
        assert _run(router, 20, _docs(["it"]), ["it"], tenant_id="globex")["route_to"]["fallback"] is True
        assert (
            _run(router, 20, _docs(["finance"]), ["finance"], tenant_id="globex")["route_to"]["owner_email"]
            == "admin@x.example"
        )

    def test_owner_of_names_whom_the_router_would_route_to(self, directory_path):
        router = TagRouter(directory_path=directory_path, admin_email="admin@acme.example")
        assert router.owner_of("acme", "hr") == {
            "tag": "hr", "owner_user_id": "u-maria", "owner_email": "maria@acme.example", "fallback": False,
        }  # fmt: skip
        admin = {"owner_user_id": None, "owner_email": "admin@acme.example", "fallback": True}
        assert router.owner_of("acme", "it") == {"tag": "it", **admin}  # no owner
        assert router.owner_of("acme", "finance") == {"tag": "finance", **admin}  # owned only in globex
        assert router.owner_of("acme", None) == {"tag": "system", **admin}
        assert router.owner_of("globex", "hr")["owner_user_id"] == "u-marcus"
        routed = _run(router, 10, _docs(["hr"]), ["hr"])["route_to"]
        assert {key: routed[key] for key in ("tag", "owner_user_id", "owner_email", "fallback")} == router.owner_of(
            "acme", "hr"
        )
