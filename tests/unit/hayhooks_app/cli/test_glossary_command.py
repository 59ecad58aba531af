"""``sourcebound glossary ...``: load, show, remove and compile glossaries."""

import json

import pytest

from components.stores.glossary_store import GlossaryStore
from hayhooks_app.cli import main as sourcebound

CSV = "term,aliases,definition\nPTO,vacation days|holiday allowance,Leave balance.\nPeoplebase,HRIS,\n"


@pytest.fixture
def glossary_csv(tmp_path):
    path = tmp_path / "glossary.csv"
    path.write_text(CSV, encoding="utf-8")
    return path


@pytest.mark.unit
class TestGlossaryCli:
    def test_load_show_remove(self, tmp_path, glossary_csv, capsys):
        data = str(tmp_path / "data")
        assert sourcebound(["glossary", "load", str(glossary_csv), "--tenant", "acme", "--data-dir", data]) == 0
        assert "loaded 2 terms (3 aliases) for tenant acme" in capsys.readouterr().out
        assert GlossaryStore(tmp_path / "data" / "glossary.sqlite").tenants() == ["acme"]
        assert sourcebound(["glossary", "show", "--tenant", "acme", "--data-dir", data, "--json"]) == 0
        shown = json.loads(capsys.readouterr().out)
        assert [item["term"] for item in shown["vocabulary"]["terms"]] == ["Peoplebase", "PTO"]
        assert sourcebound(["glossary", "show", "--tenant", "globex", "--data-dir", data]) == 0
        assert "globex has no glossary" in capsys.readouterr().out
        assert sourcebound(["glossary", "remove", "--tenant", "acme", "--data-dir", data]) == 0
        assert GlossaryStore(tmp_path / "data" / "glossary.sqlite").tenants() == []

    def test_invalid_csv_exits_2_and_changes_nothing(self, tmp_path, glossary_csv, capsys):
        data = str(tmp_path / "data")
        sourcebound(["glossary", "load", str(glossary_csv), "--tenant", "acme", "--data-dir", data])
        bad = tmp_path / "bad.csv"
        bad.write_text("term,aliases\nPTO,a\npto,b\n", encoding="utf-8")
        assert sourcebound(["glossary", "load", str(bad), "--tenant", "acme", "--data-dir", data]) == 2
        assert "row 3" in capsys.readouterr().err
        vocabulary = GlossaryStore(tmp_path / "data" / "glossary.sqlite").vocabulary("acme")
        assert [item["term"] for item in vocabulary["terms"]] == ["Peoplebase", "PTO"]

    def test_missing_file_exits_1(self, tmp_path):
        missing = str(tmp_path / "none.csv")
        assert sourcebound(["glossary", "load", missing, "--tenant", "acme", "--data-dir", str(tmp_path)]) == 1

    def test_compile_writes_the_same_vocabulary_json_every_time(self, tmp_path, glossary_csv):
        first, second = tmp_path / "one.json", tmp_path / "two.json"
        assert sourcebound(["glossary", "compile", str(glossary_csv), "--output", str(first)]) == 0
        reordered = tmp_path / "reordered.csv"
        header, *lines = CSV.strip().splitlines()
        reordered.write_text("\n".join([header, *reversed(lines)]) + "\n", encoding="utf-8")
        assert sourcebound(["glossary", "compile", str(reordered), "--output", str(second)]) == 0
        assert first.read_bytes() == second.read_bytes()
        assert json.loads(first.read_text())["index"]["hris"] == ["Peoplebase"]
