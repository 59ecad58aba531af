"""The evaluation datasets: Normans, the sample corpus and gold set, and the generic loaders."""

import importlib.util
import json
import re

import pypdf
import pytest

from components.services.corpus_manifest import SAMPLE_CORPUS_MANIFEST
from evaluation.datasets import (
    DatasetError,
    Requester,
    ci_subset,
    load_corpus,
    load_dataset,
    load_directory,
    load_manpages,
    load_normans,
    load_sample_aliases,
    load_sample_gold,
    shared_dir,
)

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def gold():
    return load_sample_gold()


class TestNormans:
    def test_counts_match_the_readme(self):
        normans = load_normans()
        assert (len(normans.documents), len(normans.answerable), len(normans.unanswerable)) == (39, 96, 112)
        assert normans.documents[0].document_id == "normans-p00" and normans.documents[-1].document_id == "normans-p38"
        assert normans.granularity == "one document per paragraph"

    def test_gold_spans_are_in_their_paragraph(self):
        normans = load_normans()
        for question in normans.answerable:
            paragraph = normans.document(question.gold_document_ids[0]).content
            assert all(span in paragraph for span in question.gold_answers)

    def test_shared_dir_override(self, monkeypatch, tmp_path):
        monkeypatch.setenv("SOURCEBOUND_SHARED_DIR", str(tmp_path))
        assert shared_dir() == tmp_path
        with pytest.raises(DatasetError, match="SOURCEBOUND_SHARED_DIR"):
            load_normans()

    def test_ci_subset_keeps_answerable_and_samples_the_rest(self):
        normans = load_normans()
        subset = ci_subset(normans, max_unanswerable=30)
        assert len(subset.answerable) == 96 and len(subset.unanswerable) == 30
        assert [q.id for q in ci_subset(normans, 30).questions] == [q.id for q in subset.questions]  # deterministic


class TestManpages:
    def test_counts_match_the_readme(self):
        manpages = load_manpages()
        assert (len(manpages.documents), len(manpages.answerable), len(manpages.unanswerable)) == (10, 60, 40)
        assert all(document.path.is_file() and document.path.suffix == ".txt" for document in manpages.documents)
        assert manpages.granularity == "one document per man page"

    def test_gold_spans_are_in_their_page(self):
        manpages = load_manpages()
        for question in manpages.answerable:
            page = " ".join(manpages.document(question.gold_document_ids[0]).path.read_text().lower().split())
            spans = [" ".join(span.lower().split()) for span in question.gold_answers]
            assert spans and any(span in page for span in spans), question.id

    def test_missing_file_names_the_setting(self, monkeypatch, tmp_path):
        monkeypatch.setenv("SOURCEBOUND_SHARED_DIR", str(tmp_path))
        with pytest.raises(DatasetError, match="SOURCEBOUND_SHARED_DIR"):
            load_manpages()


class TestSampleCorpus:
    def test_manifest_formats_and_size(self):
        documents, header = load_corpus(SAMPLE_CORPUS_MANIFEST)
        assert 12 <= len(documents) <= 20 and header["name"] == "sourcebound-sample"
        assert {document.source_type for document in documents} == {"md", "txt", "html", "pdf"}
        assert sum(document.source_type == "pdf" for document in documents) == 1
        assert {document.tenant_id for document in documents} == {"acme", "globex"}
        assert {document.scope for document in documents} == {"tenant", "user", "project"}

    def test_each_document_has_300_to_1500_words(self):
        documents, _ = load_corpus(SAMPLE_CORPUS_MANIFEST)
        for document in documents:
            if document.source_type == "pdf":
                text = " ".join(page.extract_text() for page in pypdf.PdfReader(document.path).pages)
            else:
                text = re.sub(r"<[^>]+>", " ", document.text())
            assert 300 <= len(text.split()) <= 1500, document.document_id

    def test_pdf_is_built_by_the_committed_script(self, tmp_path):
        # The corpus folder is data, not a package: load the script by path.
        spec = importlib.util.spec_from_file_location("build_pdf", SAMPLE_CORPUS_MANIFEST.parent / "build_pdf.py")
        build_pdf = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(build_pdf)
        rebuilt = build_pdf.build(tmp_path / "rebuilt.pdf")
        assert rebuilt.read_bytes() == build_pdf.OUTPUT.read_bytes()

    def test_directory_owners_exist(self):
        directory = load_directory()
        owned = [tag for tag in directory["tags"] if tag.get("owner_user_id")]
        unowned = [tag for tag in directory["tags"] if not tag.get("owner_user_id")]
        assert owned and unowned
        documents, _ = load_corpus(SAMPLE_CORPUS_MANIFEST)
        assert {tag for document in documents for tag in document.tags} <= {tag["name"] for tag in directory["tags"]}


