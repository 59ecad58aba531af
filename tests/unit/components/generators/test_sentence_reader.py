"""SentenceReader: semantic + lexical sentence selection and the decline decision (docs/reader.md).

The unit tests use hand-made vectors; the integration tests run the served reading step of
``pipelines/query.yml`` (splitter -> sentence embedder -> reader, with the real embedding model and the
YAML's parameters) on a hand-written test set, a few cases per failure mode: negation, numbers and
option defaults, lists, answers that span two sentences, and questions the context does not answer.
"""

import json
from pathlib import Path

import pytest
from haystack import Document, Pipeline

from components.core.abstention_model import AbstentionModel, AbstentionModelError
from components.core.errors import ModelUnavailableError
from components.core.models import INSUFFICIENT_INFORMATION_ANSWER
from components.generators.sentence_reader import (
    DEFAULT_ABSTENTION_MODEL,
    SentenceReader,
    answer_type,
    contains_exact,
    exact_terms,
    has_answer_token,
    model_path,
)
from components.services.pipeline_loader import ALLOWED_MODULES, load_pipeline_dict


def _model_file(tmp_path: Path, weights: dict[str, float], mean: float = 0.0, threshold: float = 0.5) -> str:
    """A model file over every reader feature that weighs only ``weights`` (unit scale, ``mean`` for each)."""
    features = list(AbstentionModel.load(model_path(DEFAULT_ABSTENTION_MODEL)).features)
    data = {
        "format": "sourcebound-abstention/1",
        "version": "test",
        "features": features,
        "mean": [mean] * len(features),
        "scale": [1.0] * len(features),
        "coefficients": [weights.get(name, 0.0) for name in features],
        "intercept": 0.0,
        "threshold": threshold,
    }
    path = tmp_path / "model.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def _sentence(text: str, vector: list[float], source_id: str = "doc:0", rank: int = 0, position: int = 0) -> Document:
    return Document(
        content=text, embedding=vector, meta={"source_id": source_id, "chunk_rank": rank, "position": position}
    )


def _entry(texts: list[str], vectors: list[list[float]], source_id: str = "man:3") -> list[Document]:
    """One reference entry: the sentences of one block of one chunk."""
    return [
        Document(
            content=text,
            embedding=vector,
            meta={"source_id": source_id, "chunk_rank": 0, "position": index, "block": 0, "block_position": index},
        )
        for index, (text, vector) in enumerate(zip(texts, vectors, strict=True))
    ]


def _sentences() -> list[Document]:
    return [
        _sentence("Full-time employees receive 27 days of paid annual leave.", [1.0, 0.0, 0.0], "hr:2", 0, 0),
        _sentence("Up to 5 unused days may be carried over.", [0.6, 0.8, 0.0], "hr:2", 0, 1),
        _sentence("Economy class is required for flights under six hours.", [0.0, 0.0, 1.0], "travel:1", 1, 0),
    ]


