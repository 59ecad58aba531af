"""
Tests for components.services.pipeline_copy: the fast path copies exactly like Haystack's deep copy,
and pipelines still isolate inputs.
"""

from copy import deepcopy
from datetime import UTC, datetime

import pytest
from haystack import Document, Pipeline, component
from haystack.core.pipeline import base, pipeline, utils
from haystack.dataclasses import ByteStream, SparseEmbedding

from components.services.pipeline_copy import (
    fast_deepcopy_with_exceptions,
    install_fast_input_copy,
    uninstall_fast_input_copy,
)


@pytest.fixture
def installed():
    assert install_fast_input_copy()
    yield
    uninstall_fast_input_copy()


@component
class _Appender:
    """Mutates its inputs in place, as a careless component might."""

    @component.output_types(values=list[float], documents=list[Document])
    def run(self, values: list[float], documents: list[Document]) -> dict:
        values.append(99.0)
        documents[0].meta["touched"] = True
        documents[0].embedding.append(1.0)
        return {"values": values, "documents": documents}


@component
class _Reader:
    @component.output_types(length=int, touched=bool, embedding_size=int)
    def run(self, values: list[float], documents: list[Document]) -> dict:
        return {"length": len(values), "touched": "touched" in documents[0].meta,
                "embedding_size": len(documents[0].embedding)}  # fmt: skip


@pytest.mark.unit
class TestFastInputCopy:
    def test_install_patches_the_modules_that_use_it(self, installed):
        for module in (utils, base, pipeline):
            assert module._deepcopy_with_exceptions is fast_deepcopy_with_exceptions
        assert install_fast_input_copy()  # idempotent

    def test_uninstall_restores_haystack(self, installed):
        uninstall_fast_input_copy()
        for module in (utils, base, pipeline):
            assert module._deepcopy_with_exceptions is not fast_deepcopy_with_exceptions
        assert install_fast_input_copy()

    def test_run_copies_scalars_and_float_lists_like_deepcopy(self, installed):
        embedding = [0.1, -0.2, 3.0]
        copied = fast_deepcopy_with_exceptions(embedding)
        assert copied == embedding and copied is not embedding
        for value in (1, 0.5, "text", True, None, b"raw"):
            assert fast_deepcopy_with_exceptions(value) is value
        nested = {
            "filters": {"operator": "AND", "conditions": [{"field": "meta.tags", "value": ["a", "b"]}]},
            "k": [1, 2],
        }
        copied = fast_deepcopy_with_exceptions(nested)
        assert copied == nested
        assert copied["filters"]["conditions"][0]["value"] is not nested["filters"]["conditions"][0]["value"]

    def test_run_copies_documents_deeply(self, installed):
        document = Document(
            id="doc-1:0", content="text", meta={"tags": ["hr"], "nested": {"a": [1, 2]}}, score=0.5,
            embedding=[0.1, 0.2], sparse_embedding=SparseEmbedding(indices=[3], values=[0.7]),
            blob=ByteStream(data=b"x"),
        )  # fmt: skip
        copied = fast_deepcopy_with_exceptions(document)
        assert copied == deepcopy(document)
        assert type(copied) is Document
        assert copied.meta is not document.meta and copied.meta["tags"] is not document.meta["tags"]
        assert copied.embedding is not document.embedding
        assert copied.sparse_embedding is not document.sparse_embedding and copied.blob is not document.blob

    def test_run_keeps_aliasing_within_a_document(self, installed):
        shared = [0.1, 0.2]
        document = Document(content="x", meta={"same": shared}, embedding=shared)
        copied = fast_deepcopy_with_exceptions(document)
        assert copied.meta["same"] is copied.embedding

    def test_run_copies_every_kind_of_meta_like_deepcopy(self, installed):
        deep: dict = {"leaf": [1]}
        for _ in range(20):  # deeper than the direct walk goes: copy.deepcopy takes over
            deep = {"next": deep}
        cyclic: dict = {"name": "loop"}
        cyclic["self"] = cyclic
        tags = ["hr", "it"]
        metas = [
            {
                "tags": tags,
                "also_tags": tags,
                "page": 3,
                "ratio": 0.5,
                "flags": [True, None],
                "nested": [{"a": [1, {"b": "c"}]}],
            },
            {"when": datetime(2026, 1, 2, tzinfo=UTC), "pair": ("a", "b"), "tags": ["x"]},
            {"deep": deep},
        ]
        for meta in metas:
            document = Document(content="text", meta=meta, embedding=[0.25, 0.5])
            copied = fast_deepcopy_with_exceptions(document)
            assert copied == deepcopy(document) and copied.meta is not meta
        copied = fast_deepcopy_with_exceptions(Document(content="t", meta=metas[0]))
        assert copied.meta["tags"] is copied.meta["also_tags"] and copied.meta["tags"] is not tags  # aliasing kept
        assert copied.meta["nested"][0]["a"][1] is not metas[0]["nested"][0]["a"][1]
        looped = fast_deepcopy_with_exceptions(Document(id="loop", content="t", meta={"cycle": cyclic})).meta["cycle"]
        assert looped["self"] is looped and looped is not cyclic and looped["name"] == "loop"

    def test_run_copies_containers_like_haystack(self, installed):
        from collections import OrderedDict, defaultdict

        tags = ["hr"]
        documents = [Document(content="a", meta={"tags": tags}, embedding=[0.1, 0.2]), Document(content="b")]
        inputs = {
            "documents": documents,
            "filters": {"operator": "AND", "conditions": [{"field": "meta.tags", "operator": "in", "value": tags}]},
            "nested": [[1, 2], ["x", {"y": [3]}], (4, [5]), {6}],
            "ordered": OrderedDict(a=[1]),
            "counts": defaultdict(list, a=[1]),
            "reader": _Reader(),
        }
        copied = fast_deepcopy_with_exceptions(inputs)
        uninstall_fast_input_copy()
        expected = utils._deepcopy_with_exceptions(inputs)
        assert copied == expected
        assert {key: type(value) for key, value in copied.items()} == {key: type(v) for key, v in expected.items()}
        assert copied["reader"] is inputs["reader"]
        assert copied["documents"][0] is not documents[0] and copied["documents"][0].meta["tags"] is not tags
        assert copied["filters"]["conditions"][0]["value"] is not tags
        assert copied["nested"][1][1]["y"] is not inputs["nested"][1][1]["y"]

    def test_run_passes_components_through(self, installed):
        reader = _Reader()
        assert fast_deepcopy_with_exceptions([reader])[0] is reader

    def test_run_pipeline_inputs_stay_isolated(self, installed):
        pipe = Pipeline()
        pipe.add_component("appender", _Appender())
        pipe.add_component("reader", _Reader())
        values, documents = [1.0, 2.0], [Document(content="x", embedding=[0.5, 0.5])]
        result = pipe.run(
            {
                "appender": {"values": values, "documents": documents},
                "reader": {"values": values, "documents": documents},
            }
        )
        assert result["reader"] == {"length": 2, "touched": False, "embedding_size": 2}
        assert values == [1.0, 2.0] and documents[0].meta == {} and documents[0].embedding == [0.5, 0.5]
