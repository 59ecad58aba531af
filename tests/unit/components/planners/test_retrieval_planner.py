"""RetrievalPlanner: 3x over-fetch of max_context_chunks."""

import pytest

from components.planners.retrieval_planner import RetrievalPlanner


@pytest.mark.unit
class TestRetrievalPlanner:
    def test_init(self):
        with pytest.raises(ValueError):
            RetrievalPlanner(default_context_chunks=30, max_context_chunks=20)

    def test_to_dict(self):
        assert RetrievalPlanner().to_dict()["init_parameters"] == {
            "default_context_chunks": 5,
            "over_fetch_factor": 3,
            "max_context_chunks": 20,
            "tie_margin": 5,
        }

    def test_from_dict(self):
        assert (
            RetrievalPlanner.from_dict(RetrievalPlanner(default_context_chunks=4).to_dict()).default_context_chunks == 4
        )

    def test_run(self):
        assert RetrievalPlanner().run() == {"fetch_top_k": 20, "candidate_top_k": 15, "context_top_k": 5}
        assert RetrievalPlanner(tie_margin=0).run(max_context_chunks=2) == {
            "fetch_top_k": 6,
            "candidate_top_k": 6,
            "context_top_k": 2,
        }
        with pytest.raises(ValueError):
            RetrievalPlanner().run(max_context_chunks=21)
