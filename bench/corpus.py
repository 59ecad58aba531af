"""
The benchmark corpus: deterministic, real English text for 10 tenants with tags, built into a
service data dir (``<dir>/qdrant``) and cached under ``bench/results/cache/``.

Why it is built this way: embedding 100k chunks with the real model takes ~45 minutes on 2
cores, which does not fit a 15-minute benchmark. So the *sentences* are embedded with the real
model (all-MiniLM-L6-v2, a few thousand short texts, seconds to a minute) and every chunk is
composed of sentences:

* **Text.** Eight workplace topics (HR, finance, IT, security, facilities, engineering, legal,
  sales) each have hand-written sentence templates (subject + rule + condition, ~20 tokens);
  a seeded RNG draws ``SENTENCES_PER_TOPIC`` distinct sentences per topic. A ninth topic,
  ``history``, uses the real sentences of the SQuAD 2.0 "Normans" article
  (``../shared/datasets``). A chunk is 7-9 sentences of one topic (4-6 for ``history``),
  ~150-200 tiktoken tokens like the indexing pipeline's chunks, and every chunk's text is
  distinct, so BM25 statistics, de-duplication and snippets behave as on real data.
* **Embeddings.** A chunk's dense vector is the normalised sum of its sentences' real
  embeddings: not the model's embedding of the chunk text, but close to it (the build embeds a
  sample of chunks for real and records the mean cosine between the two in the manifest as
  ``fidelity``). Query embeddings are always real: the server embeds every request.
* **Payloads.** Each document gets the source-level meta the indexing pipeline's
  ``DocumentIdentifier`` sets (tenant, tags, scope, user/project, names, ``source_hash``,
  ``embedding_model``, flags) and then goes through the pipeline's own
  ``ChunkMetadataEnricher`` (ids ``document_id:chunk_index``, ``chunk_hash``, ``token_count``,
  every data-model field), and is written with ``QdrantEdgeDocumentStore.write_documents``, so
  the points are exactly what ``pipelines/indexing.yml`` writes (BM25 vectors computed by the
  store).
* **Access mix.** 10 tenants; documents round-robin over tenants; tags = the topic's tag, plus
  ``all-staff`` (60 %) or ``<topic>-restricted`` (10 %); scope ``tenant`` 85 %, ``user`` 8 %,
  ``project`` 7 %; 30 % ``verified``, 2 % ``tainted`` (excluded from search by default).

Sizes are prefixes of one document stream (per-document seeds), so the 10k corpus is the
first 10k chunks of the 100k one. A built data dir is cached under
``bench/results/cache/corpus-<size>-<key>/`` where the key hashes the generator version, what the
generator outputs (every sentence and the first documents), the store's payload converter and the
qdrant-edge-py version; a rerun reuses it.

Usage:

```python
from bench.corpus import ensure_corpus, query_set

data_dir, manifest = ensure_corpus(10_000)      # builds once, then cached
queries = query_set(200)                        # request bodies with identities
```
"""

import hashlib
import itertools
import json
import os
import re
import shutil
import sys
import time
from dataclasses import replace
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

GENERATOR_VERSION = 2  # 2: the reader's sentence vectors stored beside the store, as indexing does
SEED = 20250611
REPO = Path(__file__).resolve().parent.parent
CACHE_DIR = Path(__file__).resolve().parent / "results" / "cache"
SQUAD = (
    Path(os.environ.get("SOURCEBOUND_SHARED_DIR", REPO.parent / "shared"))
    / "datasets"
    / "squad2-normans"
    / "normans.json"
)
EMBEDDING_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIM = 384
SENTENCES_PER_TOPIC = 320
MAX_CHUNK_WORDS = 130  # ~170 tiktoken tokens: within the indexing chunker's 200 and the model's 256 word pieces
WRITE_BATCH = 1000
FIDELITY_SAMPLE = 48

TENANTS = [f"tenant-{index:02d}" for index in range(10)]
COMPANIES = ["Acme Robotics", "Globex Logistics", "Initech", "Umbrella Foods", "Stark Tools", "Wayne Freight",
             "Hooli Cloud", "Vandelay Imports", "Soylent Labs", "Tyrell Energy"]  # fmt: skip