@pytest.mark.unit
class TestSentenceReader:
    def test_init(self):
        reader = SentenceReader()
        assert reader.max_sentences == 3 and reader.insufficient_answer == INSUFFICIENT_INFORMATION_ANSWER
        assert reader.threshold == AbstentionModel.load(model_path(DEFAULT_ABSTENTION_MODEL)).threshold
        for bad in (
            {"lexical_weight": -1},
            {"support_at_threshold": 1.0},
            {"max_sentences": 0},
            {"max_answer_chars": 10},
            {"decision_threshold": 1.5},
            {"decision_threshold": "high"},
            {"model_name": ""},
            {"abstention_model": ""},
        ):
            with pytest.raises(ValueError):
                SentenceReader(**bad)

    def test_init_names_a_missing_model_file(self, tmp_path):
        with pytest.raises(AbstentionModelError, match="fit_abstention"):
            SentenceReader(abstention_model=str(tmp_path / "nowhere.json"))

    def test_to_dict(self):
        params = SentenceReader(decision_threshold=0.6).to_dict()["init_parameters"]
        assert params["decision_threshold"] == 0.6 and params["model_name"] == "extractive"
        assert params["abstention_model"] == DEFAULT_ABSTENTION_MODEL
        assert set(params) >= {"lexical_weight", "exact_weight", "answer_type_weight", "second_sentence_gap"}

    def test_from_dict(self):
        reader = SentenceReader.from_dict(SentenceReader(second_sentence_gap=0.1, max_sentences=3).to_dict())
        assert (reader.second_sentence_gap, reader.max_sentences) == (0.1, 3)

    def test_run_answers_with_the_best_sentence_and_its_source_id(self):
        out = SentenceReader(second_sentence_gap=0.0).run(
            query="How many days of annual leave do employees get?",
            query_embedding=[1.0, 0.0, 0.0],
            sentences=_sentences(),
        )
        assert out["answer"] == "Full-time employees receive 27 days of paid annual leave. [SourceId: hr:2]"
        assert out["model_used"] == "extractive" and out["generation_time_ms"] >= 0
        evidence = out["evidence"]
        assert evidence["answered"] is True and evidence["features"]["similarity"] == pytest.approx(1.0)
        assert evidence["support"] >= 0.8 and evidence["sentences"] == 3

    def test_run_second_sentence_in_document_order(self):
        # The carry-over sentence scores close to the best one: both, in the order they stand in the chunk.
        query = "annual leave days carried over"
        out = SentenceReader(second_sentence_gap=0.5).run(
            query=query, query_embedding=[0.8, 0.6, 0.0], sentences=_sentences()[::-1]
        )
        assert out["answer"] == (
            "Full-time employees receive 27 days of paid annual leave. [SourceId: hr:2] "
            "Up to 5 unused days may be carried over. [SourceId: hr:2]"
        )
        assert (
            SentenceReader(second_sentence_gap=0.5, max_answer_chars=80)
            .run(query=query, query_embedding=[0.8, 0.6, 0.0], sentences=_sentences())["answer"]
            .count("[SourceId:")
            == 1
        )

    def test_run_declines_below_the_decision_threshold(self, tmp_path):
        # A model that reads only similarity: p = sigmoid(10 * (similarity - 0.5)), answer at p >= 0.5.
        reader = SentenceReader(abstention_model=_model_file(tmp_path, {"similarity": 10.0}, mean=0.5))
        out = reader.run(query="What is the parking fee?", query_embedding=[0.0, -1.0, 0.0], sentences=_sentences())
        assert out["answer"] == INSUFFICIENT_INFORMATION_ANSWER
        evidence = out["evidence"]
        assert evidence["answered"] is False and evidence["support"] < reader.support_at_threshold
        assert evidence["probability"] < evidence["threshold"] == 0.5
        answered = reader.run(query="annual leave days", query_embedding=[1.0, 0.0, 0.0], sentences=_sentences())
        assert answered["evidence"]["answered"] is True and answered["evidence"]["support"] >= 0.8
        empty = reader.run(query="annual leave", query_embedding=[1.0, 0.0, 0.0], sentences=[])
        assert empty["answer"] == INSUFFICIENT_INFORMATION_ANSWER and empty["evidence"]["support"] == 0.0

    def test_decision_threshold_overrides_the_models(self, tmp_path):
        path = _model_file(tmp_path, {"similarity": 10.0}, mean=0.5)
        query, vector = "annual leave days", [1.0, 0.0, 0.0]
        assert SentenceReader(abstention_model=path).run(query=query, query_embedding=vector, sentences=_sentences())[
            "evidence"
        ]["answered"]
        strict = SentenceReader(abstention_model=path, decision_threshold=0.999999)
        assert strict.threshold == 0.999999
        assert not strict.run(query=query, query_embedding=vector, sentences=_sentences())["evidence"]["answered"]

    def test_run_support_is_monotone_in_the_probability(self):
        reader = SentenceReader(decision_threshold=0.4, support_at_threshold=0.8)
        values = [reader.support(p) for p in (0.0, 0.1, 0.39, 0.4, 0.41, 0.7, 1.0)]
        assert values == sorted(values) and values[0] == 0.0 and values[-1] == 1.0
        assert reader.support(0.4) == pytest.approx(0.8) and reader.support(0.3999) < 0.8

    def test_evidence_features(self):
        sentences = [
            _sentence("The --retries option sets how often a download is retried.", [1.0, 0.0, 0.0], "dl:0"),
            _sentence("Downloads resume after a network failure.", [0.6, 0.8, 0.0], "dl:1", 1),
        ]
        reader = SentenceReader()
        known = reader.run(query="What does --retries set?", query_embedding=[1.0, 0.0, 0.0], sentences=sentences)
        unknown = reader.run(query="What does --frobnicate set?", query_embedding=[1.0, 0.0, 0.0], sentences=sentences)
        k, u = known["evidence"]["features"], unknown["evidence"]["features"]
        assert set(k) == set(AbstentionModel.load(model_path(DEFAULT_ABSTENTION_MODEL)).features)
        assert k["missing_exact"] == 0.0 and u["missing_exact"] == 1.0
        assert k["missing_exact_in_answer"] == 0.0 and u["missing_exact_in_answer"] == 1.0
        assert k["similarity"] == pytest.approx(1.0) and k["retrieval"] == 0.0  # no chunk_score in these sentences
        assert k["agreement"] == 1.0  # the nearest sentence also holds most of the query's terms
        assert known["evidence"]["probability"] > unknown["evidence"]["probability"]

    def test_missing_terms_count_the_chunk_header_as_the_chunks_own(self):
        # "dpkg" is only in the chunk's contextual header (its document's name), not in its text.
        sentence = _sentence("--force-all turns on every force option.", [1.0, 0.0, 0.0], "dpkg-1:4")
        with_header = Document(
            content=sentence.content, embedding=sentence.embedding, meta={**sentence.meta, "context_header": "dpkg(1)"}
        )
        reader = SentenceReader()
        query = "What does --force-all do in dpkg?"
        plain = reader.run(query=query, query_embedding=[1.0, 0.0, 0.0], sentences=[sentence])["evidence"]["features"]
        headed = reader.run(query=query, query_embedding=[1.0, 0.0, 0.0], sentences=[with_header])["evidence"]
        assert headed["features"]["missing_in_chunk"] < plain["missing_in_chunk"]

    def test_run_is_deterministic(self):
        reader = SentenceReader()
        answers = {
            reader.run(query="leave days", query_embedding=[0.9, 0.4, 0.1], sentences=_sentences())["answer"]
            for _ in range(3)
        }
        assert len(answers) == 1

    def test_run_refuses_llm_models(self):
        reader = SentenceReader()
        assert reader.run(query="leave", sentences=_sentences(), model="extractive")["model_used"] == "extractive"
        with pytest.raises(ModelUnavailableError, match="query_ollama.yml"):
            reader.run(query="leave", sentences=_sentences(), model="llama3.2")

    def test_answer_type(self):
        assert answer_type("How long is the user service kept after logout, by default?") == "quantity"
        assert answer_type("Which glibc release first offered the merge action?") == "quantity"
        assert answer_type("Which resolver option forces DNS lookups over TCP?") == "code"
        assert answer_type("What prefix should custom keys carry?") == "code"
        assert answer_type("Where should operator keyrings be kept?") == "place"
        assert answer_type("What is the default size cap on the runtime directory?") == "value"
        # "when" inside a question is a condition, not a question about time.
        assert answer_type("What does fsck fall back to when it can't work out the type?") is None
        assert answer_type("When was the Atlas service launched?") == "quantity"
        assert answer_type("Why are contractors not eligible?") is None

    def test_has_answer_token_ignores_tokens_the_question_holds(self):
        assert has_answer_token("Defaults to 30s.", "quantity", "How long by default?")
        assert not has_answer_token("Up to 30 pairs.", "quantity", "Are 30 pairs allowed, how many?")
        assert has_answer_token("use-vc (since glibc 2.14) Sets RES_USEVC.", "code", "Which option forces TCP?")
        assert not has_answer_token("This option forces the use of TCP.", "code", "Which option forces TCP?")
        assert has_answer_token("Keep them in /etc/apt/keyrings.", "place", "Where are keyrings kept?")
        assert not has_answer_token("Defaults to 30s.", None, "Why?")
        assert has_answer_token('Defaults to "no".', "value", "What is the default?")
        # A bare acronym is not a code-like token: "DNS" does not answer "which option".
        assert not has_answer_token("Some DNS servers cannot handle this.", "code", "Which option helps?")

    def test_run_typed_sentence_wins_a_near_tie(self):
        query = "How many pairs can a sortlist line hold?"
        sentences = [
            _sentence("A sortlist line is specified by address and netmask pairs.", [1.0, 0.0], "r:1", 0, 0),
            _sentence("Up to 10 pairs may be specified on a sortlist line.", [0.97, 0.243], "r:1", 0, 1),
        ]
        untyped = SentenceReader(answer_type_weight=0.0, max_sentences=1).run(
            query=query, query_embedding=[1.0, 0.0], sentences=sentences
        )
        typed = SentenceReader(answer_type_weight=0.3, max_sentences=1).run(
            query=query, query_embedding=[1.0, 0.0], sentences=sentences
        )
        assert "10 pairs" not in untyped["answer"] and "Up to 10 pairs" in typed["answer"]

    def test_run_completes_a_value_from_the_same_entry(self):
        # The entry's description matches the question; its value is a later, short sentence of the same block.
        sentences = _entry(
            [
                "UserStopDelaySec= Specifies how long to keep the per-user service around after logout.",
                "If set to infinity the service is never stopped.",
                "Defaults to 10s.",
            ],
            [[1.0, 0.0], [0.6, 0.8], [0.1, 0.995]],
        ) + [_sentence("KillUserProcesses= Takes a boolean argument.", [0.0, 1.0], "man:9", 1, 0)]
        out = SentenceReader(max_sentences=1).run(
            query="How long is the per-user service kept after logout, by default?",
            query_embedding=[1.0, 0.0],
            sentences=sentences,
        )
        assert (
            out["answer"].startswith("UserStopDelaySec= Specifies")
            and "Defaults to 10s. [SourceId: man:3]" in (out["answer"])
        )
        assert "infinity" not in out["answer"] and "KillUserProcesses" not in out["answer"]

    def test_run_completes_an_option_name_from_its_entry_head(self):
        sentences = _entry(
            ["use-vc (since glibc 2.14) Sets RES_USEVC in _res.options.", "This option forces the use of TCP."],
            [[0.3, 0.954], [1.0, 0.0]],
        )
        out = SentenceReader(max_sentences=1).run(
            query="Which resolver option forces lookups over TCP?", query_embedding=[1.0, 0.0], sentences=sentences
        )
        assert out["answer"].index("use-vc") < out["answer"].index("This option forces")
        # Without answer types nothing is completed.
        plain = SentenceReader(max_sentences=1, answer_type_weight=0.0).run(
            query="Which resolver option forces lookups over TCP?", query_embedding=[1.0, 0.0], sentences=sentences
        )
        assert "use-vc" not in plain["answer"]

    def test_exact_terms(self):
        assert exact_terms("What is the default of --retries and -x in wget 1.21?") == ["--retries", "-x", "1.21"]
        assert exact_terms('Where did Rollo sign the "Treaty of Saint-Clair"?') == ["Treaty of Saint-Clair", "Rollo"]
        assert exact_terms("How do I set max_size in os.path?") == ["max_size", "os.path"]
        assert exact_terms("what is the refund policy?") == []
        # A clarified query folds the previous question in: sentence-initial words and stopwords are not names.
        assert exact_terms("How much leave do employees get? And what about part-time staff in Berlin?") == ["Berlin"]
        assert contains_exact("Use --retries=3.", "--retries") and not contains_exact("Use --retries-max.", "--retries")
        assert contains_exact("It took 11 days.", "11") and not contains_exact("It took 110 days.", "11")
        assert not contains_exact("It took 11.5 days.", "11")


