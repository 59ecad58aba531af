"""``sourcebound tags ...``: managing the tag-owner directory from the CLI."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from components.stores.tag_directory import TagDirectory
from hayhooks_app.cli.tags import main

SAMPLE_DIRECTORY = Path(__file__).resolve().parents[4] / "examples" / "sample_corpus" / "directory.yml"


@pytest.mark.unit
class TestTagsCommand:
    def test_add_user_set_owner_lookup(self, tmp_path, capsys):
        data = ["--data-dir", str(tmp_path)]
        assert main(["add-user", "u-maria", "maria@acme.example", *data]) == 0
        assert main(["add-user", "u-marcus", "marcus@globex.example", *data]) == 0
        assert main(["set-owner", "--tenant", "acme", "hr", "u-maria", *data]) == 0
        assert main(["set-owner", "--tenant", "acme", "it", "--none", *data]) == 0
        assert main(["set-owner", "--tenant", "globex", "hr", "u-marcus", *data]) == 0
        capsys.readouterr()
        assert main(["lookup", "--tenant", "acme", "hr", "--json", *data]) == 0
        assert json.loads(capsys.readouterr().out) == {
            "tag": "hr",
            "owner_user_id": "u-maria",
            "owner_email": "maria@acme.example",
            "tenant_id": "acme",
        }
        assert main(["lookup", "--tenant", "globex", "hr", *data]) == 0
        assert capsys.readouterr().out.strip() == "globex/hr: u-marcus <marcus@globex.example>"
        assert main(["lookup", "--tenant", "globex", "it", *data]) == 0
        assert capsys.readouterr().out.strip() == "globex/it: not in the directory (routes to the admin)"
        assert main(["list", "--tenant", "acme", *data]) == 0
        assert capsys.readouterr().out.splitlines() == [
            "acme/hr: u-maria <maria@acme.example>",
            "acme/it: no owner (routes to the admin)",
        ]
        assert main(["list", *data]) == 0
        assert capsys.readouterr().out.splitlines() == [
            "acme/hr: u-maria <maria@acme.example>",
            "acme/it: no owner (routes to the admin)",
            "globex/hr: u-marcus <marcus@globex.example>",
        ]
        # What the router reads is what the CLI wrote.
        assert TagDirectory(tmp_path / "tags.sqlite").lookup("acme", "hr").owner_email == "maria@acme.example"

    def test_tag_commands_need_a_tenant(self, tmp_path):
        for command in (["set-owner", "hr", "--none"], ["remove", "hr"], ["lookup", "hr"]):
            with pytest.raises(SystemExit) as exit_info:
                main([*command, "--data-dir", str(tmp_path)])
            assert exit_info.value.code == 2

    def test_invalid_input_exits_2_and_changes_nothing(self, tmp_path, capsys):
        data = ["--data-dir", str(tmp_path)]
        assert main(["set-owner", "--tenant", "acme", "hr", "ghost", *data]) == 2
        assert "Unknown user" in capsys.readouterr().err
        assert main(["set-owner", "--tenant", "acme", "hr", *data]) == 2
        assert main(["add-user", "u1", "not-an-email", *data]) == 2
        assert TagDirectory(tmp_path / "tags.sqlite").list_tags() == []

    def test_load_and_remove(self, tmp_path, capsys):
        directory = tmp_path / "custom.sqlite"
        assert main(["load", str(SAMPLE_DIRECTORY), "--directory", str(directory)]) == 0
        assert "loaded" in capsys.readouterr().out
        assert main(["remove", "--tenant", "acme", "hr", "--directory", str(directory)]) == 0
        assert capsys.readouterr().out.strip() == "tag acme/hr removed"
        assert main(["remove", "--tenant", "globex", "people", "--directory", str(directory), "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == {"tenant_id": "globex", "tag": "people", "removed": True}
        assert main(["remove-user", "u-acme-jonas", "--directory", str(directory), "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == {"user_id": "u-acme-jonas", "removed": True}
        assert TagDirectory(directory).lookup("acme", "hr") is None
        assert TagDirectory(directory).lookup("acme", "finance").owner_user_id is None
        assert TagDirectory(directory).lookup("globex", "accounting").owner_user_id == "u-globex-aisha"

    def test_unusable_file_exits_1(self, tmp_path, capsys):
        (tmp_path / "tags.sqlite").mkdir()  # a folder where the file should be
        assert main(["list", "--data-dir", str(tmp_path)]) == 1
        assert "cannot use the tag directory" in capsys.readouterr().err


@pytest.mark.integration
class TestSourceboundCli:
    def test_tags_group_is_wired_into_sourcebound(self, tmp_path):
        pytest.importorskip("hayhooks_app.cli")
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "hayhooks_app.cli",
                "tags",
                "add-user",
                "u1",
                "u1@x.example",
                "--data-dir",
                str(tmp_path),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        assert TagDirectory(tmp_path / "tags.sqlite").list_users() == [("u1", "u1@x.example")]