USERS_PER_TENANT = 20
PROJECTS_PER_TENANT = 5

# Each topic: the access tag, a section title, and sentence parts. Sentence = subject + rule (with {n}) + condition.
TOPICS: dict[str, dict[str, Any]] = {
    "hr": {
        "title": "Leave and working time",
        "subjects": [
            "Employees",
            "Full-time staff",
            "Part-time staff",
            "New hires",
            "Team leads",
            "Interns",
            "Shift workers",
            "Employees on fixed-term contracts",
        ],
        "rules": [
            "are entitled to {n} days of paid annual leave per calendar year",
            "may carry over up to {n} unused leave days into the next year",
            "must request parental leave at least {n} weeks before it starts",
            "receive {n} paid sick days before a doctor's note is required",
            "can work up to {n} hours of overtime per month",
            "get a compensation day for every {n} hours of approved overtime",
            "must record their working hours in the timesheet tool within {n} days",
            "are eligible for a sabbatical of up to {n} months after five years of service",
            "receive a {n} percent allowance for night shifts",
            "must give {n} weeks of notice before resigning",
            "can take {n} days of special leave for moving house",
            "complete a probation period of {n} months",
        ],
        "conditions": [
            "as stated in the employee handbook",
            "unless their contract says otherwise",
            "with written approval from their manager",
            "when the request is filed in the HR portal",
            "after the probation period has ended",
            "according to the collective agreement",
            "if the works council has agreed",
            "pro rata to their contracted hours",
        ],
        "numbers": [2, 3, 5, 8, 10, 12, 15, 20, 25, 30],
        "queries": [
            "How many days of paid annual leave do employees get?",
            "How far in advance must parental leave be requested?",
            "How many unused leave days can be carried over to next year?",
            "When is a doctor's note required for sick leave?",
            "How is approved overtime compensated?",
            "How long is the notice period before resigning?",
        ],
    },
    "finance": {
        "title": "Expenses and travel",
        "subjects": [
            "Employees",
            "Travellers",
            "Managers",
            "Sales representatives",
            "Consultants",
            "Board members",
            "Project leads",
            "Cardholders",
        ],
        "rules": [
            "may claim a meal allowance of {n} euros per day on business trips",
            "must submit expense claims with receipts within {n} days",
            "can book hotel rooms costing up to {n} euros per night",
            "need pre-approval for any purchase above {n} euros",
            "are reimbursed {n} cents per kilometre driven with a private car",
            "may fly business class on flights longer than {n} hours",
            "must use the corporate card for expenses above {n} euros",
            "can spend up to {n} euros per guest on client dinners",
            "receive the travel advance at least {n} days before departure",
            "must book train travel when the journey takes less than {n} hours",
            "have their claims paid out within {n} working days",
            "must return unused travel advances within {n} days",
        ],
        "conditions": [
            "according to the expense policy",
            "once finance has checked the receipts",
            "when the trip is booked through the travel portal",
            "for trips within the country",
            "unless the budget owner approves an exception",
            "as long as the receipts are itemised",
            "for international travel",
            "in line with the tax rules",
        ],
        "numbers": [3, 5, 10, 14, 20, 30, 45, 60, 150, 500],
        "queries": [
            "What is the daily meal allowance on business trips?",
            "Within how many days must expense claims be submitted?",
            "How much may a hotel room cost per night?",
            "Which purchases need pre-approval?",
            "What is the mileage rate for private cars?",
            "When may employees fly business class?",
        ],
    },
    "it": {
        "title": "IT equipment and accounts",
        "subjects": [
            "Employees",
            "New starters",
            "Developers",
            "Remote workers",
            "Administrators",
            "Contractors",
            "Support engineers",
            "Laptop users",
        ],
        "rules": [
            "receive a replacement laptop every {n} years",
            "must change their password every {n} days",
            "can request up to {n} external monitors for their home office",
            "must install security updates within {n} days of release",
            "get a reply from the service desk within {n} hours",
            "have their accounts disabled after {n} days of inactivity",
            "may keep up to {n} gigabytes in their personal cloud drive",
            "must enrol {n} devices at most in mobile device management",
            "receive their equipment {n} working days before their first day",
            "must back up local files at least every {n} days",
            "can reset a forgotten password after {n} failed attempts",
            "must return all devices within {n} days of leaving",
        ],
        "conditions": [
            "through the IT self-service portal",
            "as described in the IT handbook",
            "after opening a ticket with the service desk",
            "using multi-factor authentication",
            "unless the device is managed by the client",
            "on the company network only",
            "when their manager has approved the request",
            "according to the acceptable use policy",
        ],
        "numbers": [1, 2, 3, 4, 5, 7, 14, 30, 90, 100],
        "queries": [
            "How often do employees get a new laptop?",
            "How often must passwords be changed?",
            "How many monitors can I get for my home office?",
            "How quickly does the service desk reply?",
            "When are inactive accounts disabled?",
            "How do I reset a forgotten password?",
        ],
    },
    "security": {
        "title": "Security and incidents",
        "subjects": [
            "Employees",
            "The on-call engineer",
            "The security team",
            "Incident commanders",
            "Data owners",
            "System administrators",
            "Vendors",
            "Team leads",
        ],
        "rules": [
            "must report a suspected security incident within {n} minutes",
            "must acknowledge a severity one page within {n} minutes",
            "review access rights to sensitive systems every {n} months",
            "must rotate production secrets at least every {n} days",
            "keep audit logs for at least {n} months",
            "must complete security awareness training every {n} months",
            "run a phishing simulation every {n} weeks",
            "publish a post-incident review within {n} working days",
            "must notify the data protection officer within {n} hours of a breach",
            "may grant temporary admin access for at most {n} hours",
            "must encrypt laptops with keys of at least {n} bits",
            "test the disaster recovery plan every {n} months",
        ],
        "conditions": [
            "as required by the incident response process",
            "through the security hotline",
            "in the incident channel",
            "following the escalation policy",
            "according to the information security policy",
            "for all production systems",
            "even outside business hours",
            "as agreed with the auditors",
        ],
        "numbers": [4, 6, 12, 15, 24, 30, 72, 90, 128, 256],
        "queries": [
            "How quickly must a security incident be reported?",
            "When must a severity one page be acknowledged?",
            "How often are production secrets rotated?",
            "How long are audit logs kept?",
            "Who must be notified after a data breach?",
            "How often is the disaster recovery plan tested?",
        ],
    },
    "facilities": {
        "title": "Offices and facilities",
        "subjects": [
            "Visitors",
            "Employees",
            "Cleaning staff",
            "Delivery drivers",
            "Fire wardens",
            "Office managers",
            "Guests",
            "Cyclists",
        ],
        "rules": [
            "must sign in at reception and wear a badge for the whole of their {n} hour visit",
            "can book a meeting room up to {n} days in advance",
            "may park in the visitor area for at most {n} hours",
            "must leave the building within {n} minutes when the fire alarm sounds",
            "can reserve a desk {n} days ahead in the booking app",
            "find first aid kits on every {n} floors",
            "receive a new access badge within {n} working days",
            "may bring at most {n} guests to the canteen",
            "must report broken equipment within {n} hours",
            "can store bicycles in the basement for up to {n} days",
            "get heating and air conditioning from {n} in the morning",
            "must clear their desk after {n} days of absence",
        ],
        "conditions": [
            "at the headquarters",
            "at all office locations",
            "during business hours",
            "as posted at the entrance",
            "according to the building rules",
            "unless facilities management says otherwise",
            "through the facilities desk",
            "for safety reasons",
        ],
        "numbers": [1, 2, 3, 4, 5, 7, 8, 14, 21, 30],
        "queries": [
            "What must visitors do at reception?",
            "How far ahead can meeting rooms be booked?",
            "How long may visitors park?",
            "What happens when the fire alarm sounds?",
            "How do I get a new access badge?",
            "Where can I store my bicycle?",
        ],
    },
    "engineering": {
        "title": "Engineering practices",
        "subjects": [
            "Developers",
            "Reviewers",
            "Release managers",
            "The platform team",
            "Service owners",
            "Contributors",
            "Tech leads",
            "On-call developers",
        ],
        "rules": [
            "need at least {n} approving reviews before merging",
            "must keep test coverage above {n} percent",
            "deploy to production at most {n} times per day",
            "must answer review requests within {n} hours",
            "keep feature branches open for no longer than {n} days",
            "roll back a failed deployment within {n} minutes",
            "must document every service with at least {n} runbook pages",
            "freeze releases {n} days before a major holiday",
            "keep build times under {n} minutes",
            "upgrade dependencies with known vulnerabilities within {n} days",
            "must keep error budgets of {n} percent per quarter",
            "rotate the on-call schedule every {n} days",
        ],
        "conditions": [
            "according to the engineering handbook",
            "in the main repository",
            "for every customer-facing service",
            "as checked by the CI pipeline",
            "unless the change is an emergency fix",
            "as agreed in the architecture review",
            "during the release window",
            "for changes to shared libraries",
        ],
        "numbers": [1, 2, 3, 5, 7, 10, 15, 24, 80, 99],
        "queries": [
            "How many approving reviews are needed before merging?",
            "What is the required test coverage?",
            "How quickly must a failed deployment be rolled back?",
            "When are releases frozen?",
            "How fast must vulnerable dependencies be upgraded?",
            "How often does the on-call schedule rotate?",
        ],
    },
    "legal": {
        "title": "Contracts and compliance",
        "subjects": [
            "Contract owners",
            "The legal team",
            "Procurement",
            "Employees",
            "Data owners",
            "Managers",
            "Suppliers",
            "Sales directors",
        ],
        "rules": [
            "must have contracts above {n} thousand euros reviewed by legal",
            "keep signed contracts for {n} years",
            "must renew non-disclosure agreements every {n} years",
            "delete personal data {n} months after the purpose has ended",
            "answer data subject requests within {n} days",
            "complete compliance training every {n} months",
            "may accept gifts worth at most {n} euros",
            "must declare conflicts of interest within {n} days",
            "review supplier contracts every {n} months",
            "need {n} signatures on contracts with public bodies",
            "must report suspected bribery within {n} days",
            "archive invoices for {n} years",
        ],
        "conditions": [
            "under the data protection regulation",
            "according to the code of conduct",
            "as required by law",
            "in the contract management system",
            "unless the general counsel grants an exception",
            "for all business units",
            "through the compliance hotline",
            "as agreed with the auditors",
        ],
        "numbers": [2, 3, 6, 10, 12, 24, 30, 50, 100, 250],
        "queries": [
            "Which contracts must legal review?",
            "How long are signed contracts kept?",
            "How quickly must data subject requests be answered?",
            "What gifts may employees accept?",
            "How should suspected bribery be reported?",
            "When is personal data deleted?",
        ],
    },
    "sales": {
        "title": "Customers and sales",
        "subjects": [
            "Account managers",
            "Sales representatives",
            "Customer success managers",
            "Support agents",
            "Regional directors",
            "Partners",
            "Pre-sales engineers",
            "The billing team",
        ],
        "rules": [
            "may grant discounts of up to {n} percent without approval",
            "must log every customer meeting in the CRM within {n} days",
            "answer priority customer tickets within {n} hours",
            "offer a free trial of {n} days",
            "review key accounts every {n} weeks",
            "issue refunds within {n} days of a valid request",
            "send renewal reminders {n} days before a contract ends",
            "earn a commission of {n} percent on new business",
            "must qualify leads within {n} working days",
            "offer payment terms of {n} days to established customers",
            "hold a quarterly business review with accounts above {n} thousand euros",
            "escalate churn risks within {n} days",
        ],
        "conditions": [
            "as defined in the sales playbook",
            "for enterprise customers",
            "unless the regional director approves more",
            "according to the pricing policy",
            "in all regions",
            "for renewals and upsells",
            "as tracked in the CRM",
            "under the partner agreement",
        ],
        "numbers": [5, 7, 10, 14, 15, 20, 30, 45, 60, 90],
        "queries": [
            "What discount may account managers give without approval?",
            "How long is the free trial?",
            "How quickly are priority customer tickets answered?",
            "When are renewal reminders sent?",
            "What are the payment terms for established customers?",
            "How fast are refunds issued?",
        ],
    },
}
HISTORY = "history"  # the SQuAD Normans sentences
HISTORY_TITLE = "The Normans"
TOPIC_NAMES = [*TOPICS, HISTORY]