# --------------------------------------------------------------------------- the served reading step


@pytest.fixture(scope="module")
def reading_step(tmp_path_factory) -> Pipeline:
    """The query YAML's embedder, sentence splitter, sentence embedder and reader, wired as in query.yml."""
    components = load_pipeline_dict("query", env={"SOURCEBOUND_DATA_DIR": str(tmp_path_factory.mktemp("reader"))})[
        "components"
    ]
    data = {
        "components": {name: components[name] for name in ("embedder", "sentences", "sentence_embedder", "answerer")},
        "connections": [
            {"sender": "sentences.sentences", "receiver": "sentence_embedder.documents"},
            {"sender": "sentence_embedder.documents", "receiver": "answerer.sentences"},
            {"sender": "embedder.embedding", "receiver": "answerer.query_embedding"},
        ],
    }
    pipeline = Pipeline.from_dict(data, allowed_modules=ALLOWED_MODULES)
    pipeline.warm_up()
    return pipeline


def _read(pipeline: Pipeline, query: str, *chunks: str, document_name: str | None = None) -> dict:
    # ``document_name``: what the chunk's contextual header names (docs/contract.md, "Documents, chunks and SourceIds").
    named = {"document_name": document_name} if document_name else {}
    documents = [
        Document(
            id=f"doc-{index}:0",
            content=text,
            score=0.6,
            meta={"document_id": f"doc-{index}", "chunk_index": 0, **named},
        )
        for index, text in enumerate(chunks)
    ]
    result = pipeline.run(
        {"embedder": {"text": query}, "sentences": {"documents": documents}, "answerer": {"query": query}}
    )
    return result["answerer"]


