"""
Scopes as the contract states them (docs/contract.md "Access rule"): project documents need their owner,
public documents carry the reserved ``public-`` id prefix and need the ``public`` permission in api_key mode,
and the query ``scope`` is a request field that only narrows.
"""

import pytest
from haystack import Document
from pydantic import ValidationError

from components.core.access_rule import AccessRule
from components.core.document_identity import access_meta_problems
from components.core.models import SearchRequest
from components.stores import key_store
from components.stores.key_store import ApiKeyStore
from components.validators.document_identifier import DocumentIdentifier
from hayhooks_app.errors import ApiError
from hayhooks_app.identity import authorize_write

BASE = {"tenant_id": "acme", "tags": ["hr"]}


@pytest.mark.unit
class TestScopeValidation:
    def test_project_needs_its_owner(self):
        assert any(
            "needs a project_id and a user_id" in p
            for p in access_meta_problems({**BASE, "scope": "project", "project_id": "atlas"})
        )
        assert access_meta_problems({**BASE, "scope": "project", "project_id": "atlas", "user_id": "u1"}) == []

    def test_public_ids_carry_the_reserved_prefix(self):
        assert any(
            "must start with 'public-'" in p
            for p in access_meta_problems({**BASE, "scope": "public", "document_id": "faq"})
        )
        assert access_meta_problems({**BASE, "scope": "public", "document_id": "public-faq"}) == []
        assert any(
            "reserved for scope 'public'" in p for p in access_meta_problems({**BASE, "document_id": "public-faq"})
        )

    def test_derived_public_id_gets_the_prefix(self):
        identified = DocumentIdentifier().identify(
            Document(content="FAQ", meta={**BASE, "scope": "public", "document_name": "FAQ"})
        )
        assert identified.meta["document_id"].startswith("public-doc-")

    def test_query_scope_field(self):
        assert SearchRequest(query="q", tenant_id="acme", user_tags=["hr"], scope="public").scope == "public"
        with pytest.raises(ValidationError, match="scope"):
            SearchRequest(query="q", tenant_id="acme", user_tags=["hr"], scope="everything")


@pytest.mark.unit
class TestPublicWrites:
    def test_public_documents_need_the_public_permission(self, tmp_path):
        keys_file = tmp_path / "keys.json"
        writer, _ = key_store.register_key(keys_file, tenant_id="vendor", tags=["docs"], permissions=["write"])
        publisher, _ = key_store.register_key(
            keys_file, tenant_id="vendor", tags=["docs"], permissions=["write", "public"]
        )
        store = ApiKeyStore(keys_file)
        with pytest.raises(ApiError) as error:
            authorize_write(
                "api_key",
                store,
                {"authorization": f"Bearer {writer}"},
                tenant_ids={"vendor"},
                tags={"docs"},
                public=True,
            )
        assert error.value.status_code == 403 and "'public' permission" in error.value.message
        assert authorize_write(
            "api_key",
            store,
            {"authorization": f"Bearer {publisher}"},
            tenant_ids={"vendor"},
            tags={"docs"},
            public=True,
        )


@pytest.mark.unit
class TestPublicVisibility:
    def test_public_chunks_cross_tenants_and_tags_but_not_the_narrowing(self):
        public = Document(
            id="public-faq:0", content="c", meta={"tenant_id": "vendor", "tags": ["docs"], "scope": "public"}
        )
        assert AccessRule("acme", ("hr",)).allows(public)
        assert AccessRule("acme", ("hr",), scope="public").allows(public)
        assert "outside the requested scope" in AccessRule("acme", ("hr",), scope="tenant").violation(public)
        tainted = Document(
            id="public-x:0",
            content="c",
            meta={"tenant_id": "vendor", "tags": ["docs"], "scope": "public", "tainted": True},
        )
        assert not AccessRule("acme", ("hr",)).allows(tainted)

    def test_project_chunk_only_for_its_owner_in_its_project(self):
        chunk = Document(
            id="p:0",
            content="c",
            meta={"tenant_id": "acme", "tags": ["hr"], "scope": "project", "project_id": "atlas", "user_id": "u1"},
        )
        assert AccessRule("acme", ("hr",), user_id="u1", project_id="atlas").allows(chunk)
        assert not AccessRule("acme", ("hr",), user_id="u2", project_id="atlas").allows(chunk)
        assert not AccessRule("acme", ("hr",), user_id="u1", project_id="apollo").allows(chunk)
        assert not AccessRule("acme", ("hr",), user_id="u1").allows(chunk)
