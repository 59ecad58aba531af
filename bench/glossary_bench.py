"""
``python -m bench.glossary_bench``: what the glossary and server-side conversations give and cost.

1. **Recall@5 with and without glossary expansion** on the alias gold set
   (``evaluation/datasets/sample_aliases.yml``): the sample corpus indexed into a fresh store, each
   question searched through ``pipelines/search.yml`` as served and with the expander pointed at no glossary
   (the figures ``make eval`` thresholds).
2. **Expansion cost**: the ``GlossaryQueryExpander`` alone on the alias questions (median microseconds per
   query; the tenant's vocabulary cached, one SQLite digest read per query).
3. **Conversation cost**: one recorded turn (two messages written, the extractive summary rolled, the raw
   turns deleted) plus reading the next request's history from ``conversations.sqlite``, median milliseconds.

Prints a Markdown table (bench/README.md, "Glossary and conversations").

```bash
.venv/bin/python -m bench.glossary_bench [--repeat 200] [--turns 50]
```
"""

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from components.core.requester import Identity
from components.generators.conversation_summarizer import ExtractiveConversationSummarizer
from components.preprocessors.glossary_query_expander import GlossaryQueryExpander
from components.services.conversation_service import ConversationService, ConversationSettings
from components.stores.conversation_store import CONVERSATIONS_FILE
from components.stores.glossary_store import GLOSSARY_FILE
from evaluation.datasets import load_sample_aliases
from evaluation.runner import CorpusIndex


def recall(index: CorpusIndex, glossary: bool) -> float:
    questions = index.dataset.questions
    hits = 0
    for question in questions:
        found = {chunk.document_id for chunk in index.search(question, glossary=glossary)[:5]}
        hits += bool(found & set(question.gold_document_ids))
    return hits / len(questions)


def expansion_us(data_dir: Path, repeat: int) -> float:
    dataset = load_sample_aliases()
    expander = GlossaryQueryExpander(glossary_path=str(data_dir / GLOSSARY_FILE))
    timings = []
    for _ in range(repeat):
        for question in dataset.questions:
            started = time.perf_counter()
            expander.run(query=question.question, tenant_id=question.requester.tenant_id)
            timings.append((time.perf_counter() - started) * 1e6)
    return statistics.median(timings)


def conversation_ms(data_dir: Path, turns: int) -> float:
    settings = ConversationSettings(recent_messages=0, summary_threshold_chars=0, retention="summaries_only")
    service = ConversationService(data_dir / CONVERSATIONS_FILE, settings, ExtractiveConversationSummarizer())
    identity = Identity("acme", ("all-staff",), "u-bench")
    conversation_id = service.create(identity)["conversation_id"]
    timings = []
    for number in range(turns):
        started = time.perf_counter()
        service.record_turn(
            conversation_id,
            identity,
            f"What is the meal per diem for trip {number}?",
            "You may claim up to EUR 45 within the Netherlands and EUR 60 abroad. [SourceId: acme-expense-policy:2]",
        )
        service.history(conversation_id, identity)
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.glossary_bench", description=__doc__.split("\n")[1])
    parser.add_argument("--repeat", type=int, default=200, help="passes over the alias questions for the cost")
    parser.add_argument("--turns", type=int, default=50, help="conversation turns timed")
    args = parser.parse_args(argv)
    dataset = load_sample_aliases()
    with tempfile.TemporaryDirectory(prefix="sourcebound-glossary-bench-") as tmp:
        data_dir = Path(tmp) / "data"
        with CorpusIndex(dataset, data_dir) as index:
            with_glossary, without_glossary = recall(index, True), recall(index, False)
            expansion = expansion_us(data_dir, args.repeat)
        turn = conversation_ms(Path(tmp) / "conversations", args.turns)
    print("| figure | value |")
    print("|---|---|")
    print(f"| alias questions | {len(dataset.questions)} |")
    print(f"| recall@5 with glossary expansion | {with_glossary:.3f} |")
    print(f"| recall@5 without | {without_glossary:.3f} |")
    print(f"| gain | {with_glossary - without_glossary:+.3f} |")
    print(f"| expansion, median per query | {expansion:.0f} µs |")
    print(f"| conversation turn recorded + summarised + history read, median | {turn:.2f} ms |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