# ------------------------------------------------------------------ text


def _squad() -> dict[str, Any]:
    if not SQUAD.exists():
        return {}
    return json.loads(SQUAD.read_text(encoding="utf-8"))


def _squad_sentences() -> list[str]:
    sentences: list[str] = []
    for article in _squad().get("data", []):
        for paragraph in article.get("paragraphs", []):
            for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z])", paragraph["context"]):
                sentence = sentence.strip()
                if len(sentence.split()) >= 5:
                    sentences.append(sentence)
    return list(dict.fromkeys(sentences))


def _squad_questions() -> list[str]:
    questions = []
    for article in _squad().get("data", []):
        for paragraph in article.get("paragraphs", []):
            for qa in paragraph.get("qas", []):
                if not qa.get("is_impossible") and qa.get("question", "").strip():
                    questions.append(qa["question"].strip())
    return questions


@lru_cache(maxsize=1)
def sentence_pool() -> tuple[tuple[str, ...], dict[str, np.ndarray]]:
    """
    All distinct sentences (the texts that are embedded for real) and, per topic, their row numbers.

    :returns: ``(sentences, rows_by_topic)``.
    """
    rng = np.random.default_rng(SEED)
    sentences: list[str] = []
    rows: dict[str, np.ndarray] = {}
    for name, topic in TOPICS.items():
        combos = [(s, r, c) for s in range(len(topic["subjects"])) for r in range(len(topic["rules"]))
                  for c in range(len(topic["conditions"]))]  # fmt: skip
        picked = rng.choice(len(combos), size=min(SENTENCES_PER_TOPIC, len(combos)), replace=False)
        start = len(sentences)
        for number in sorted(picked):
            subject, rule, condition = combos[number]
            value = topic["numbers"][int(rng.integers(len(topic["numbers"])))]
            text = (
                f"{topic['subjects'][subject]} {topic['rules'][rule].format(n=value)} {topic['conditions'][condition]}."
            )
            sentences.append(text)
        rows[name] = np.arange(start, len(sentences))
    history = _squad_sentences()
    if history:
        start = len(sentences)
        sentences.extend(history)
        rows[HISTORY] = np.arange(start, len(sentences))
    return tuple(sentences), rows