HANDBOOK = (
    "Full-time employees are eligible for the annual bonus after six months of service. "
    "Contractors are not eligible for the annual bonus or for paid overtime. "
    "The bonus is paid out every March together with the salary."
)
TIERS = (
    "The free tier allows 100 requests per minute for each API key. "
    "The premium tier allows 5000 requests per minute and adds priority support. "
    "Requests above the limit are answered with HTTP status 429."
)
MANUAL = (
    "--retries=NUMBER\n    Set the number of retries to NUMBER. The default is to retry 20 times.\n\n"
    "--timeout=SECONDS\n    Set the network timeout to SECONDS seconds. The default timeout is 900 seconds.\n\n"
    "-q, --quiet\n    Turn off the program's output."
)
EQUIPMENT = (
    "Every new engineer receives a laptop with 32 GB of memory, two external monitors and a noise-cancelling headset. "
    "Equipment is ordered by the IT desk during the first week. "
    "Lost equipment must be reported to security within 24 hours."
)
RESOLVER = (
    "       use-vc (since glibc 2.14)\n"
    "              Sets RES_USEVC in _res.options. This option forces the use of TCP for DNS resolutions.\n\n"
    "       no-reload (since glibc 2.26)\n"
    "              Sets RES_NORELOAD in _res.options. This option disables automatic reloading of a changed\n"
    "              configuration file.\n"
)
LOGIND = (
    "       HoldoffTimeoutSec=\n"
    "           Specifies a period of time after system startup or system resume in which systemd will hold off\n"
    "           on reacting to lid events. This is required for the system to properly detect any hotplugged\n"
    "           devices. Defaults to 30s.\n\n"
    "       KillUserProcesses=\n"
    "           Takes a boolean argument. Configures whether the processes of a user should be killed when the\n"
    "           user logs out. Defaults to no.\n"
)
ATLAS = (
    "The Atlas service was launched in 2019 to store design documents. "
    "In 2022 it was moved to the Frankfurt data centre to meet data-residency rules. "
    "Atlas is owned by the platform team."
)


