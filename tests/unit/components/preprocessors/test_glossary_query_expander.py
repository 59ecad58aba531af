"""GlossaryQueryExpander: a tenant's aliases on the keyword side, optionally the dense side."""

import pytest

from components.preprocessors.glossary_query_expander import GlossaryQueryExpander
from components.stores.glossary_store import GlossaryStore


@pytest.fixture
def glossary(tmp_path):
    path = tmp_path / "glossary.sqlite"
    store = GlossaryStore(path)
    store.load_csv("acme", "term,aliases\nTripHarbor,Navan|booking site\nPeoplebase,HRIS\n")
    store.load_csv("globex", "term,aliases\nFlyRight Travel,Navan\n")
    return path


@pytest.mark.unit
class TestGlossaryQueryExpander:
    def test_keyword_side_gets_the_aliases(self, glossary):
        out = GlossaryQueryExpander(glossary_path=str(glossary)).run(query="Can I use Navan?", tenant_id="acme")
        assert out == {
            "keyword_query": "Can I use Navan? TripHarbor booking site",
            "dense_query": "Can I use Navan?",
            "glossary_terms": ["TripHarbor"],
        }

    def test_dense_side_only_when_asked(self, glossary):
        out = GlossaryQueryExpander(glossary_path=str(glossary), expand_dense=True).run(
            query="Can I use Navan?", tenant_id="acme"
        )
        assert out["dense_query"] == out["keyword_query"] == "Can I use Navan? TripHarbor booking site"

    def test_each_tenant_reads_only_its_own_glossary(self, glossary):
        expander = GlossaryQueryExpander(glossary_path=str(glossary))
        assert expander.run(query="Can I use Navan?", tenant_id="globex")["glossary_terms"] == ["FlyRight Travel"]
        assert expander.run(query="Where is the HRIS?", tenant_id="globex") == {
            "keyword_query": "Where is the HRIS?",
            "dense_query": "Where is the HRIS?",
            "glossary_terms": [],
        }
        assert expander.run(query="Where is the HRIS?", tenant_id="initech")["glossary_terms"] == []

    def test_a_reloaded_glossary_applies_to_the_next_query(self, glossary):
        expander = GlossaryQueryExpander(glossary_path=str(glossary))
        assert expander.run(query="Where is the HRIS?", tenant_id="acme")["glossary_terms"] == ["Peoplebase"]
        GlossaryStore(glossary).load_csv("acme", "term,aliases\nWorkday,HRIS\n")
        assert expander.run(query="Where is the HRIS?", tenant_id="acme")["glossary_terms"] == ["Workday"]
        GlossaryStore(glossary).remove("acme")
        assert expander.run(query="Where is the HRIS?", tenant_id="acme")["glossary_terms"] == []

    def test_no_glossary_file_leaves_queries_unchanged(self, tmp_path):
        expander = GlossaryQueryExpander(glossary_path=str(tmp_path / "missing.sqlite"))
        assert expander.run(query="Navan", tenant_id="acme")["keyword_query"] == "Navan"
        assert not (tmp_path / "missing.sqlite").exists()

    def test_added_phrases_are_capped(self, tmp_path):
        path = tmp_path / "glossary.sqlite"
        aliases = "|".join(f"alias{number}" for number in range(10))
        GlossaryStore(path).load_csv("acme", f"term,aliases\nPTO,{aliases}\n")
        out = GlossaryQueryExpander(glossary_path=str(path), max_added_phrases=3).run(query="PTO?", tenant_id="acme")
        assert out["keyword_query"] == "PTO? alias0 alias1 alias2"

    def test_serialisation_round_trip(self, glossary):
        expander = GlossaryQueryExpander(glossary_path=str(glossary), expand_dense=True, max_added_phrases=5)
        data = expander.to_dict()
        assert data["init_parameters"] == {"glossary_path": str(glossary), "expand_dense": True, "max_added_phrases": 5}
        restored = GlossaryQueryExpander.from_dict(data)
        assert restored.run(query="Navan", tenant_id="acme") == expander.run(query="Navan", tenant_id="acme")

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"glossary_path": " "}, "glossary_path"),
            ({"glossary_path": "g.sqlite", "expand_dense": "yes"}, "expand_dense"),
            ({"glossary_path": "g.sqlite", "max_added_phrases": 0}, "max_added_phrases"),
            ({"glossary_path": "g.sqlite", "max_added_phrases": True}, "max_added_phrases"),
        ],
    )
    def test_invalid_settings(self, kwargs, message):
        with pytest.raises(ValueError, match=message):
            GlossaryQueryExpander(**kwargs)
