"""
Evaluation datasets: a corpus to index plus questions, each asked by a requester.

Three sources, one model (:class:`EvalDataset`):

* :func:`load_normans` - the SQuAD 2.0 "Normans" article from the shared folder, one
  document per paragraph (``normans-p00`` ... ``normans-p38``).
* :func:`load_sample_gold` - our gold set ``evaluation/datasets/sample_gold.yml`` over
  the bundled sample corpus ``examples/sample_corpus/manifest.yml``.
* :func:`load_dataset` - any dataset in the documented format (``evaluation/README.md``):
  a YAML dataset file, a JSONL questions file plus a corpus, or a SQuAD 2.0 JSON file.

Usage:

```python
from evaluation.datasets import load_dataset, load_normans

normans = load_normans()
mine = load_dataset("my_questions.jsonl", corpus="my_corpus/manifest.yml")
print(len(mine.answerable), len(mine.unanswerable))
```
"""

import json
import os
import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.services.corpus_manifest import (
    DOCUMENT_ID_PATTERN,
    SAMPLE_DIRECTORY,
    SCOPES,
    SUPPORTED_SOURCE_SUFFIXES,
    CorpusDocument,
    CorpusManifestError,
    as_tuple,
    load_corpus,
    read_jsonl,
    read_yaml,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
EVALUATION_DIR = Path(__file__).resolve().parent
SAMPLE_GOLD = EVALUATION_DIR / "datasets" / "sample_gold.yml"
SAMPLE_ALIASES = EVALUATION_DIR / "datasets" / "sample_aliases.yml"
NORMANS_RELATIVE = Path("datasets") / "squad2-normans" / "normans.json"
MANPAGES_RELATIVE = Path("datasets") / "manpages-dev" / "qa.json"

# A malformed dataset, corpus or question file; the message names the entry. One class with the
# corpus manifest reader's, so callers catch one error whatever file was wrong.
DatasetError = CorpusManifestError


def shared_dir() -> Path:
    """The project's shared folder: ``$SOURCEBOUND_SHARED_DIR``, else ``../shared`` beside the repo root."""
    configured = os.environ.get("SOURCEBOUND_SHARED_DIR")
    return Path(configured) if configured else REPO_ROOT.parent / "shared"


@dataclass(frozen=True)
class Requester:
    """
    Who asks a question: the identity fields of a RAG or search request.

    :param tenant_id: The requester's tenant.
    :param user_tags: The tags the requester holds; at least one.
    :param user_id: Needed to see ``scope: user`` documents.
    :param project_id: Needed to see ``scope: project`` documents.
    """

    tenant_id: str
    user_tags: tuple[str, ...]
    user_id: str | None = None
    project_id: str | None = None

    def can_see(self, meta: Mapping[str, Any]) -> bool:
        """
        The access rule of the contract, evaluated on a document's metadata.

        The evaluation keeps its own copy of the rule on purpose: it is the oracle the
        service's filter is checked against, so it must not share the code under test.
        """
        if meta.get("tenant_id") != self.tenant_id:
            return False
        if not set(meta.get("tags") or ()) & set(self.user_tags):
            return False
        scope = meta.get("scope") or "tenant"
        if scope == "tenant":
            return True
        if scope == "user":
            return self.user_id is not None and meta.get("user_id") == self.user_id
        if scope == "project":
            # Private to the owner within the project (docs/contract.md "Access rule").
            return (
                self.project_id is not None and meta.get("project_id") == self.project_id
                and self.user_id is not None and meta.get("user_id") == self.user_id
            )  # fmt: skip
        return False

    def request_fields(self) -> dict[str, Any]:
        """The identity part of a ``/rag`` or ``/search`` request body."""
        fields: dict[str, Any] = {"tenant_id": self.tenant_id, "user_tags": list(self.user_tags)}
        if self.user_id:
            fields["user_id"] = self.user_id
        if self.project_id:
            fields["project_id"] = self.project_id
        return fields


@dataclass(frozen=True)
class EvalQuestion:
    """
    One evaluation question.

    :param answerable: Whether the corpus holds an answer visible to this requester.
    :param gold_document_ids: Documents that contain the answer (answerable questions).
    :param gold_answers: Short spans a correct answer contains (any one suffices).
    :param reference_answer: A full reference answer (for ragas' reference-based metrics).
    :param forbidden_document_ids: Documents that must never reach this requester.
    :param category: ``answerable``, ``unanswerable`` or ``forbidden`` (free-form for your own sets).
    :param group: The passage the question was written against (SQuAD: its paragraph; a man page), so
        cross-validation keeps a passage's questions on one side; empty: its gold document, else its own id.
    """

    id: str
    question: str
    requester: Requester
    answerable: bool
    gold_document_ids: tuple[str, ...] = ()
    gold_answers: tuple[str, ...] = ()
    reference_answer: str | None = None
    forbidden_document_ids: tuple[str, ...] = ()
    category: str = ""
    group: str = ""

    @property
    def passage(self) -> str:
        """The cross-validation group (see ``group``)."""
        return self.group or (self.gold_document_ids[0] if self.gold_document_ids else f"question:{self.id}")


@dataclass
class EvalDataset:
    """
    A corpus and the questions asked of it.

    :param granularity: How the corpus was split into documents, for the report
        (e.g. "one document per paragraph").
    :param directory: A tag-owner directory YAML loaded into the store's data dir (ROUTE targets).
    :param glossaries: Glossary CSVs by tenant, loaded into the data dir's glossary (query expansion); recall
        is then also measured without them.
    :param language: The ISO 639 code of the questions' language (a dataset file's ``language:``), for the
        report's per-language table; ``None`` for the English datasets.
    """

    name: str
    documents: list[CorpusDocument]
    questions: list[EvalQuestion]
    description: str = ""
    granularity: str = "one document per source file"
    source: str = ""
    directory: Path | None = None
    glossaries: dict[str, Path] = field(default_factory=dict)
    language: str | None = None
    _by_id: dict[str, CorpusDocument] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_id = {document.document_id: document for document in self.documents}
        validate(self)

    @property
    def answerable(self) -> list[EvalQuestion]:
        return [question for question in self.questions if question.answerable]

    @property
    def unanswerable(self) -> list[EvalQuestion]:
        return [question for question in self.questions if not question.answerable]

    def document(self, document_id: str) -> CorpusDocument | None:
        return self._by_id.get(document_id)

    def with_questions(self, questions: Iterable[EvalQuestion], suffix: str = "") -> "EvalDataset":
        """The same corpus with another list of questions (e.g. a CI-sized subset)."""
        return EvalDataset(
            name=self.name,
            documents=self.documents,
            questions=list(questions),
            description=self.description + suffix,
            granularity=self.granularity,
            source=self.source,
            directory=self.directory,
            glossaries=self.glossaries,
            language=self.language,
        )


def validate(dataset: EvalDataset) -> None:
    """
    Check a dataset's internal consistency.

    :raises DatasetError: On duplicate or malformed ids, missing files, scope fields, or
        questions that name unknown documents.
    """
    seen: set[str] = set()
    for document in dataset.documents:
        where = f"{dataset.name}: document {document.document_id!r}"
        if not DOCUMENT_ID_PATTERN.match(document.document_id):
            raise DatasetError(f"{where}: document_id must match [A-Za-z0-9-]+.")
        if document.document_id in seen:
            raise DatasetError(f"{where}: duplicate document_id.")
        seen.add(document.document_id)
        if not document.tenant_id or not document.tags:
            raise DatasetError(f"{where}: tenant_id and at least one tag are required.")
        if document.scope not in SCOPES:
            raise DatasetError(f"{where}: scope must be one of {SCOPES}, got {document.scope!r}.")
        if document.scope == "user" and not document.user_id:
            raise DatasetError(f"{where}: scope 'user' needs user_id.")
        if document.scope == "project" and not (document.project_id and document.user_id):
            raise DatasetError(f"{where}: scope 'project' needs project_id and user_id (the owner).")
        if (document.path is None) == (document.content is None):
            raise DatasetError(f"{where}: give exactly one of `path` and `content`.")
        if document.path is not None:
            if not document.path.is_file():
                raise DatasetError(f"{where}: file {document.path} does not exist.")
            if document.path.suffix.lower() not in SUPPORTED_SOURCE_SUFFIXES:
                raise DatasetError(
                    f"{where}: unsupported file type {document.path.suffix!r}; "
                    f"supported: {sorted(SUPPORTED_SOURCE_SUFFIXES)}."
                )
    question_ids: set[str] = set()
    for question in dataset.questions:
        where = f"{dataset.name}: question {question.id!r}"
        if question.id in question_ids:
            raise DatasetError(f"{where}: duplicate question id.")
        question_ids.add(question.id)
        if not question.question.strip():
            raise DatasetError(f"{where}: empty question text.")
        if not question.requester.user_tags:
            raise DatasetError(f"{where}: the requester needs at least one user tag.")
        for document_id in (*question.gold_document_ids, *question.forbidden_document_ids):
            if document_id not in seen:
                raise DatasetError(f"{where}: names unknown document {document_id!r}.")
        if question.answerable and not question.gold_document_ids:
            raise DatasetError(f"{where}: an answerable question needs gold_document_ids.")
        for document_id in question.gold_document_ids:
            if question.answerable and not question.requester.can_see(dataset.document(document_id).access_meta):
                raise DatasetError(f"{where}: gold document {document_id!r} is not visible to its requester.")
        for document_id in question.forbidden_document_ids:
            if question.requester.can_see(dataset.document(document_id).access_meta):
                raise DatasetError(
                    f"{where}: forbidden document {document_id!r} is visible to its requester; "
                    "fix the requester or the list."
                )


def parse_requester(value: Any, where: str) -> Requester:
    """Build a :class:`Requester` from a mapping with tenant_id, user_tags, user_id?, project_id?."""
    if not isinstance(value, Mapping):
        raise DatasetError(f"{where}: requester must be a mapping with tenant_id and user_tags.")
    if not value.get("tenant_id"):
        raise DatasetError(f"{where}: requester needs tenant_id.")
    return Requester(
        tenant_id=str(value["tenant_id"]),
        user_tags=as_tuple(value.get("user_tags"), where, "user_tags"),
        user_id=value.get("user_id"),
        project_id=value.get("project_id"),
    )


def parse_question(record: Mapping[str, Any], requesters: Mapping[str, Requester], where: str) -> EvalQuestion:
    """
    Build an :class:`EvalQuestion`; ``requester`` is a key of ``requesters``, a mapping, or absent (fields inline).
    """
    for required in ("id", "question"):
        if required not in record:
            raise DatasetError(f"{where}: `{required}` is required.")
    where = f"{where} ({record['id']})"
    reference = record.get("requester")
    if isinstance(reference, str):
        if reference not in requesters:
            raise DatasetError(f"{where}: unknown requester {reference!r}; known: {sorted(requesters)}.")
        requester = requesters[reference]
    else:
        requester = parse_requester(reference if reference is not None else record, where)
    answerable = record.get("answerable")
    if not isinstance(answerable, bool):
        raise DatasetError(f"{where}: `answerable` must be true or false.")
    forbidden = as_tuple(record.get("forbidden_document_ids"), where, "forbidden_document_ids")
    category = record.get("category") or (
        "answerable" if answerable else ("forbidden" if forbidden else "unanswerable")
    )
    return EvalQuestion(
        id=str(record["id"]),
        question=str(record["question"]),
        requester=requester,
        answerable=answerable,
        gold_document_ids=as_tuple(record.get("gold_document_ids"), where, "gold_document_ids"),
        gold_answers=as_tuple(record.get("gold_answers"), where, "gold_answers", comma_separated=False),
        reference_answer=record.get("reference_answer"),
        forbidden_document_ids=forbidden,
        category=str(category),
        group=str(record.get("group") or ""),
    )


# ----------------------------------------------------------------------------- loaders


def load_directory(path: str | os.PathLike = SAMPLE_DIRECTORY) -> dict[str, list[dict[str, Any]]]:
    """Read a tag-owner directory YAML (``users: [{id, email}]``, ``tags: [{tenant_id, name, owner_user_id?}]``)."""
    data = read_yaml(Path(path))
    if (
        not isinstance(data, Mapping)
        or not isinstance(data.get("users"), list)
        or not isinstance(data.get("tags"), list)
    ):
        raise DatasetError(f"{path}: a directory needs `users:` and `tags:` lists.")
    user_ids = {user["id"] for user in data["users"]}
    for tag in data["tags"]:
        if not tag.get("tenant_id"):
            raise DatasetError(f"{path}: tag {tag.get('name')!r} needs a `tenant_id` (tags are per tenant).")
        owner = tag.get("owner_user_id")
        if owner is not None and owner not in user_ids:
            raise DatasetError(f"{path}: tag {tag.get('name')!r} names unknown owner {owner!r}.")
    return {"users": list(data["users"]), "tags": list(data["tags"])}


def read_shared_json(path: Path) -> Any:
    """A JSON dataset file; a missing one names the setting that points at the shared folder."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise DatasetError(
            f"{path} does not exist; set SOURCEBOUND_SHARED_DIR to the folder that holds `datasets/`."
        ) from error


def load_squad(
    path: str | os.PathLike,
    name: str | None = None,
    id_prefix: str | None = None,
    tenant_id: str = "squad",
    tags: tuple[str, ...] = ("squad",),
) -> EvalDataset:
    """
    Read a SQuAD 2.0 file: one document per paragraph, one question per ``qas`` entry.

    Answerable questions get their paragraph as gold document and their ``answers[].text``
    (deduplicated, in order) as gold spans; ``is_impossible`` questions are unanswerable.
    Every question is asked by one requester who sees the whole corpus.

    :param id_prefix: Prefix of document ids (``{prefix}-p00``); defaults to the first article's title.
    """
    path = Path(path)
    data = read_shared_json(path)
    articles = data.get("data") if isinstance(data, Mapping) else None
    if not articles:
        raise DatasetError(f"{path}: not a SQuAD file (no `data` list).")
    title = str(articles[0].get("title") or path.stem)
    prefix = id_prefix or re.sub(r"[^A-Za-z0-9-]+", "-", title).strip("-").lower()
    requester = Requester(tenant_id=tenant_id, user_tags=tuple(tags))
    documents: list[CorpusDocument] = []
    questions: list[EvalQuestion] = []
    paragraph_number = 0
    for article in articles:
        for paragraph in article["paragraphs"]:
            document_id = f"{prefix}-p{paragraph_number:02d}"
            paragraph_number += 1
            documents.append(
                CorpusDocument(
                    document_id=document_id,
                    tenant_id=tenant_id,
                    tags=tuple(tags),
                    document_name=f"{article.get('title', title)} (paragraph {paragraph_number})",
                    content=paragraph["context"],
                )
            )
            for qa in paragraph["qas"]:
                impossible = bool(qa.get("is_impossible"))
                spans = tuple(dict.fromkeys(answer["text"] for answer in qa.get("answers", [])))
                questions.append(
                    EvalQuestion(
                        id=str(qa["id"]),
                        question=qa["question"],
                        requester=requester,
                        answerable=not impossible,
                        gold_document_ids=() if impossible else (document_id,),
                        gold_answers=spans,
                        reference_answer=spans[0] if spans else None,
                        category="unanswerable" if impossible else "answerable",
                        group=document_id,
                    )
                )
    return EvalDataset(
        name=name or f"squad2-{prefix}",
        documents=documents,
        questions=questions,
        description=f"SQuAD 2.0 '{title}' ({path.name})",
        granularity="one document per paragraph",
        source=str(path),
    )


def load_normans(path: str | os.PathLike | None = None) -> EvalDataset:
    """The SQuAD 2.0 Normans article (39 paragraphs, 96 answerable, 112 unanswerable)."""
    return load_squad(
        path or shared_dir() / NORMANS_RELATIVE,
        name="normans",
        id_prefix="normans",
        tenant_id="squad",
        tags=("normans",),
    )


def load_manpages(path: str | os.PathLike | None = None) -> EvalDataset:
    """
    The manpages-dev set: 10 Debian man pages (one document per page) and 100 questions
    (60 answerable with exact short spans, 40 unanswerable), asked by one requester who sees
    every page. The reader's reference-manual genre: option names, defaults, paths.
    """
    path = Path(path) if path else shared_dir() / MANPAGES_RELATIVE
    data = read_shared_json(path)
    if not isinstance(data, Mapping) or not isinstance(data.get("docs"), list):
        raise DatasetError(f"{path}: not a manpages-dev file (no `docs` list).")
    tenant_id, tags = "ops", ("manuals",)
    requester = Requester(tenant_id=tenant_id, user_tags=tags)
    documents = [
        CorpusDocument(
            document_id=str(doc["id"]),
            tenant_id=tenant_id,
            tags=tags,
            document_name=str(doc["name"]),
            path=path.parent / "docs" / str(doc["file"]),
        )
        for doc in data["docs"]
    ]
    questions = [
        EvalQuestion(
            id=str(record["id"]),
            question=str(record["question"]),
            requester=requester,
            answerable=not record.get("impossible"),
            gold_document_ids=(str(record["doc"]),) if not record.get("impossible") else (),
            gold_answers=tuple(record.get("answers") or ()),
            reference_answer=(record.get("answers") or [None])[0],
            category="unanswerable" if record.get("impossible") else "answerable",
            group=str(record["doc"]) if record.get("doc") else "",
        )
        for record in data.get("questions", [])
    ]
    return EvalDataset(
        name="manpages-dev",
        documents=documents,
        questions=questions,
        description=str(data.get("source") or "Debian man pages"),
        granularity="one document per man page",
        source=str(path),
    )


def load_dataset(
    path: str | os.PathLike, corpus: str | os.PathLike | None = None, name: str | None = None
) -> EvalDataset:
    """
    Load a dataset in the documented format.

    * ``.yml``/``.yaml``: a dataset file with ``corpus`` (relative path), optional
      ``requesters`` and ``questions``.
    * ``.jsonl``: one question per line; ``corpus`` must be given.
    * ``.json``: a SQuAD 2.0 file (its paragraphs are the corpus).

    :param corpus: Corpus file for a JSONL questions file; overrides a YAML file's ``corpus``.
    """
    path = Path(path).resolve()
    if path.suffix == ".json":
        return load_squad(path, name=name)
    requesters: dict[str, Requester] = {}
    header: dict[str, Any] = {}
    if path.suffix == ".jsonl":
        records = read_jsonl(path)
        if corpus is None:
            raise DatasetError(f"{path}: a JSONL questions file needs a corpus (`--corpus manifest.yml`).")
    else:
        data = read_yaml(path)
        if not isinstance(data, Mapping) or not isinstance(data.get("questions"), list):
            raise DatasetError(f"{path}: a dataset file needs a `questions:` list.")
        header = data
        records = data["questions"]
        requesters = {
            key: parse_requester(value, f"{path.name} requester {key!r}")
            for key, value in (data.get("requesters") or {}).items()
        }
        if corpus is None:
            if not data.get("corpus"):
                raise DatasetError(f"{path}: name the corpus file with `corpus:` (relative to the dataset file).")
            corpus = path.parent / data["corpus"]
    documents, corpus_header = load_corpus(corpus)
    directory = (path.parent / header["directory"]).resolve() if header.get("directory") else None
    if directory is not None and not directory.is_file():
        raise DatasetError(f"{path}: directory file {directory} does not exist.")
    glossaries = {}
    for tenant_id, relative in (header.get("glossaries") or {}).items():
        glossary = (path.parent / str(relative)).resolve()
        if not glossary.is_file():
            raise DatasetError(f"{path}: glossary file {glossary} (tenant {tenant_id!r}) does not exist.")
        glossaries[str(tenant_id)] = glossary
    questions = [
        parse_question(record, requesters, f"{path.name} question {index}") for index, record in enumerate(records)
    ]
    return EvalDataset(
        name=name or header.get("name") or path.stem,
        documents=documents,
        questions=questions,
        description=str(header.get("description") or corpus_header.get("description") or ""),
        granularity=str(header.get("granularity") or "one document per source file"),
        source=str(path),
        directory=directory,
        glossaries=glossaries,
        language=str(header["language"]) if header.get("language") else None,
    )


def load_sample_gold(path: str | os.PathLike = SAMPLE_GOLD) -> EvalDataset:
    """Our gold set over the bundled sample corpus."""
    return load_dataset(path)


def load_sample_aliases(path: str | os.PathLike = SAMPLE_ALIASES) -> EvalDataset:
    """Questions over the bundled sample corpus that use glossary aliases the documents do not."""
    return load_dataset(path)


def ci_subset(dataset: EvalDataset, max_unanswerable: int, seed: int = 0) -> EvalDataset:
    """All answerable questions plus a seeded sample of unanswerable ones, keeping every forbidden one."""
    forbidden = [question for question in dataset.unanswerable if question.forbidden_document_ids]
    others = [question for question in dataset.unanswerable if not question.forbidden_document_ids]
    sampled = others if max_unanswerable >= len(others) else random.Random(seed).sample(others, max_unanswerable)
    keep = {question.id for question in [*dataset.answerable, *forbidden, *sampled]}
    subset = [question for question in dataset.questions if question.id in keep]
    return dataset.with_questions(
        subset,
        suffix=(
            f" (CI subset: all answerable, {len(sampled) + len(forbidden)} of {len(dataset.unanswerable)} unanswerable)"
        ),
    )