def _document_plan(number: int, rows: dict[str, np.ndarray]) -> dict[str, Any]:
    """Document ``number`` of the stream: its tenant, topic, access meta and chunks (as sentence rows)."""
    rng = np.random.default_rng([SEED, number])
    topics = [name for name in TOPIC_NAMES if name in rows]
    # history (the SQuAD article) is rarer: it has fewer distinct sentences.
    weights = np.array([1.0 if name != HISTORY else 0.25 for name in topics])
    topic = topics[int(rng.choice(len(topics), p=weights / weights.sum()))]
    tenant_index = number % len(TENANTS)
    tenant = TENANTS[tenant_index]
    tag = "library" if topic == HISTORY else topic
    tags = [tag]
    roll = rng.random()
    if roll < 0.6:
        tags.append("all-staff")
    elif roll < 0.7:
        tags = [f"{tag}-restricted"]
    scope_roll = rng.random()
    scope, user_id, project_id = "tenant", None, None
    if scope_roll < 0.08:
        scope, user_id = "user", f"u-{tenant}-{int(rng.integers(USERS_PER_TENANT)):02d}"
    elif scope_roll < 0.15:
        scope, project_id = "project", f"p-{tenant}-{int(rng.integers(PROJECTS_PER_TENANT))}"
        user_id = f"u-{tenant}-{int(rng.integers(USERS_PER_TENANT)):02d}"  # project documents have an owner
    chunk_count = int(rng.integers(4, 13))
    per_chunk = (4, 7) if topic == HISTORY else (7, 10)
    topic_rows = rows[topic]
    chunks = [rng.choice(topic_rows, size=int(rng.integers(*per_chunk)), replace=False) for _ in range(chunk_count)]
    title = HISTORY_TITLE if topic == HISTORY else TOPICS[topic]["title"]
    return {
        "document_id": f"{tenant}-{topic}-{number:06d}",
        "document_name": f"{COMPANIES[tenant_index]}: {title} ({number})",
        "source_uri": f"https://intranet.{tenant}.example/{topic}/{number}",
        "tenant_id": tenant,
        "tags": tags,
        "scope": scope,
        "user_id": user_id,
        "project_id": project_id,
        "verified": bool(rng.random() < 0.3),
        "tainted": bool(rng.random() < 0.02),
        "section": title,
        "chunks": chunks,
    }


