"""The glossary CSV, its deterministic vocabulary and alias matching (components.core.vocabulary)."""

import json
import random

import pytest

from components.core.vocabulary import (
    GlossaryError,
    Vocabulary,
    compile_vocabulary,
    parse_glossary_csv,
    phrase_key,
    vocabulary_digest,
    vocabulary_json,
)

GLOSSARY = """term,aliases,definition
PTO,paid time off|vacation days;holiday allowance,Combined leave balance.
Peoplebase,HR portal|HRIS,The HR system.
4-eyes rule,four eyes principle|two-person review,Two people approve.
HR,human resources,
"""


def vocabulary(text: str = GLOSSARY) -> Vocabulary:
    return Vocabulary(compile_vocabulary(parse_glossary_csv(text)))


@pytest.mark.unit
class TestParseGlossary:
    def test_rows_terms_aliases_and_definitions(self):
        entries = parse_glossary_csv(GLOSSARY)
        assert [entry.term for entry in entries] == ["PTO", "Peoplebase", "4-eyes rule", "HR"]
        assert entries[0].aliases == ("paid time off", "vacation days", "holiday allowance")
        assert entries[0].definition == "Combined leave balance." and entries[3].definition == ""

    def test_definition_column_is_optional_and_blank_lines_are_skipped(self):
        entries = parse_glossary_csv("\ufeffTerm,Aliases\nVPN,Tunnelgate\n,,\n")
        assert [(entry.term, entry.aliases) for entry in entries] == [("VPN", ("Tunnelgate",))]

    def test_any_line_end_is_read(self):
        for line_end in ("\n", "\r\n", "\r"):
            entries = parse_glossary_csv(line_end.join(["term,aliases", "VPN,Tunnelgate", "PTO,leave"]))
            assert [entry.term for entry in entries] == ["VPN", "PTO"], repr(line_end)

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("name,synonyms\nPTO,leave\n", "missing ['term', 'aliases']"),
            ("\r\U0006f70e\U00031c15\u00c0", "missing ['term', 'aliases']"),  # found by the API fuzzer: was a 500
            ("term,aliases\nPTO," + "x" * 200_000 + "\n", "not readable CSV"),
            ("term,aliases\n,leave\n", "row 2: the term is empty"),
            ("term,aliases\nPTO,leave\npto,vacation\n", "row 3: the term 'pto' is already defined in row 2"),
            ("term,aliases\nPTO,!!!\n", "row 2: the alias '!!!' has no letters or digits"),
            ("term,aliases\nPTO,a\x01b\n", "control character"),
        ],
    )
    def test_invalid_glossaries_name_the_row(self, text, message):
        with pytest.raises(GlossaryError, match=message.replace("[", r"\[").replace("]", r"\]")):
            parse_glossary_csv(text)


@pytest.mark.unit
class TestCompileVocabulary:
    def test_row_order_does_not_change_the_vocabulary(self):
        header, *rows = GLOSSARY.strip().splitlines()
        shuffled = rows[:]
        random.Random(7).shuffle(shuffled)
        assert shuffled != rows
        first = compile_vocabulary(parse_glossary_csv("\n".join([header, *rows])))
        second = compile_vocabulary(parse_glossary_csv("\n".join([header, *shuffled])))
        assert vocabulary_json(first) == vocabulary_json(second)
        assert vocabulary_digest(first) == vocabulary_digest(second)

    def test_terms_sorted_aliases_sorted_and_indexed_by_normalised_phrase(self):
        compiled = compile_vocabulary(parse_glossary_csv(GLOSSARY))
        assert [item["term"] for item in compiled["terms"]] == ["4-eyes rule", "HR", "Peoplebase", "PTO"]
        pto = compiled["terms"][3]
        assert pto["aliases"] == ["holiday allowance", "paid time off", "vacation days"]
        assert compiled["index"]["vacation day"] == ["PTO"]  # normalised: plural folded
        assert compiled["index"]["4 eye rule"] == ["4-eyes rule"]
        assert json.loads(vocabulary_json(compiled)) == compiled

    def test_an_alias_equal_to_its_term_is_dropped(self):
        compiled = compile_vocabulary(parse_glossary_csv("term,aliases\nVPN,vpn|V.P.N|Tunnelgate\n"))
        assert compiled["terms"][0]["aliases"] == ["Tunnelgate", "V.P.N"]

    def test_phrase_key_normalises_case_punctuation_and_inflection(self):
        assert phrase_key("Vacation-Days!") == phrase_key("vacation day") == "vacation day"


@pytest.mark.unit
class TestVocabulary:
    def test_match_finds_terms_by_any_phrase_in_order(self):
        assert vocabulary().match("Is the HRIS where I book vacation days?") == ["Peoplebase", "PTO"]
        assert vocabulary().match("Nothing here") == []

    def test_longest_phrase_wins(self):
        # "HR portal" (Peoplebase) is matched as a whole, not as the shorter term "HR".
        assert vocabulary().match("Where is the HR portal?") == ["Peoplebase"]
        assert vocabulary().match("Ask HR about it") == ["HR"]

    def test_match_needs_whole_words(self):
        assert vocabulary().match("The HRISK team") == []

    def test_expansions_add_the_groups_other_phrases(self):
        terms, added = vocabulary().expansions("How many vacation days do I have?")
        assert terms == ["PTO"]
        assert added == ["PTO", "holiday allowance", "paid time off"]  # "vacation days" is already there

    def test_expansions_of_an_unmatched_query_are_empty(self):
        assert vocabulary().expansions("Where is the printer?") == ([], [])

    def test_matching_follows_todays_tokenisation_not_the_stored_index(self):
        compiled = compile_vocabulary(parse_glossary_csv(GLOSSARY))
        compiled["index"] = {"stale key": ["PTO"]}  # as if compiled under another normalisation
        assert Vocabulary(compiled).match("Vacation days left?") == ["PTO"]
        assert Vocabulary(compiled).match("stale key") == []

    def test_rejects_something_that_is_not_a_vocabulary(self):
        with pytest.raises(GlossaryError, match="recompile"):
            Vocabulary({"terms": []})
