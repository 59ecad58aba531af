"""The `sourcebound` console script, run as a subprocess on a temporary data dir."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.indexing_support import write_mixed_folder

from hayhooks_app.cli import build_parser, command_modules, main

REPO = Path(__file__).resolve().parents[4]


def sourcebound(*args: str, data_dir: Path) -> subprocess.CompletedProcess:
    """Run the installed console script (or the module when the package is not installed)."""
    script = Path(sys.executable).parent / "sourcebound"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "hayhooks_app.cli"]
    env = {**os.environ, "SOURCEBOUND_DATA_DIR": str(data_dir)}
    return subprocess.run([*command, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def run_in_process(capsys, *args: str) -> tuple[int, str, str]:
    """Run the CLI's main() here (each subprocess pays seconds of imports); returns (code, stdout, stderr)."""
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.unit
class TestParser:
    def test_commands_and_plugins_are_registered(self):
        parser = build_parser()
        commands = parser._subparsers._group_actions[0].choices
        assert {"index", "invalidate", "taint", "verify", "delete", "stats"} <= set(commands)
        modules = command_modules()
        assert "hayhooks_app.cli.keys" in modules and "keys" in commands  # a module of the package adds itself
        assert modules[0] == "hayhooks_app.cli.documents" and modules[1:] == sorted(modules[1:])
        assert not {"hayhooks_app.cli.common", "hayhooks_app.cli.server_link"} & set(modules)
        # The order `sourcebound --help` lists: the document commands, then each group by module name.
        assert list(commands)[:9] == [
            "index", "invalidate", "taint", "verify", "delete", "stats", "allowlist", "backup", "restore",
        ]  # fmt: skip

    def test_index_requires_tenant_and_tags(self, capsys):
        with pytest.raises(SystemExit) as exited:
            build_parser().parse_args(["index", "docs", "--tenant", "acme"])
        assert exited.value.code == 2 and "--tags" in capsys.readouterr().err


@pytest.mark.integration
@pytest.mark.slow
def test_cli_lifecycle(tmp_path, capsys):
    data_dir, folder = tmp_path / "data", tmp_path / "corpus"
    write_mixed_folder(folder)

    # As a separate process, like a user: index, then bad input (exit 2, nothing written).
    indexed = sourcebound(
        "index",
        str(folder),
        "--tenant",
        "acme",
        "--tags",
        "hr,handbook",
        "--json",
        "--batch-size",
        "2",
        data_dir=data_dir,
    )
    assert indexed.returncode == 0, indexed.stderr
    result = json.loads(indexed.stdout)
    assert [entry["status"] for entry in result["documents"]] == ["indexed"] * 4 and result["chunks_written"] > 0
    document_ids = [entry["document_id"] for entry in result["documents"]]
    bad = tmp_path / "notes.odt"
    bad.write_bytes(b"PK")
    rejected = sourcebound("index", str(folder), str(bad), "--tenant", "acme", "--tags", "hr", data_dir=data_dir)
    assert rejected.returncode == 2 and "notes.odt: unsupported file type; supported types are" in rejected.stderr

    # The rest in this process (from here on it holds the shard, so no more subprocesses on data_dir).
    data = ["--data-dir", str(data_dir)]
    code, out, _ = run_in_process(
        capsys, "index", str(folder), "--tenant", "acme", "--tags", "hr,handbook", "--no-progress", *data
    )
    assert code == 0 and "0 indexed, 4 unchanged, 0 failed; 0 chunks written" in out

    code, out, _ = run_in_process(capsys, "taint", "--tenant", "acme", document_ids[0], "--json", *data)
    assert code == 0 and json.loads(out)["chunks_updated"] > 0
    code, _, _ = run_in_process(capsys, "verify", "--tenant", "acme", "doc-unknown", *data)
    assert code == 1
    code, _, err = run_in_process(capsys, "invalidate", "--tenant", "acme", "bad id", *data)
    assert code == 2 and "document_id 'bad id' is invalid" in err

    code, out, _ = run_in_process(
        capsys,
        "invalidate",
        "--tenant",
        "acme",
        document_ids[1],
        "--reason",
        "outdated",
        "--cascade-id",
        "c-1",
        "--json",
        *data,
    )
    outcome = json.loads(out)
    assert (
        code == 0 and outcome["invalidated"] == 1 and outcome["cascade_id"] == "c-1" and outcome["reason"] == "outdated"
    )

    code, out, _ = run_in_process(capsys, "stats", "--json", *data)
    counted = json.loads(out)
    assert counted["documents"] == 3 and counted["tainted_chunks"] > 0

    code, out, _ = run_in_process(capsys, "delete", "--tenant", "acme", *data)
    assert code == 0 and "removed" in out
    code, out, _ = run_in_process(capsys, "stats", "--tenant", "acme", "--json", *data)
    assert json.loads(out)["chunks"] == 0
