"""components.core.documents.evolve: what dataclasses.replace gives for a Haystack Document."""

import dataclasses

import numpy as np
import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding

from components.core.documents import evolve

DOCUMENT = Document(
    id="doc-1:0#2",
    content="Team leads may carry over up to 20 unused leave days.",
    meta={"tenant_id": "acme", "tags": ["hr"], "chunk_rank": 0},
    score=0.71,
    embedding=[0.25, 0.5],
    sparse_embedding=SparseEmbedding(indices=[1, 4], values=[0.5, 0.25]),
)


@pytest.mark.unit
class TestEvolve:
    @pytest.mark.parametrize(
        "changes",
        [
            {},
            {"embedding": [0.1, 0.2, 0.3]},
            {"embedding": None, "score": None},
            {"meta": {"retrieved_by": ["vector"]}},
            {"content": "Other text.", "id": "doc-1:0#3"},
            {"content": None},
        ],
    )
    def test_evolve_equals_replace(self, changes):
        evolved, replaced = evolve(DOCUMENT, **changes), dataclasses.replace(DOCUMENT, **changes)
        assert evolved == replaced and evolved is not DOCUMENT
        assert evolved.__dict__.keys() == replaced.__dict__.keys()
        assert evolved.meta is replaced.meta  # attributes are shared, as replace shares them
        assert DOCUMENT.embedding == [0.25, 0.5] and DOCUMENT.content.startswith("Team")

    def test_evolve_turns_a_numpy_embedding_into_a_list(self):
        evolved = evolve(DOCUMENT, embedding=np.array([0.5, 0.25], dtype=np.float32))
        assert evolved.embedding == [0.5, 0.25] and type(evolved.embedding) is list
        assert evolved == dataclasses.replace(DOCUMENT, embedding=np.array([0.5, 0.25], dtype=np.float32))

    def test_evolve_rejects_what_replace_rejects(self):
        with pytest.raises(ValueError, match="content"):
            evolve(DOCUMENT, content=42)
        with pytest.raises(TypeError):
            evolve(DOCUMENT, colour="red")

    @pytest.mark.filterwarnings("ignore:Mutating attribute")  # Haystack warns about its own subclass __init__
    def test_evolve_a_subclass_goes_through_replace(self):
        @dataclasses.dataclass
        class Tagged(Document):
            tag: str = ""

        evolved = evolve(Tagged(content="x", tag="a"), tag="b")
        assert type(evolved) is Tagged and evolved.tag == "b" and evolved.content == "x"
