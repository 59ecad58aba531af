"""The identity rules shared by the indexing components and the service."""

import re

import pytest

from components.core.document_identity import (
    DOCUMENT_ID_PATTERN,
    IndexingValidationError,
    access_meta_problems,
    canonical_source,
    content_hash,
    derive_document_id,
    document_id_for,
    document_id_problem,
    normalise_tags,
    source_type_for_path,
    tenant_document_filter,
)


@pytest.mark.unit
class TestDocumentIdentity:
    def test_derived_ids_are_deterministic_valid_and_tenant_specific(self):
        first = derive_document_id("acme", "https://help.example.com/a")
        assert first == derive_document_id("acme", "https://help.example.com/a")
        assert re.fullmatch(DOCUMENT_ID_PATTERN, first)
        assert first != derive_document_id("globex", "https://help.example.com/a")
        assert first != derive_document_id("acme", "https://help.example.com/b")

    @pytest.mark.parametrize("bad", ["has space", "a:b", "ü", "", "a/b", "x" * 129, 7, None])
    def test_bad_document_ids(self, bad):
        assert document_id_problem(bad)

    def test_good_document_id(self):
        assert document_id_problem("doc-ABC-123") is None

    def test_access_meta_problems(self):
        assert access_meta_problems({"tenant_id": "acme", "tags": ["hr"]}) == []
        problems = access_meta_problems({"tags": [], "scope": "user", "document_id": "a b"})
        text = " | ".join(problems)
        assert "tenant_id is required" in text and "tags are required" in text
        assert "scope 'user' needs a user_id" in text and "document_id 'a b' is invalid" in text
        assert access_meta_problems({"tenant_id": "a", "tags": ["x"], "scope": "galaxy"})
        assert access_meta_problems({"tenant_id": "a", "tags": ["x"], "tainted": "yes"})
        assert access_meta_problems({"tenant_id": " ", "tags": ["x"]}) == ["tenant_id is required"]

    def test_normalise_tags(self):
        assert normalise_tags(" hr, eng ,hr,") == ["hr", "eng"]
        assert normalise_tags(["a", " a ", "b"]) == ["a", "b"]
        assert normalise_tags([1]) is None and normalise_tags(None) is None

    def test_canonical_source_prefers_uri_then_file(self, tmp_path):
        file = tmp_path / "a.txt"
        assert canonical_source({"source_uri": "HTTPS://X.com/a/#f", "file_path": str(file)}) == "https://x.com/a"
        assert canonical_source({"file_path": str(file)}) == file.resolve().as_uri()
        assert canonical_source({}) is None

    def test_helpers(self):
        assert content_hash("é") == content_hash("é".encode())
        assert source_type_for_path("A.MD") == "md" and source_type_for_path("a.odt") is None
        assert [source_type_for_path(f"f.{kind.upper()}") for kind in ("docx", "pptx", "xlsx", "csv")] == [
            "docx",
            "pptx",
            "xlsx",
            "csv",
        ]
        assert tenant_document_filter("t", ["a", "b"])["conditions"][1]["operator"] == "in"

    def test_validation_error_lists_every_problem(self):
        error = IndexingValidationError(["one", "two"])
        assert isinstance(error, ValueError)
        assert error.problems == ["one", "two"]
        assert "2 problems" in str(error) and "- one" in str(error) and "- two" in str(error)


@pytest.mark.unit
class TestDocumentIdFor:
    def test_a_valid_external_id_is_the_document_id(self):
        assert document_id_for("art-789") == "art-789"
        assert document_id_for("README", "public-") == "public-README"

    def test_other_ids_get_a_readable_deterministic_valid_id(self):
        derived = document_id_for("proj-1/README.md")
        assert derived == document_id_for("proj-1/README.md") != document_id_for("proj-1/README.mdx")
        assert derived.startswith("proj-1-README-md-") and document_id_problem(derived) is None
        for external in ("runs/7_out", "x" * 300, "///", "ä ö ü", "a\u200bb"):
            assert document_id_problem(document_id_for(external)) is None, external
        assert document_id_for("///").startswith("id-") and document_id_for("a b", "public-").startswith("public-a-b-")
