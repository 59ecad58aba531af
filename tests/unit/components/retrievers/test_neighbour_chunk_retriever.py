"""NeighbourChunkRetriever: small-to-big reading around the strongest hits, under the request's access filter."""

import dataclasses

import pytest
from support.indexing_support import roundtrip, stored_chunk

from components.builders.access_filter_builder import AccessFilterBuilder
from components.retrievers.neighbour_chunk_retriever import NEIGHBOUR_FIELD, NeighbourChunkRetriever


def _filter(tenant_id: str = "acme", tags: list[str] | None = None) -> dict:
    return AccessFilterBuilder().run(tenant_id=tenant_id, user_tags=tags or ["hr"])["filters"]


def _hit(document_id: str, index: int, score: float, **meta):
    return dataclasses.replace(stored_chunk(document_id, index, **meta), score=score, embedding=None)


@pytest.mark.integration
class TestNeighbourChunkRetriever:
    def test_init(self, store):
        retriever = NeighbourChunkRetriever(document_store=store)
        assert (retriever.top_hits, retriever.window, retriever.min_score) == (2, 1, 0.45)
        for bad in ({"top_hits": -1}, {"window": 1.5}, {"min_score": 2.0}):
            with pytest.raises(ValueError):
                NeighbourChunkRetriever(document_store=store, **bad)

    def test_to_dict(self, store):
        data = NeighbourChunkRetriever(document_store=store, top_hits=1).to_dict()
        assert data["type"] == "components.retrievers.neighbour_chunk_retriever.NeighbourChunkRetriever"
        assert data["init_parameters"]["top_hits"] == 1
        assert data["init_parameters"]["document_store"]["type"].endswith("QdrantEdgeDocumentStore")

    def test_from_dict(self, store):
        restored = roundtrip(NeighbourChunkRetriever(document_store=store, window=2, min_score=0.5))
        assert (restored.window, restored.min_score, restored.document_store.path) == (2, 0.5, store.path)

    def test_run_reads_the_chunks_around_a_strong_hit_in_document_order(self, store):
        store.write_documents([stored_chunk("man", index) for index in range(5)] + [stored_chunk("other", 0)])
        context = [_hit("man", 2, 0.7), _hit("other", 0, 0.5)]
        query = stored_chunk("man", 3).embedding  # the neighbour after the hit is the query itself: cosine 1
        out = NeighbourChunkRetriever(document_store=store, top_hits=1).run(
            documents=context, filters=_filter(), query_embedding=query
        )["documents"]
        assert [doc.id for doc in out] == ["man:1", "man:2", "man:3", "other:0"]
        neighbours = {doc.id: doc for doc in out if doc.meta.get(NEIGHBOUR_FIELD)}
        assert set(neighbours) == {"man:1", "man:3"} and neighbours["man:1"].meta[NEIGHBOUR_FIELD] == "man:2"
        assert neighbours["man:3"].score == pytest.approx(1.0) and all(doc.embedding is None for doc in out)

    def test_run_never_widens_the_access_filter(self, store):
        # The neighbour chunk carries another tag (as if retagged): the requester may not see it, so it stays out.
        store.write_documents(
            [stored_chunk("doc", 0), stored_chunk("doc", 1), stored_chunk("doc", 2, tags=["finance"])]
        )
        store.write_documents([stored_chunk("doc", 0, tenant_id="globex")])
        out = NeighbourChunkRetriever(document_store=store).run(documents=[_hit("doc", 1, 0.9)], filters=_filter())
        assert [doc.id for doc in out["documents"]] == ["doc:0", "doc:1"]
        assert all(doc.meta["tenant_id"] == "acme" for doc in out["documents"])
        with pytest.raises(ValueError, match="access filter"):
            NeighbourChunkRetriever(document_store=store).run(documents=[_hit("doc", 1, 0.9)], filters={})

    def test_run_leaves_weak_hits_and_present_chunks_alone(self, store):
        store.write_documents([stored_chunk("doc", index) for index in range(3)])
        retriever = NeighbourChunkRetriever(document_store=store, min_score=0.5)
        weak = [_hit("doc", 1, 0.3)]
        assert retriever.run(documents=weak, filters=_filter())["documents"] == weak
        both = [_hit("doc", 1, 0.9), _hit("doc", 0, 0.8)]
        assert [doc.id for doc in retriever.run(documents=both, filters=_filter())["documents"]] == [
            "doc:1",
            "doc:2",
            "doc:0",
        ]
        off = NeighbourChunkRetriever(document_store=store, top_hits=0)
        assert off.run(documents=both, filters=_filter())["documents"] == both

    def test_run_never_grows_past_the_requests_context_size(self, store):
        # docs/contract.md, "Retrieval quality controls": a neighbour of a strong hit takes a weak hit's place.
        store.write_documents([stored_chunk("doc", index) for index in range(5)] + [stored_chunk("weak", 0)])
        context = [_hit("doc", 2, 0.8), _hit("weak", 0, 0.3)]
        retriever = NeighbourChunkRetriever(document_store=store, top_hits=1)
        capped = retriever.run(documents=context, filters=_filter(), max_documents=3)["documents"]
        assert [doc.id for doc in capped] == ["doc:1", "doc:2", "doc:3"]
        tight = retriever.run(documents=context, filters=_filter(), max_documents=2)["documents"]
        assert [doc.id for doc in tight] == ["doc:1", "doc:2"] and len(tight) == 2
        room = retriever.run(documents=context, filters=_filter(), max_documents=5)["documents"]
        assert [doc.id for doc in room] == ["doc:1", "doc:2", "doc:3", "weak:0"]
