"""TagDirectory: the SQLite tag-owner directory."""

from pathlib import Path

import pytest

from components.stores.tag_directory import TagDirectory, TagDirectoryError, TagOwner, default_tag_directory_path

SAMPLE_DIRECTORY = Path(__file__).resolve().parents[4] / "examples" / "sample_corpus" / "directory.yml"


@pytest.mark.unit
class TestTagDirectory:
    def test_schema_is_the_specifications(self, tmp_path):
        import sqlite3

        directory = TagDirectory(tmp_path / "sub" / "tags.sqlite")
        directory.list_tags()
        connection = sqlite3.connect(tmp_path / "sub" / "tags.sqlite")
        columns = {
            table: [row[1] for row in connection.execute(f"PRAGMA table_info({table})")] for table in ("tags", "users")
        }
        assert columns == {"tags": ["tenant_id", "name", "owner_user_id"], "users": ["id", "email"]}
        primary_key = [
            row[1] for row in sorted(connection.execute("PRAGMA table_info(tags)"), key=lambda row: row[5]) if row[5]
        ]
        assert primary_key == ["tenant_id", "name"]

    def test_add_user_set_owner_lookup(self, tmp_path):
        directory = TagDirectory(tmp_path / "tags.sqlite")
        directory.add_user("u1", "hr-lead@acme.example")
        directory.set_tag_owner("acme", "hr", "u1")
        directory.set_tag_owner("acme", "it", None)
        assert directory.lookup("acme", "hr") == TagOwner("hr", "u1", "hr-lead@acme.example", "acme")
        assert directory.lookup("acme", "it") == TagOwner("it", None, None, "acme")
        assert directory.lookup("acme", "unknown") is None
        assert directory.lookup("globex", "hr") is None  # another tenant's tag is not visible
        directory.add_user("u1", "new@acme.example")
        assert directory.lookup("acme", "hr").owner_email == "new@acme.example"
        # A second object on the same file (another process, the CLI) sees the same data.
        assert TagDirectory(tmp_path / "tags.sqlite").list_users() == [("u1", "new@acme.example")]

    def test_unknown_owner_rejected(self, tmp_path):
        with pytest.raises(TagDirectoryError, match="Unknown user"):
            TagDirectory(tmp_path / "tags.sqlite").set_tag_owner("acme", "hr", "ghost")
        with pytest.raises(TagDirectoryError, match="tenant"):
            TagDirectory(tmp_path / "tags.sqlite").set_tag_owner("", "hr", None)
        with pytest.raises(TagDirectoryError, match="tenant"):
            TagDirectory(tmp_path / "tags.sqlite").lookup(None, "hr")
        with pytest.raises(TagDirectoryError):
            TagDirectory(tmp_path / "tags.sqlite").add_user("u1", "not-an-email")

    def test_remove(self, tmp_path):
        directory = TagDirectory(tmp_path / "tags.sqlite")
        directory.add_user("u1", "a@b.example")
        directory.set_tag_owner("acme", "hr", "u1")
        directory.set_tag_owner("globex", "hr", None)
        assert directory.remove_user("u1") is True
        assert directory.lookup("acme", "hr") == TagOwner("hr", None, None, "acme")
        assert directory.remove_tag("acme", "hr") is True and directory.lookup("acme", "hr") is None
        assert directory.lookup("globex", "hr") is not None  # only acme's hr was removed
        assert directory.remove_tag("acme", "hr") is False

    def test_load_from_yaml(self, tmp_path):
        directory = TagDirectory(tmp_path / "tags.sqlite")
        counts = directory.load_from_yaml(SAMPLE_DIRECTORY)
        assert counts["users"] >= 5 and counts["tags"] >= 5
        assert directory.lookup("acme", "hr") == TagOwner("hr", "u-acme-maria", "maria.lopez@acme.example", "acme")
        assert directory.lookup("acme", "it").owner_user_id is None
        assert directory.lookup("globex", "hr") is None
        assert directory.lookup("globex", "people").owner_email == "marcus.bell@globex.example"
        globex = directory.list_tags("globex")
        assert globex and {owner.tenant_id for owner in globex} == {"globex"}
        assert all(owner.owner_email is None or owner.owner_email.endswith("@globex.example") for owner in globex)
        assert all(
            owner.owner_email is None or owner.owner_email.endswith("@acme.example")
            for owner in directory.list_tags("acme")
        )
        assert len(directory.list_tags()) == counts["tags"]

    def test_same_tag_name_in_two_tenants(self, tmp_path):
        directory = TagDirectory(tmp_path / "tags.sqlite")
        directory.load(
            {
                "users": [{"id": "u-a", "email": "a@acme.example"}, {"id": "u-g", "email": "g@globex.example"}],
                "tags": [
                    {"tenant_id": "acme", "name": "hr", "owner_user_id": "u-a"},
                    {"tenant_id": "globex", "name": "hr", "owner_user_id": "u-g"},
                ],
            }
        )
        assert directory.lookup("acme", "hr").owner_email == "a@acme.example"
        assert directory.lookup("globex", "hr").owner_email == "g@globex.example"
        assert [(o.tenant_id, o.tag) for o in directory.list_tags()] == [("acme", "hr"), ("globex", "hr")]

    def test_load_requires_tenant(self, tmp_path):
        directory = TagDirectory(tmp_path / "tags.sqlite")
        with pytest.raises(TagDirectoryError, match="tenant_id"):
            directory.load({"users": [], "tags": [{"name": "hr"}]})
        with pytest.raises(TagDirectoryError):
            directory.load({"users": [], "tags": {"hr": None}})  # the old name -> owner mapping has no tenant
        assert directory.list_tags() == []

    def test_old_schema_tags_table_is_recreated(self, tmp_path):
        import sqlite3

        path = tmp_path / "tags.sqlite"
        with sqlite3.connect(path) as connection:
            connection.executescript(
                "CREATE TABLE users (id TEXT PRIMARY KEY, email TEXT NOT NULL);"
                "CREATE TABLE tags (name TEXT PRIMARY KEY, owner_user_id TEXT REFERENCES users(id));"
                "INSERT INTO users VALUES ('u1', 'a@acme.example');"
                "INSERT INTO tags VALUES ('hr', 'u1');"
            )
        connection.close()
        directory = TagDirectory(path)
        assert directory.list_tags() == []  # old tenant-less tags dropped: reload them from YAML
        assert directory.list_users() == [("u1", "a@acme.example")]
        directory.set_tag_owner("acme", "hr", "u1")
        assert directory.lookup("acme", "hr").owner_user_id == "u1"

    def test_load_is_atomic(self, tmp_path):
        directory = TagDirectory(tmp_path / "tags.sqlite")
        with pytest.raises(TagDirectoryError, match="unknown owner"):
            directory.load(
                {
                    "users": [{"id": "u1", "email": "a@b.example"}],
                    "tags": [
                        {"tenant_id": "acme", "name": "hr", "owner_user_id": "u1"},
                        {"tenant_id": "acme", "name": "x", "owner_user_id": "ghost"},
                    ],
                }
            )
        assert directory.list_users() == [] and directory.list_tags() == []

    def test_default_path(self, monkeypatch, tmp_path):
        monkeypatch.setenv("SOURCEBOUND_DATA_DIR", str(tmp_path))
        assert default_tag_directory_path() == tmp_path / "tags.sqlite"
