"""TagDirectory: the SQLite tag-owner directory."""

from pathlib import Path

import pytest

from components.tag_directory import TagDirectory, TagDirectoryError, TagOwner, default_tag_directory_path

SAMPLE_DIRECTORY = Path(__file__).resolve().parent.parent / "evaluation" / "sample_corpus" / "directory.yml"


@pytest.mark.unit
class TestTagDirectory:
    def test_schema_is_the_specifications(self, tmp_path):
        import sqlite3

        directory = TagDirectory(tmp_path / "sub" / "tags.sqlite")
        directory.list_tags()
        connection = sqlite3.connect(tmp_path / "sub" / "tags.sqlite")
        columns = {table: [row[1] for row in connection.execute(f"PRAGMA table_info({table})")] for table in ("tags", "users")}
        assert columns == {"tags": ["name", "owner_user_id"], "users": ["id", "email"]}

    def test_add_user_set_owner_lookup(self, tmp_path):
        directory = TagDirectory(tmp_path / "tags.sqlite")
        directory.add_user("u1", "hr-lead@acme.example")
        directory.set_tag_owner("hr", "u1")
        directory.set_tag_owner("it", None)
        assert directory.lookup("hr") == TagOwner("hr", "u1", "hr-lead@acme.example")
        assert directory.lookup("it") == TagOwner("it", None, None)
        assert directory.lookup("unknown") is None
        directory.add_user("u1", "new@acme.example")
        assert directory.lookup("hr").owner_email == "new@acme.example"
        # A second object on the same file (another process, the CLI) sees the same data.
        assert TagDirectory(tmp_path / "tags.sqlite").list_users() == [("u1", "new@acme.example")]

    def test_unknown_owner_rejected(self, tmp_path):
        with pytest.raises(TagDirectoryError, match="Unknown user"):
            TagDirectory(tmp_path / "tags.sqlite").set_tag_owner("hr", "ghost")
        with pytest.raises(TagDirectoryError):
            TagDirectory(tmp_path / "tags.sqlite").add_user("u1", "not-an-email")

    def test_remove(self, tmp_path):
        directory = TagDirectory(tmp_path / "tags.sqlite")
        directory.add_user("u1", "a@b.example")
        directory.set_tag_owner("hr", "u1")
        assert directory.remove_user("u1") is True
        assert directory.lookup("hr") == TagOwner("hr", None, None)
        assert directory.remove_tag("hr") is True and directory.lookup("hr") is None

    def test_load_from_yaml(self, tmp_path):
        directory = TagDirectory(tmp_path / "tags.sqlite")
        counts = directory.load_from_yaml(SAMPLE_DIRECTORY)
        assert counts["users"] >= 5 and counts["tags"] >= 5
        assert directory.lookup("hr") == TagOwner("hr", "u-acme-maria", "maria.lopez@acme.example")
        assert directory.lookup("it").owner_user_id is None

    def test_load_is_atomic(self, tmp_path):
        directory = TagDirectory(tmp_path / "tags.sqlite")
        with pytest.raises(TagDirectoryError, match="unknown owner"):
            directory.load({"users": [{"id": "u1", "email": "a@b.example"}], "tags": {"hr": "u1", "x": "ghost"}})
        assert directory.list_users() == [] and directory.list_tags() == []

    def test_default_path(self, monkeypatch, tmp_path):
        monkeypatch.setenv("SOURCEBOUND_DATA_DIR", str(tmp_path))
        assert default_tag_directory_path() == tmp_path / "tags.sqlite"