class TestSampleGold:
    def test_size_and_kinds(self, gold):
        assert len(gold.questions) >= 40
        assert len(gold.unanswerable) >= 10
        assert all(
            question.gold_document_ids and question.reference_answer and question.gold_answers
            for question in gold.answerable
        )
        forbidden = [question for question in gold.questions if question.forbidden_document_ids]
        assert len(forbidden) >= 3 and all(question.category == "forbidden" for question in forbidden)

    def test_tag_only_questions_have_holder_and_non_holder(self, gold):
        restricted = {"acme-fy2025-budget", "globex-payroll-calendar"}
        holders = {doc for question in gold.answerable for doc in question.gold_document_ids} & restricted
        blocked = {doc for question in gold.unanswerable for doc in question.forbidden_document_ids} & restricted
        assert holders == blocked == restricted

    def test_gold_spans_occur_in_gold_documents(self, gold):
        for question in gold.answerable:
            texts = []
            for document_id in question.gold_document_ids:
                document = gold.document(document_id)
                if document.source_type == "pdf":
                    texts.append(" ".join(page.extract_text() for page in pypdf.PdfReader(document.path).pages))
                else:
                    texts.append(document.text())
            assert any(span in " ".join(" ".join(texts).split()) for span in question.gold_answers), question.id


class TestSampleAliases:
    def test_every_question_asks_through_an_alias_its_documents_do_not_use(self):
        from components.core.vocabulary import Vocabulary, compile_vocabulary, parse_glossary_csv, phrase_key

        aliases = load_sample_aliases()
        assert len(aliases.questions) >= 20 and not aliases.unanswerable
        assert set(aliases.glossaries) == {"acme", "globex"}
        vocabularies = {
            tenant: Vocabulary(compile_vocabulary(parse_glossary_csv(path.read_text(encoding="utf-8"))))
            for tenant, path in aliases.glossaries.items()
        }
        for question in aliases.questions:
            vocabulary = vocabularies[question.requester.tenant_id]
            phrases = vocabulary.phrases_in(question.question)
            assert phrases, question.id
            texts = []
            for document_id in question.gold_document_ids:
                document = aliases.document(document_id)
                texts.append(document.text())
                assert question.requester.tenant_id == document.tenant_id, question.id
            document_words = f" {phrase_key(' '.join(texts))} "
            assert any(f" {phrase} " not in document_words for phrase in phrases), question.id
            assert any(span in " ".join(" ".join(texts).split()) for span in question.gold_answers), question.id

    def test_a_missing_glossary_file_is_named(self, tmp_path):
        dataset = tmp_path / "aliases.yml"
        dataset.write_text(
            "name: x\ncorpus: corpus.jsonl\nglossaries: {acme: missing.csv}\nquestions: []\n", encoding="utf-8"
        )
        (tmp_path / "corpus.jsonl").write_text(
            json.dumps({"document_id": "d", "content": "text", "tenant_id": "acme", "tags": ["t"]}) + "\n",
            encoding="utf-8",
        )
        with pytest.raises(DatasetError, match="missing.csv"):
            load_dataset(dataset)


class TestRequester:
    def test_access_rule(self):
        requester = Requester("acme", ("hr",), user_id="u1", project_id="p1")
        assert requester.can_see({"tenant_id": "acme", "tags": ["hr", "x"], "scope": "tenant"})
        assert not requester.can_see({"tenant_id": "globex", "tags": ["hr"], "scope": "tenant"})
        assert not requester.can_see({"tenant_id": "acme", "tags": ["finance"], "scope": "tenant"})
        assert requester.can_see({"tenant_id": "acme", "tags": ["hr"], "scope": "user", "user_id": "u1"})
        assert not requester.can_see({"tenant_id": "acme", "tags": ["hr"], "scope": "user", "user_id": "u2"})
        assert requester.can_see(
            {"tenant_id": "acme", "tags": ["hr"], "scope": "project", "project_id": "p1", "user_id": "u1"}
        )
        # Project documents are private to their owner within the project.
        assert not requester.can_see(
            {"tenant_id": "acme", "tags": ["hr"], "scope": "project", "project_id": "p1", "user_id": "u2"}
        )
        assert not Requester("acme", ("hr",)).can_see(
            {"tenant_id": "acme", "tags": ["hr"], "scope": "project", "project_id": None}
        )

    def test_request_fields(self):
        assert Requester("acme", ("hr",), user_id="u1").request_fields() == {
            "tenant_id": "acme",
            "user_tags": ["hr"],
            "user_id": "u1",
        }


