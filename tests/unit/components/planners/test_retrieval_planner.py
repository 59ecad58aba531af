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
            "raw_candidates": 0,
        }

    def test_run_raw_candidates_widen_only_the_fetch(self):
        # RAG_TOP_K_RAW: at least that many are fetched and re-scored; the candidates and context stay.
        assert RetrievalPlanner(raw_candidates=50).run(max_context_chunks=4) == {
            "fetch_top_k": 55,
            "candidate_top_k": 12,
            "context_top_k": 4,
        }
        assert RetrievalPlanner(raw_candidates=5).run(max_context_chunks=4)["fetch_top_k"] == 17
        with pytest.raises(ValueError, match="raw_candidates"):
            RetrievalPlanner(raw_candidates=-1)

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
