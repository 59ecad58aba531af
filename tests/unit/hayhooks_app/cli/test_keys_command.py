"""`sourcebound keys ...`: the command over the key store (tests/unit/components/stores/test_key_store.py)."""

import pytest

from components.stores.key_store import ApiKeyStore
from hayhooks_app.cli import keys as cli_keys


@pytest.mark.unit
class TestKeysCommand:
    def test_cli_add_list_revoke(self, keys_file, capsys):
        assert (
            cli_keys.main(["--keys-file", str(keys_file), "add", "--tenant", "acme", "--tags", "hr,it", "--user", "u1"])
            == 0
        )
        key = capsys.readouterr().out.strip().splitlines()[-1]
        assert key.startswith("sb_") and ApiKeyStore(keys_file).lookup(key).tags == ("hr", "it")
        assert cli_keys.main(["--keys-file", str(keys_file), "list"]) == 0
        key_id = capsys.readouterr().out.split("\t")[0]
        assert cli_keys.main(["--keys-file", str(keys_file), "revoke", key_id]) == 0
        assert cli_keys.main(["--keys-file", str(keys_file), "revoke", key_id]) == 1

    def test_bad_input_exits_2_naming_the_problem(self, keys_file, capsys):
        add = ["--keys-file", str(keys_file), "add", "--tenant", "acme", "--tags", "hr"]
        assert cli_keys.main([*add, "--permissions", "root"]) == 2
        assert "unknown permissions" in capsys.readouterr().err
        assert cli_keys.main([*add, "--user", "u", "--act-as-users"]) == 2
        assert "not both" in capsys.readouterr().err
        assert not keys_file.exists()