@pytest.mark.integration
@pytest.mark.slow
class TestSentenceReaderFailureModes:
    def test_run_negation(self, reading_step):
        out = _read(reading_step, "Are contractors eligible for the annual bonus?", HANDBOOK)
        assert "Contractors are not eligible for the annual bonus" in out["answer"] and out["evidence"]["answered"]

    def test_run_numbers(self, reading_step):
        out = _read(reading_step, "How many requests per minute does the premium tier allow?", TIERS)
        assert "The premium tier allows 5000 requests per minute" in out["answer"]

    def test_run_option_defaults(self, reading_step):
        out = _read(reading_step, "What is the default number of retries for --retries?", MANUAL)
        assert "The default is to retry 20 times." in out["answer"]
        out = _read(reading_step, "What is the default --timeout?", MANUAL)
        assert "The default timeout is 900 seconds." in out["answer"]

    def test_run_manual_entry_value(self, reading_step):
        # The value is the last sentence of the entry whose first sentence the question paraphrases.
        # As indexed, the entry's chunk is headed by its page's name: the question's "logind" is the page's word.
        query = "How long does logind hold off reacting to the lid after boot, by default?"
        out = _read(reading_step, query, LOGIND, document_name="logind.conf(5)")
        assert "Defaults to 30s." in out["answer"] and "hold off" in out["answer"], out

    def test_run_manual_entry_option_name(self, reading_step):
        out = _read(reading_step, "Which resolver option makes DNS lookups use TCP?", RESOLVER)
        assert "use-vc" in out["answer"] and "no-reload" not in out["answer"], out

    def test_run_lists(self, reading_step):
        out = _read(reading_step, "What equipment does a new engineer get?", EQUIPMENT)
        assert "two external monitors and a noise-cancelling headset" in out["answer"]

    def test_run_two_sentence_answer(self, reading_step):
        # Beside the passage, the other chunks retrieval delivers: the lead over them says the passage is on topic.
        query = "When was the Atlas service launched and when was it moved to Frankfurt?"
        out = _read(reading_step, query, ATLAS, HANDBOOK, TIERS)
        assert (
            "launched in 2019" in out["answer"] and "In 2022 it was moved to the Frankfurt data centre" in out["answer"]
        )
        # Document order, each sentence followed by its SourceId.
        assert (
            out["answer"].index("2019") < out["answer"].index("2022")
            and out["answer"].count("[SourceId: doc-0:0]") == 2
        )

    def test_run_unanswerable(self, reading_step):
        for query, chunks in [
            ("What is the parking fee at the Berlin office?", (HANDBOOK, TIERS)),
            ("What does the --frobnicate option do?", (MANUAL,)),
            ("Who founded the Atlas service in 1987?", (ATLAS, EQUIPMENT)),
        ]:
            out = _read(reading_step, query, *chunks)
            assert out["answer"] == INSUFFICIENT_INFORMATION_ANSWER, (query, out["evidence"])
            assert out["evidence"]["answered"] is False and out["evidence"]["support"] < 0.8

    def test_run_answerable_outscore_unanswerable(self, reading_step):
        answerable = _read(reading_step, "How many requests per minute does the free tier allow?", TIERS)["evidence"]
        unanswerable = _read(reading_step, "How many requests per minute does the enterprise tier allow?", TIERS)[
            "evidence"
        ]
        assert answerable["support"] > unanswerable["support"]


