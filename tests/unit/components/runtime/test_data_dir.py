"""The data directory is private to its owner (docs/operations.md, "Running the service")."""

import os
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from components.runtime.data_dir import tighten_data_dir


def mode(path) -> int:
    return os.lstat(path).st_mode & 0o777


@pytest.mark.unit
class TestTightenDataDir:
    def test_existing_entries_lose_group_and_other_permissions(self, tmp_path):
        data = tmp_path / "data"
        (data / "qdrant" / "segments").mkdir(parents=True)
        (data / "records.sqlite").write_bytes(b"rows")
        (data / "qdrant" / "segments" / "page.dat").write_bytes(b"text")
        (data / "hook").write_bytes(b"#!/bin/sh\n")
        for path, wanted in (
            (data, 0o755),
            (data / "qdrant", 0o775),
            (data / "records.sqlite", 0o644),
            (data / "qdrant" / "segments" / "page.dat", 0o666),
            (data / "hook", 0o755),
        ):
            path.chmod(wanted)  # fmt: skip
        outside = tmp_path / "outside.txt"
        outside.write_text("not ours")
        outside.chmod(0o644)
        (data / "link").symlink_to(outside)
        assert tighten_data_dir(data) == 6  # the five above and "segments"
        assert (mode(data), mode(data / "qdrant"), mode(data / "records.sqlite")) == (0o700, 0o700, 0o600)
        assert mode(data / "qdrant" / "segments" / "page.dat") == 0o600
        assert mode(data / "hook") == 0o700  # executable stays executable, for its owner only
        assert mode(outside) == 0o644  # a link is not followed out of the folder
        assert tighten_data_dir(data) == 0

    def test_a_missing_folder_is_created_private(self, tmp_path):
        tighten_data_dir(tmp_path / "new" / "data")
        assert mode(tmp_path / "new" / "data") == 0o700

    def test_files_created_later_are_private(self, tmp_path):
        # In a child: the umask is process-wide. SQLite's WAL and shared-memory files are checked too.
        data = tmp_path / "data"
        code = f"""
            import sqlite3
            from pathlib import Path
            from components.runtime.data_dir import secure_data_dir
            secure_data_dir({str(data)!r})
            db = sqlite3.connect({str(data / "state.sqlite")!r})
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("CREATE TABLE t (x)")
            db.execute("INSERT INTO t VALUES (1)")
            db.commit()
            (Path({str(data)!r}) / "sub").mkdir()
            (Path({str(data)!r}) / "sub" / "file").write_text("x")
            print(sorted(p.name for p in Path({str(data)!r}).rglob("*")))
            db.close()
        """
        result = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60, check=False
        )
        assert result.returncode == 0, result.stderr
        assert "state.sqlite-wal" in result.stdout
        assert {path.name: mode(path) for path in data.rglob("*")} == {
            "state.sqlite": 0o600, "sub": 0o700, "file": 0o600
        }  # fmt: skip
        assert sqlite3.connect(data / "state.sqlite").execute("SELECT x FROM t").fetchall() == [(1,)]