def _fit(sentences: tuple[str, ...], rows: np.ndarray) -> np.ndarray:
    """The leading sentences of a chunk that stay within ``MAX_CHUNK_WORDS`` (at least one)."""
    words = np.cumsum([len(sentences[row].split()) for row in rows])
    return rows[: max(1, int(np.searchsorted(words, MAX_CHUNK_WORDS, side="right")))]


def _chunk_text(sentences: tuple[str, ...], rows: np.ndarray) -> str:
    texts = [sentences[row] for row in rows]
    half = (len(texts) + 1) // 2  # two paragraphs, as chunks cut at paragraph boundaries look
    return " ".join(texts[:half]) + "\n\n" + " ".join(texts[half:])


def iter_documents(size: int, embeddings: np.ndarray | None):
    """
    Chunk Documents of the stream up to ``size`` chunks, in batches per source document,
    with the pipeline's meta (``ChunkMetadataEnricher``) and composed embeddings.
    """
    from haystack import Document

    from components.core.document_identity import content_hash
    from components.preprocessors.chunk_metadata_enricher import ChunkMetadataEnricher

    sentences, rows = sentence_pool()
    enricher = ChunkMetadataEnricher()
    produced, number = 0, 0
    while produced < size:
        plan = _document_plan(number, rows)
        number += 1
        chunk_rows = [_fit(sentences, row_set) for row_set in plan.pop("chunks")[: size - produced]]
        texts = [_chunk_text(sentences, row_set) for row_set in chunk_rows]
        section = plan.pop("section")
        source_meta = {
            **plan,
            "source_type": "md",
            "source_hash": content_hash("\n\n".join(texts)),
            "embedding_model": EMBEDDING_MODEL_NAME,
            "source_updated_at": None,
            "language": None,
            "artifact_id": None,
            "provenance_id": None,
            "page_number": None,
            "section": section,
        }
        chunks = enricher.run(documents=[Document(content=text, meta=dict(source_meta)) for text in texts])["documents"]
        if embeddings is not None:
            vectors = np.stack([embeddings[row_set].sum(axis=0) for row_set in chunk_rows])
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            chunks = [replace(chunk, embedding=vector.tolist()) for chunk, vector in zip(chunks, vectors, strict=True)]
        produced += len(chunks)
        yield chunks