class TestGenericLoader:
    def test_jsonl_questions_with_jsonl_corpus(self, tmp_path):
        corpus = tmp_path / "corpus.jsonl"
        corpus.write_text(
            json.dumps(
                {"document_id": "kb-1", "content": "The office opens at 8:00.", "tenant_id": "t", "tags": ["all"]}
            )
            + "\n"
            + json.dumps({"document_id": "kb-2", "content": "Lunch is at noon.", "tenant_id": "t", "tags": "all,extra"})
            + "\n"
        )
        questions = tmp_path / "questions.jsonl"
        questions.write_text(
            "# comment lines are skipped\n"
            + json.dumps(
                {
                    "id": "q1",
                    "question": "When does the office open?",
                    "tenant_id": "t",
                    "user_tags": ["all"],
                    "answerable": True,
                    "gold_document_ids": ["kb-1"],
                    "gold_answers": ["8:00"],
                    "reference_answer": "At 8:00.",
                }
            )
            + "\n"
            + json.dumps(
                {
                    "id": "q2",
                    "question": "Is there a gym?",
                    "requester": {"tenant_id": "t", "user_tags": ["all"]},
                    "answerable": False,
                }
            )
            + "\n"
        )
        dataset = load_dataset(questions, corpus=corpus)
        assert dataset.name == "questions" and len(dataset.documents) == 2
        assert dataset.document("kb-2").tags == ("all", "extra")
        assert [question.category for question in dataset.questions] == ["answerable", "unanswerable"]

    def test_yaml_dataset_with_inline_documents(self, tmp_path):
        (tmp_path / "corpus.yml").write_text(
            "documents:\n  - {document_id: a-1, content: 'Alpha text.', tenant_id: t, tags: [x]}\n"
        )
        (tmp_path / "set.yml").write_text(
            "name: mine\ncorpus: corpus.yml\nrequesters:\n  r: {tenant_id: t, user_tags: [x]}\n"
            "questions:\n  - {id: q, question: 'Alpha?', requester: r, answerable: true, "
            "gold_document_ids: [a-1], gold_answers: '1,500'}\n"
        )
        dataset = load_dataset(tmp_path / "set.yml")
        assert dataset.name == "mine" and dataset.questions[0].gold_answers == ("1,500",)

    def test_squad_json(self, tmp_path):
        path = tmp_path / "squad.json"
        path.write_text(
            json.dumps(
                {
                    "data": [
                        {
                            "title": "Tiny Set",
                            "paragraphs": [
                                {
                                    "context": "Cats purr.",
                                    "qas": [
                                        {
                                            "id": "1",
                                            "question": "What do cats do?",
                                            "answers": [{"text": "purr", "answer_start": 5}],
                                            "is_impossible": False,
                                        }
                                    ],
                                }
                            ],
                        }
                    ]
                }
            )
        )
        dataset = load_dataset(path)
        assert dataset.documents[0].document_id == "tiny-set-p00" and dataset.questions[0].gold_answers == ("purr",)

    @pytest.mark.parametrize(
        ("question", "message"),
        [
            (
                {"id": "q", "question": "x", "answerable": "yes", "tenant_id": "t", "user_tags": ["x"]},
                "`answerable` must be true or false",
            ),
            (
                {"id": "q", "question": "x", "answerable": True, "tenant_id": "t", "user_tags": ["x"]},
                "needs gold_document_ids",
            ),
            (
                {
                    "id": "q",
                    "question": "x",
                    "answerable": True,
                    "tenant_id": "t",
                    "user_tags": ["x"],
                    "gold_document_ids": ["nope"],
                },
                "unknown document 'nope'",
            ),
            (
                {
                    "id": "q",
                    "question": "x",
                    "answerable": True,
                    "tenant_id": "other",
                    "user_tags": ["x"],
                    "gold_document_ids": ["a-1"],
                },
                "not visible to its requester",
            ),
            (
                {
                    "id": "q",
                    "question": "x",
                    "answerable": False,
                    "tenant_id": "t",
                    "user_tags": ["x"],
                    "forbidden_document_ids": ["a-1"],
                },
                "is visible to its requester",
            ),
            ({"id": "q", "question": "x", "answerable": False, "requester": "ghost"}, "unknown requester 'ghost'"),
            ({"id": "q", "question": "x", "answerable": False, "tenant_id": "t"}, "at least one user tag"),
        ],
    )
    def test_bad_questions_name_the_problem(self, tmp_path, question, message):
        (tmp_path / "corpus.yml").write_text(
            "documents:\n  - {document_id: a-1, content: 'Alpha.', tenant_id: t, tags: [x]}\n"
        )
        path = tmp_path / "questions.jsonl"
        path.write_text(json.dumps(question) + "\n")
        with pytest.raises(DatasetError, match=re.escape(message)):
            load_dataset(path, corpus=tmp_path / "corpus.yml")

    @pytest.mark.parametrize(
        ("entry", "message"),
        [
            ("{document_id: 'bad id', content: x, tenant_id: t, tags: [x]}", "must match [A-Za-z0-9-]+"),
            ("{document_id: a, content: x, tags: [x]}", "tenant_id and at least one tag"),
            ("{document_id: a, content: x, tenant_id: t, tags: [x], scope: user}", "needs user_id"),
            ("{document_id: a, path: missing.md, tenant_id: t, tags: [x]}", "does not exist"),
            ("{document_id: a, tenant_id: t, tags: [x]}", "exactly one of `path` and `content`"),
        ],
    )
    def test_bad_documents_name_the_problem(self, tmp_path, entry, message):
        (tmp_path / "corpus.yml").write_text(f"documents:\n  - {entry}\n")
        (tmp_path / "set.yml").write_text("corpus: corpus.yml\nquestions: []\n")
        with pytest.raises(DatasetError, match=re.escape(message)):
            load_dataset(tmp_path / "set.yml")

    def test_jsonl_without_corpus_is_refused(self, tmp_path):
        path = tmp_path / "q.jsonl"
        path.write_text("")
        with pytest.raises(DatasetError, match="needs a corpus"):
            load_dataset(path)
