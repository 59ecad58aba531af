"""PerDocumentLimiter (specification test_limit_per_document) and the top-k cut."""

import pytest
from haystack import Document

from components.filters.per_document_limiter import PerDocumentLimiter


def _chunks(spec: str) -> list[Document]:
    """'aabac' -> chunks of documents a, a, b, a, c in that rank order."""
    counters: dict[str, int] = {}
    documents = []
    for name in spec:
        index = counters.get(name, 0)
        counters[name] = index + 1
        documents.append(
            Document(id=f"{name}:{index}", content=f"{name} {index}", meta={"document_id": name, "chunk_index": index})
        )
    return documents


@pytest.mark.unit
class TestPerDocumentLimiter:
    def test_init(self):
        limiter = PerDocumentLimiter()
        assert (limiter.max_chunks_per_doc, limiter.top_k) == (3, 5)
        with pytest.raises(ValueError):
            PerDocumentLimiter(max_chunks_per_doc=0)

    def test_to_dict(self):
        assert PerDocumentLimiter(2, 4).to_dict()["init_parameters"] == {"max_chunks_per_doc": 2, "top_k": 4}

    def test_from_dict(self):
        assert PerDocumentLimiter.from_dict(PerDocumentLimiter(2, 4).to_dict()).top_k == 4

    def test_limit_per_document(self):
        out = PerDocumentLimiter(max_chunks_per_doc=3, top_k=10).run(documents=_chunks("aaaaabab"))
        assert [doc.id for doc in out["documents"]] == ["a:0", "a:1", "a:2", "b:0", "b:1"]

    def test_top_k_from_run_overrides_init(self):
        documents = _chunks("abcdefg")
        assert len(PerDocumentLimiter(top_k=5).run(documents=documents)["documents"]) == 5
        assert [d.id for d in PerDocumentLimiter(top_k=5).run(documents=documents, top_k=2)["documents"]] == [
            "a:0",
            "b:0",
        ]
