"""
Parity of the Edge store and the Qdrant-server profile (``bench/profile_parity.py``): the same sample corpus and
the sample-gold questions, asked of both engines through the service layer. Dense and keyword top-5 must be the
same SourceIds in the same order, and the extractive answers the same; hybrid fusion is compared by overlap (the
two RRF implementations may order equal fused scores differently).
"""

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_engines_return_the_same_results_and_answers(tmp_path):
    from bench.profile_parity import markdown, run_parity

    report = run_parity(k=5, workdir=tmp_path)
    print("\n" + markdown(report))
    total = report["questions"]
    assert total >= 50
    assert report["vector"]["identical_top_k"] == total, report["differences"]
    assert report["keyword"]["identical_top_k"] == total, report["differences"]
    # Both fuse the same candidate lists with the same RRF constant; only ties may order differently.
    assert report["hybrid"]["mean_overlap"] >= 0.9, report["differences"]
    assert report["rag"]["identical_answers"] == total, report["differences"]