# --------------------------------------------------------------------------- other languages

LANGUAGES = Path(__file__).resolve().parents[3] / "fixtures" / "languages"


def _corpus(language: str) -> list[str]:
    """The language corpus's documents (tests/fixtures/languages/<language>), in file-name order."""
    return [path.read_text(encoding="utf-8") for path in sorted((LANGUAGES / language).glob("*.md"))]


@pytest.mark.unit
class TestSentenceReaderLanguageRules:
    def test_lexical_only_languages_parameter(self):
        assert SentenceReader().to_dict()["init_parameters"]["lexical_only_languages"] is None
        reader = SentenceReader.from_dict(SentenceReader(lexical_only_languages=["zh"]).to_dict())
        assert reader.lexical_only_languages == ["zh"]
        for bad in ("zh", [""], [1]):
            with pytest.raises(ValueError, match="lexical_only_languages"):
                SentenceReader(lexical_only_languages=bad)

    def test_chinese_similarity_is_replaced_by_lexical_evidence(self):
        # The vectors say the unrelated sentence is the answer; for Chinese only the words count.
        sentences = [
            _sentence("公司邮箱密码长度不得少于十二个字符。", [0.0, 1.0, 0.0], "zh-it:0", 0, 0),
            _sentence("员工食堂在三楼,午餐时间为十一点半到一点半。", [1.0, 0.0, 0.0], "zh-office:0", 1, 0),
        ]
        query = "邮箱密码长度不得少于多少个字符？"
        answer, evidence = SentenceReader().read(query, [1.0, 0.0, 0.0], sentences)
        assert answer.startswith("公司邮箱密码长度") and evidence["answered"]
        assert evidence["features"]["similarity"] == evidence["features"]["lexical"] > 0.5
        # Configured to trust the embedding model for Chinese, the reader follows the vectors.
        answer, _ = SentenceReader(lexical_only_languages=[]).read(query, [1.0, 0.0, 0.0], sentences)
        assert answer.startswith("员工食堂")

    def test_exact_terms_in_other_languages(self):
        # Russian names are exact terms like English ones; German capitalises every noun, so none is a name.
        assert exact_terms("Где находится офис компании Яндекс в Москве?") == ["Яндекс", "Москве"]
        assert exact_terms("Wie hoch ist das Hotelbudget in München?") == []
        assert exact_terms("Gilt für Dienstreisen mit dem Auto 0,30 Euro pro Kilometer?") == ["0,30"]
        # Text of ASCII letters only is read by the English rules (docs/contract.md, "Languages").
        assert exact_terms("Wie viel wird pro Kilometer erstattet?") == ["Kilometer"]
        assert exact_terms("Who owns the Atlas service in Frankfurt?") == ["Atlas", "Frankfurt"]