# ------------------------------------------------------------------ queries


def query_set(count: int, seed: int = SEED + 7) -> list[dict[str, Any]]:
    """
    ``count`` request bodies for ``/search/run`` and ``/rag/run`` (without the endpoint's own options):
    a question on a topic and the identity of a user of a random tenant who holds that topic's tag
    (and ``all-staff``; sometimes one more topic). History questions are SQuAD's own.
    """
    rng = np.random.default_rng(seed)
    history_questions = _squad_questions()
    topics = list(TOPICS) + ([HISTORY] if history_questions else [])
    bodies = []
    for _ in range(count):
        topic = topics[int(rng.integers(len(topics)))]
        tenant = TENANTS[int(rng.integers(len(TENANTS)))]
        if topic == HISTORY:
            query, tag = history_questions[int(rng.integers(len(history_questions)))], "library"
        else:
            questions = TOPICS[topic]["queries"]
            query, tag = questions[int(rng.integers(len(questions)))], topic
        user_tags = [tag, "all-staff"]
        if rng.random() < 0.3:
            user_tags.append(list(TOPICS)[int(rng.integers(len(TOPICS)))])
        bodies.append(
            {
                "query": query,
                "tenant_id": tenant,
                "user_tags": sorted(set(user_tags)),
                "user_id": f"u-{tenant}-{int(rng.integers(USERS_PER_TENANT)):02d}",
                "project_id": f"p-{tenant}-{int(rng.integers(PROJECTS_PER_TENANT))}",
            }
        )
    return bodies


