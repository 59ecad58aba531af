"""DomainAllowlistFilter: RAG_ALLOWLIST_DOMAINS checked again on what retrieval returns (A4)."""

import logging

import pytest
from haystack import Document

from components.filters.domain_allowlist_filter import DomainAllowlistFilter


def _chunk(name: str, uri: str | None) -> Document:
    return Document(id=name, content=name, meta={"document_id": name, "source_uri": uri})


RETRIEVED = [
    _chunk("docs", "https://docs.example.com/guide"),
    _chunk("old", "https://old-wiki.example.org/page"),
    _chunk("sub", "https://api.docs.example.com/ref"),
    _chunk("upload", "file:///srv/uploads/handbook.md"),
    _chunk("text", None),
    _chunk("local", "http://127.0.0.1:8080/a"),
    _chunk("other-port", "http://127.0.0.1:9090/a"),
]


@pytest.mark.unit
class TestDomainAllowlistFilter:
    def test_init(self):
        assert DomainAllowlistFilter().allowed_domains is None
        assert DomainAllowlistFilter("a.com,b.org").allowed_domains == "a.com,b.org"
        with pytest.raises(ValueError, match="allowed_domains"):
            DomainAllowlistFilter(allowed_domains=42)

    def test_to_dict(self):
        assert DomainAllowlistFilter(["docs.example.com"]).to_dict() == {
            "type": "components.filters.domain_allowlist_filter.DomainAllowlistFilter",
            "init_parameters": {"allowed_domains": ["docs.example.com"]},
        }

    def test_from_dict(self):
        restored = DomainAllowlistFilter.from_dict(DomainAllowlistFilter("docs.example.com").to_dict())
        assert restored.allowed_domains == "docs.example.com"
        assert [d.id for d in restored.run(documents=RETRIEVED)["documents"]] == ["docs", "sub", "upload", "text"]

    def test_run_drops_chunks_outside_the_list_and_keeps_the_order(self, caplog):
        allowlist = DomainAllowlistFilter("docs.example.com, 127.0.0.1:8080")
        with caplog.at_level(logging.WARNING):
            out = allowlist.run(documents=RETRIEVED)
            allowlist.run(documents=RETRIEVED)
        assert [d.id for d in out["documents"]] == ["docs", "sub", "upload", "text", "local"]
        assert out["excluded"] == 2
        warnings = [record.message for record in caplog.records if "RAG_ALLOWLIST_DOMAINS" in record.message]
        assert len(warnings) == 1 and "sourcebound allowlist --remove" in warnings[0]  # once per process

    def test_run_without_a_list_passes_everything(self):
        out = DomainAllowlistFilter("").run(documents=RETRIEVED)
        assert out["documents"] == RETRIEVED and out["excluded"] == 0

    def test_run_decisions_follow_the_uri_not_a_stale_cache(self):
        allowlist = DomainAllowlistFilter("docs.example.com")
        first = allowlist.run(documents=[_chunk("a", "https://docs.example.com/x")])["documents"]
        second = allowlist.run(documents=[_chunk("a", "https://evil.example.org/x")])["documents"]
        assert [d.id for d in first] == ["a"] and second == []

    def test_run_reads_its_inputs_only(self):
        # reads_inputs_only lets the planned pipeline skip the defensive copy (docs/contract.md, "Pipeline runs"):
        # the filter must leave the list and every document it was given as they were.
        assert DomainAllowlistFilter.reads_inputs_only is True
        documents = [_chunk(d.id, d.meta["source_uri"]) for d in RETRIEVED]
        before = [(d.id, d.content, dict(d.meta)) for d in documents]
        out = DomainAllowlistFilter("docs.example.com").run(documents=documents)
        assert out["excluded"] == 3
        assert [(d.id, d.content, dict(d.meta)) for d in documents] == before
        assert out["documents"] is not documents
