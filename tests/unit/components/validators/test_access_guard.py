"""AccessGuard: post-retrieval defence in depth."""

import logging

import pytest
from haystack import Document

from components.validators.access_guard import AccessGuard


def _doc(number: int, **meta) -> Document:
    base = {"tenant_id": "acme", "tags": ["hr"], "scope": "tenant", "document_id": f"d{number}", "chunk_index": 0}
    return Document(id=f"d{number}:0", content=f"text {number}", meta={**base, **meta})


@pytest.mark.unit
class TestAccessGuard:
    def test_init(self):
        assert AccessGuard().default_exclude_tainted is True

    def test_to_dict(self):
        assert AccessGuard().to_dict()["init_parameters"] == {
            "default_verified_only": False,
            "default_exclude_tainted": True,
        }

    def test_from_dict(self):
        assert AccessGuard.from_dict(AccessGuard(default_verified_only=True).to_dict()).default_verified_only is True

    def test_run_drops_and_logs_violations(self, caplog):
        documents = [
            _doc(1),
            _doc(2, tenant_id="globex"),
            _doc(3, tags=["finance"]),
            _doc(4, scope="user", user_id="u2"),
            _doc(5, scope="user", user_id="u1"),
            _doc(6, scope="project", project_id="p9"),
            _doc(7, tainted=True),
            _doc(8),
        ]
        with caplog.at_level(logging.ERROR, logger="components.validators.access_guard"):
            out = AccessGuard().run(documents=documents, tenant_id="acme", user_tags=["hr"], user_id="u1")
        assert [doc.id for doc in out["documents"]] == ["d1:0", "d5:0", "d8:0"]
        assert out["violations"] == 5
        assert len([r for r in caplog.records if r.levelno == logging.ERROR]) == 5
        assert "d2:0" in caplog.text and "globex" in caplog.text

    def test_run_respects_options(self):
        documents = [_doc(1, verified=True), _doc(2, verified=False), _doc(3, tainted=True, verified=True)]
        out = AccessGuard().run(
            documents=documents,
            tenant_id="acme",
            user_tags=["hr"],
            filters={"verified_only": True, "exclude_tainted": False},
        )
        assert [doc.id for doc in out["documents"]] == ["d1:0", "d3:0"]
