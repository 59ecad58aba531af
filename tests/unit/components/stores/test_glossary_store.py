"""GlossaryStore: per-tenant compiled vocabularies in one SQLite file."""

import sqlite3

import pytest

from components.core.vocabulary import GlossaryError
from components.stores.glossary_store import GlossaryStore


@pytest.mark.unit
class TestGlossaryStore:
    def test_load_replace_and_remove_per_tenant(self, tmp_path):
        store = GlossaryStore(tmp_path / "data" / "glossary.sqlite")
        assert store.vocabulary("acme") is None and store.tenants() == []
        loaded = store.load_csv("acme", "term,aliases\nPTO,vacation days|leave\n")
        assert loaded["terms"] == 1 and loaded["aliases"] == 2 and len(loaded["digest"]) == 64
        store.load_csv("globex", "term,aliases\nConcur,Expensify\n")
        assert [item["term"] for item in store.vocabulary("acme")["terms"]] == ["PTO"]
        assert [item["term"] for item in store.vocabulary("globex")["terms"]] == ["Concur"]
        replaced = store.load_csv("acme", "term,aliases\nPeoplebase,HRIS\n")
        assert [item["term"] for item in store.vocabulary("acme")["terms"]] == ["Peoplebase"]
        assert store.digest("acme") == replaced["digest"] != loaded["digest"]
        assert store.tenants() == ["acme", "globex"]
        assert store.remove("acme") is True and store.remove("acme") is False
        assert store.vocabulary("acme") is None and store.vocabulary("globex") is not None

    def test_invalid_csv_changes_nothing(self, tmp_path):
        store = GlossaryStore(tmp_path / "glossary.sqlite")
        store.load_csv("acme", "term,aliases\nPTO,vacation days\n")
        before = store.vocabulary("acme")
        with pytest.raises(GlossaryError, match="row 3"):
            store.load_csv("acme", "term,aliases\nVPN,Tunnelgate\n,orphan\n")
        assert store.vocabulary("acme") == before

    def test_an_empty_glossary_removes_the_tenants(self, tmp_path):
        store = GlossaryStore(tmp_path / "glossary.sqlite")
        store.load_csv("acme", "term,aliases\nPTO,vacation days\n")
        assert store.load_csv("acme", "term,aliases\n")["terms"] == 0
        assert store.vocabulary("acme") is None

    def test_the_stored_text_is_the_canonical_vocabulary_json(self, tmp_path):
        from components.core.vocabulary import compile_vocabulary, parse_glossary_csv, vocabulary_json

        text = "term,aliases\nPTO,vacation days\nVPN,Tunnelgate\n"
        GlossaryStore(tmp_path / "glossary.sqlite").load_csv("acme", text)
        with sqlite3.connect(tmp_path / "glossary.sqlite") as connection:
            stored = connection.execute("SELECT vocabulary FROM glossary_vocabularies").fetchone()[0]
        assert stored == vocabulary_json(compile_vocabulary(parse_glossary_csv(text)))