@pytest.mark.integration
@pytest.mark.slow
class TestSentenceReaderLanguages:
    CASES = {
        "ru": [
            ("Сколько дней оплачиваемого отпуска получает сотрудник в год?", "28 календарных дней", "doc-0:0"),
            ("По какому телефону сообщить о потере ноутбука?", "8-800-555-35-35", "doc-1:0"),
            ("Где находится парковка для сотрудников?", "улице Баумана, 12", "doc-2:0"),
        ],
        "de": [
            ("Wie lange ist die Kündigungsfrist?", "drei Monate zum Quartalsende", "doc-1:0"),
            ("Bis wann muss Resturlaub genommen werden?", "bis zum 31. März des Folgejahres", "doc-1:0"),
            ("Wie hoch ist das Hotelbudget in München?", "150 Euro", "doc-2:0"),
        ],
        "zh": [
            ("正式员工每年有多少天带薪年假？", "十五天带薪年假", "doc-2:0"),
            ("笔记本电脑丢失后应该拨打哪个热线？", "400-820-1234", "doc-0:0"),
            ("员工食堂在几楼？", "员工食堂在三楼", "doc-1:0"),
        ],
    }
    UNANSWERABLE = {
        "ru": "Когда выплачивается годовая премия?",
        "de": "Wie hoch ist das Weihnachtsgeld?",
        "zh": "公司的年终奖什么时候发放？",
    }

    @pytest.mark.parametrize("language", sorted(CASES))
    def test_answers_in_the_documents_language_with_span_and_citation(self, reading_step, language):
        for query, span, source_id in self.CASES[language]:
            out = _read(reading_step, query, *_corpus(language))
            assert out["evidence"]["answered"], (query, out)
            assert span in out["answer"] and f"[SourceId: {source_id}]" in out["answer"], (query, out["answer"])

    @pytest.mark.parametrize("language", sorted(CASES))
    def test_answerable_ranks_above_unanswerable(self, reading_step, language):
        declined = _read(reading_step, self.UNANSWERABLE[language], *_corpus(language))
        assert declined["answer"] == INSUFFICIENT_INFORMATION_ANSWER
        for query, _, _ in self.CASES[language]:
            answered = _read(reading_step, query, *_corpus(language))
            assert answered["evidence"]["support"] > declined["evidence"]["support"], query

    def test_mixed_language_context(self, reading_step):
        chunks = [*_corpus("ru"), *_corpus("de"), *_corpus("zh")]
        out = _read(reading_step, "When is the Kazan office open?", *chunks)
        assert "8:30 to 19:00" in out["answer"] and "[SourceId: doc-2:0]" in out["answer"]
        out = _read(reading_step, "员工食堂在几楼？", *chunks)
        assert "三楼" in out["answer"]
