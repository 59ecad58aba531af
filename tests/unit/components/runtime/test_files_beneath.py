"""Reading a file under a folder without following links (the event consumer's file references, docs/events.md)."""

import os
import threading

import pytest

from components.runtime import files_beneath
from components.runtime.files_beneath import UnsafeFileError, read_file_beneath


@pytest.fixture
def shared(tmp_path):
    root = tmp_path / "shared"
    (root / "guides").mkdir(parents=True)
    (root / "guides" / "parking.md").write_text("# Parking\n")
    (tmp_path / "secret.txt").write_text("outside the folder")
    return root


@pytest.mark.unit
class TestReadFileBeneath:
    def test_reads_a_regular_file_under_the_folder(self, shared):
        assert read_file_beneath(shared, "guides/parking.md", 1000) == b"# Parking\n"
        assert read_file_beneath(shared, "./guides/parking.md", 1000) == b"# Parking\n"

    @pytest.mark.parametrize(
        ("name", "reason"),
        [
            ("/etc/passwd", "an absolute path"),
            ("../secret.txt", "'..' leads outside"),
            ("guides/../../secret.txt", "'..' leads outside"),
            ("nope.md", "no such file"),
            ("guides", "not a regular file"),
            ("", "not a relative file name"),
        ],
    )
    def test_refuses_names_that_leave_the_folder_or_are_not_files(self, shared, name, reason):
        with pytest.raises(UnsafeFileError, match=reason):
            read_file_beneath(shared, name, 1000)

    def test_a_link_anywhere_in_the_path_is_not_followed(self, shared, tmp_path):
        (shared / "escape.md").symlink_to(tmp_path / "secret.txt")
        (shared / "inside.md").symlink_to(shared / "guides" / "parking.md")  # even one that stays inside
        (shared / "elsewhere").symlink_to(tmp_path, target_is_directory=True)
        for name in ("escape.md", "inside.md", "elsewhere/secret.txt"):
            with pytest.raises(UnsafeFileError, match="a symbolic link"):
                read_file_beneath(shared, name, 1000)

    def test_a_fifo_is_refused_without_blocking(self, shared):
        os.mkfifo(shared / "pipe.md")
        with pytest.raises(UnsafeFileError, match="not a regular file"):
            read_file_beneath(shared, "pipe.md", 1000)

    def test_the_size_limit_holds_for_what_is_read(self, shared):
        (shared / "big.md").write_bytes(b"x" * 2000)
        with pytest.raises(UnsafeFileError, match="over the size limit of 1000 bytes"):
            read_file_beneath(shared, "big.md", 1000)

    def test_a_link_swapped_in_after_the_open_changes_nothing(self, shared, tmp_path, monkeypatch):
        # The race the old check-then-open lost: the name is replaced by a link between the check and the read.
        # Here the swap happens right after the file is opened; the read still returns the opened file's bytes.
        original_fstat = os.fstat
        swapped = threading.Event()

        def fstat_then_swap(fd):
            info = original_fstat(fd)
            if not swapped.is_set():
                swapped.set()
                target = shared / "guides" / "parking.md"
                target.unlink()
                target.symlink_to(tmp_path / "secret.txt")
            return info

        monkeypatch.setattr(files_beneath.os, "fstat", fstat_then_swap)
        assert read_file_beneath(shared, "guides/parking.md", 1000) == b"# Parking\n"
        assert swapped.is_set()
        monkeypatch.setattr(files_beneath.os, "fstat", original_fstat)
        with pytest.raises(UnsafeFileError, match="a symbolic link"):
            read_file_beneath(shared, "guides/parking.md", 1000)