# ------------------------------------------------------------------ building and caching


# Meta that differs on every generation (the enricher's run time): outside the digest, or no run would reuse the cache.
VOLATILE_META = frozenset({"indexed_at"})


def _file_hash(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "missing"


def content_digest(documents: int = 20) -> str:
    """
    Digest of what the generator produces: every sentence, and the first ``documents`` documents' chunks
    (ids, text, meta but the wall-clock ``indexed_at``). Edits that change no output (comments, docs) keep the
    cache; bump ``GENERATOR_VERSION`` when something the digest cannot see changes (how embeddings are composed).
    """
    sentences, _rows = sentence_pool()
    digest = hashlib.sha256("\n".join(sentences).encode())
    for chunks in itertools.islice(iter_documents(10**12, None), documents):
        for chunk in chunks:
            meta = {key: value for key, value in chunk.meta.items() if key not in VOLATILE_META}
            digest.update(json.dumps([chunk.id, chunk.content, meta], sort_keys=True, default=str).encode())
    return digest.hexdigest()


def cache_key(size: int) -> str:
    """Hash of what determines a built corpus: generator version and output, size, store payload format, engine."""
    try:
        engine = metadata.version("qdrant-edge-py")
    except metadata.PackageNotFoundError:
        engine = "unknown"
    parts = [
        f"v{GENERATOR_VERSION}",
        str(size),
        content_digest(),
        _file_hash(REPO / "components" / "document_stores" / "qdrant_edge" / "converters.py"),
        engine,
    ]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def _load_embedder(threads: int):
    # The indexing pipeline's embedder (ONNX Runtime, float32: the sentence-transformers vectors).
    from components.embedders.onnx_document_embedder import OnnxDocumentEmbedder

    embedder = OnnxDocumentEmbedder(model="packaged:all-MiniLM-L6-v2", batch_size=64, threads=min(threads, 64))
    embedder.warm_up()
    return embedder


def _sentence_vector_indexer(target: Path, threads: int):
    # pipelines/indexing.yml's `sentence_vectors` step: the reader's sentences of every chunk, embedded for real
    # (each distinct text once: chunks reuse the pool's sentences) into the data dir's sentence vector file.
    from components.embedders.sentence_vector_indexer import SentenceVectorIndexer

    indexer = SentenceVectorIndexer(
        vector_cache_path=str(target / "sentence_vectors.sqlite"), batch_size=64, threads=min(threads, 64),
        cache_size=50_000,
    )  # fmt: skip
    indexer.warm_up()
    return indexer


def _embed(embedder, texts: list[str]) -> np.ndarray:
    from haystack import Document

    documents = embedder.run(documents=[Document(content=text) for text in texts])["documents"]
    return np.asarray([document.embedding for document in documents], dtype=np.float32)


def sentence_embeddings(threads: int | None = None) -> np.ndarray:
    """The real embeddings of :func:`sentence_pool`, cached as ``.npy`` (shared by every size)."""
    sentences, _rows = sentence_pool()
    digest = hashlib.sha256(("\n".join(sentences) + EMBEDDING_MODEL_NAME).encode()).hexdigest()[:16]
    path = CACHE_DIR / f"sentences-{digest}.npy"
    if path.exists():
        return np.load(path)
    started = time.perf_counter()
    embeddings = _embed(_load_embedder(threads or os.cpu_count() or 1), list(sentences))
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp.npy")
    np.save(temporary, embeddings)
    temporary.replace(path)
    print(
        f"bench: embedded {len(sentences)} sentences in {time.perf_counter() - started:.1f} s",
        file=sys.stderr,
        flush=True,
    )
    return embeddings


def _fidelity(documents: list, threads: int) -> dict[str, float]:
    """Cosine between each sampled chunk's composed embedding and the model's embedding of its text."""
    real = _embed(_load_embedder(threads), [document.content for document in documents])
    composed = np.asarray([document.embedding for document in documents], dtype=np.float32)
    cosines = (real * composed).sum(axis=1) / (np.linalg.norm(real, axis=1) * np.linalg.norm(composed, axis=1))
    return {
        "chunks": len(documents),
        "mean_cosine": round(float(cosines.mean()), 4),
        "min_cosine": round(float(cosines.min()), 4),
    }


def build_corpus(size: int, target: Path, threads: int | None = None) -> dict[str, Any]:
    """Write ``size`` chunks into ``target/qdrant`` through the store API; returns the manifest."""
    from haystack.document_stores.types import DuplicatePolicy

    from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore

    threads = threads or os.cpu_count() or 1
    started = time.perf_counter()
    embeddings = sentence_embeddings(threads)
    embed_s = time.perf_counter() - started
    store = QdrantEdgeDocumentStore(path=str(target / "qdrant"), embedding_dim=DIM)
    sentence_vectors = _sentence_vector_indexer(target, threads)
    sentence_s, sentences_indexed = 0.0, 0
    sample, batch, written, documents = [], [], 0, 0
    tenants: dict[str, int] = {}
    write_s = 0.0
    try:
        for chunks in iter_documents(size, embeddings):
            documents += 1
            batch.extend(chunks)
            if len(sample) < FIDELITY_SAMPLE and documents % 7 == 0:
                sample.append(chunks[0])
            for chunk in chunks:
                tenants[chunk.meta["tenant_id"]] = tenants.get(chunk.meta["tenant_id"], 0) + 1
            if len(batch) >= WRITE_BATCH:
                write_started = time.perf_counter()
                written += store.write_documents(batch, policy=DuplicatePolicy.OVERWRITE)
                write_s += time.perf_counter() - write_started
                sentence_started = time.perf_counter()
                sentences_indexed += sentence_vectors.run(documents=batch)["sentences_indexed"]
                sentence_s += time.perf_counter() - sentence_started
                batch = []
        if batch:
            write_started = time.perf_counter()
            written += store.write_documents(batch, policy=DuplicatePolicy.OVERWRITE)
            write_s += time.perf_counter() - write_started
            sentence_started = time.perf_counter()
            sentences_indexed += sentence_vectors.run(documents=batch)["sentences_indexed"]
            sentence_s += time.perf_counter() - sentence_started
        points = store.count_documents()
    finally:
        store.close()
    sentences, _rows = sentence_pool()
    manifest = {
        "generator_version": GENERATOR_VERSION,
        "size": size,
        "points": points,
        "documents": documents,
        "tenants": dict(sorted(tenants.items())),
        "distinct_sentences": len(sentences),
        "embedding_model": EMBEDDING_MODEL_NAME,
        "fidelity": _fidelity(sample, threads),
        "build_seconds": round(time.perf_counter() - started, 1),
        "sentence_embedding_seconds": round(embed_s, 1),
        "store_write_seconds": round(write_s, 1),
        "sentence_vectors": sentences_indexed,
        "sentence_vector_seconds": round(sentence_s, 1),
        "built_at": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    if points != size:
        raise RuntimeError(f"The corpus build wrote {points} points instead of {size}.")
    return manifest


def ensure_corpus(size: int, threads: int | None = None, rebuild: bool = False) -> tuple[Path, dict[str, Any]]:
    """
    The cached data dir for ``size`` chunks (built on first use).

    :returns: ``(data_dir, manifest)``; ``data_dir/qdrant`` holds the store, ``manifest["cached"]`` says
        whether it was reused.
    """
    final = CACHE_DIR / f"corpus-{size}-{cache_key(size)}"
    manifest_path = final / "manifest.json"
    if manifest_path.exists() and not rebuild:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        return final, {**manifest, "cached": True, "path": str(final)}
    for stale in CACHE_DIR.glob(f"corpus-{size}-*"):  # builds of older generator/store versions
        shutil.rmtree(stale, ignore_errors=True)
    building = final.with_name(final.name + ".building")
    building.mkdir(parents=True)
    print(f"bench: building the {size:,}-chunk corpus (cached for reruns) ...", file=sys.stderr, flush=True)
    manifest = build_corpus(size, building, threads)
    (building / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    building.rename(final)  # only a complete build is ever reused
    print(f"bench: built in {manifest['build_seconds']} s: {manifest}", file=sys.stderr, flush=True)
    return final, {**manifest, "cached": False, "path": str(final)}
