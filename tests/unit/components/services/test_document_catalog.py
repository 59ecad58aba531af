"""The operator's document list and stale documents, on the real Qdrant Edge store and real files."""

import hashlib
from datetime import UTC, datetime, timedelta

import pytest
from support.indexing_support import stored_chunk

from components.services.document_catalog import StaleRule, document_catalog, stale_counts

NOW = datetime(2026, 11, 1, tzinfo=UTC)
FRESH = (NOW - timedelta(days=3)).isoformat()
OLD = (NOW - timedelta(days=400)).isoformat()


def chunks(document_id, count, **meta):
    return [stored_chunk(document_id, index, **meta) for index in range(count)]


@pytest.fixture
def files(tmp_path):
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "kept.md").write_text("unchanged", encoding="utf-8")
    (root / "edited.md").write_text("edited since", encoding="utf-8")
    outside = tmp_path / "elsewhere.md"
    outside.write_text("elsewhere", encoding="utf-8")
    return root, outside


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.integration
class TestDocumentCatalog:
    def test_rule_validates_its_age(self):
        assert StaleRule().max_age_days == 180
        with pytest.raises(ValueError, match="max_age_days"):
            StaleRule(max_age_days=-1)

    def test_run_lists_documents_with_counts_flags_and_staleness(self, store, files):
        root, outside = files
        store.write_documents(
            chunks("handbook", 3, indexed_at=FRESH, document_name="Handbook", language="en", verified=True,
                   source_uri=(root / "kept.md").as_uri(), source_hash=sha("unchanged"))
            + chunks("edited", 1, indexed_at=FRESH, source_uri=(root / "edited.md").as_uri(), source_hash=sha("old"))
            + chunks("gone", 1, indexed_at=FRESH, source_uri=(root / "missing.md").as_uri())
            + chunks("outside", 1, indexed_at=FRESH, source_uri=outside.as_uri(), source_hash="not-its-hash")
            + chunks("ancient", 2, indexed_at=OLD, tainted=True, source_uri="https://wiki.example/page")
            + chunks("untracked", 1)  # indexed before chunks carried indexed_at
            + chunks("private-mine", 1, scope="user", user_id="u-me", indexed_at=FRESH)
            + chunks("private-theirs", 1, scope="user", user_id="u-other", indexed_at=FRESH)
            + chunks("globex-doc", 1, tenant_id="globex", indexed_at=OLD)
        )  # fmt: skip
        catalog = document_catalog(store, "acme", StaleRule(180, (root,)), viewer_user_id="u-me", now=NOW)
        by_id = {entry["document_id"]: entry for entry in catalog["documents"]}
        assert set(by_id) == {"handbook", "edited", "gone", "outside", "ancient", "untracked", "private-mine"}
        assert catalog["private_documents_hidden"] == 1
        handbook = by_id["handbook"]
        assert (handbook["title"], handbook["chunks"], handbook["languages"], handbook["verified"]) == (
            "Handbook", 3, ["en"], True,
        )  # fmt: skip
        assert handbook["source"] == "kept.md" and handbook["stale"] == []  # the file name, never the server path
        assert "source_uri" not in handbook and "source_hash" not in handbook
        assert by_id["edited"]["stale"] == ["source_changed"]
        assert by_id["gone"]["stale"] == ["source_missing"]
        assert by_id["outside"]["stale"] == []  # outside the configured folders: never read
        assert by_id["ancient"]["stale"] == ["not_reindexed"] and by_id["ancient"]["tainted"] is True
        assert by_id["ancient"]["source"] == "https://wiki.example/page"
        assert by_id["untracked"]["stale"] == ["not_reindexed"]
        assert catalog["stale"] == {"not_reindexed": 2, "source_changed": 1, "source_missing": 1}
        no_age = document_catalog(store, "acme", StaleRule(0, ()), now=NOW)
        assert all(entry["stale"] == [] for entry in no_age["documents"]) and no_age["private_documents_hidden"] == 2

    def test_stale_counts_cover_every_tenant_and_private_documents(self, store):
        store.write_documents(
            chunks("a", 2, indexed_at=OLD) + chunks("b", 1, indexed_at=FRESH)
            + chunks("p", 1, scope="user", user_id="u", indexed_at=OLD) + chunks("g", 1, tenant_id="globex")
        )  # fmt: skip
        assert stale_counts(store, StaleRule(30), now=NOW) == {
            "acme": {"not_reindexed": 2, "source_changed": 0, "source_missing": 0},
            "globex": {"not_reindexed": 1, "source_changed": 0, "source_missing": 0},
        }

    def test_a_store_without_a_meta_scan_is_read_through_its_documents(self, store):
        store.write_documents(chunks("a", 2, indexed_at=FRESH))

        class Plain:  # a Haystack store with only filter_documents (e.g. the Qdrant server profile)
            def filter_documents(self, filters=None):
                return store.filter_documents(filters)

        catalog = document_catalog(Plain(), "acme", StaleRule(30), now=NOW)
        assert [(entry["document_id"], entry["chunks"]) for entry in catalog["documents"]] == [("a", 2)]
