"""
Russian, German and Chinese end to end over HTTP (docs/contract.md, "Languages"): the real server indexes the
language corpora of ``tests/fixtures/languages`` through ``/index/run`` (no ``language`` given: it is detected),
then keyword search finds an exact term in each language, results carry the language, the ``language`` filter
narrows a search, and ``/rag/run`` answers in the document's language with the right span and citation.
"""

from pathlib import Path

import pytest
import yaml
from support.api_server import ApiServer, error_of

pytestmark = [pytest.mark.integration, pytest.mark.slow]

LANGUAGES = Path(__file__).resolve().parents[1] / "fixtures" / "languages"
STAFF = {"tenant_id": "polyglot", "user_tags": ["all-staff"]}
INSUFFICIENT = "I don't have enough information in the available documents to answer this question."


def corpus_documents() -> list[dict]:
    """Every document of the three language corpora as an /index/run document (no language given)."""
    manifest = yaml.safe_load((LANGUAGES / "manifest.yml").read_text(encoding="utf-8"))
    return [
        {
            "content": (LANGUAGES / entry["path"]).read_text(encoding="utf-8"),
            "document_id": entry["document_id"],
            "document_name": entry["document_name"],
            "tenant_id": entry["tenant_id"],
            "tags": entry["tags"],
        }
        for entry in manifest["documents"]
    ]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with ApiServer(tmp_path_factory.mktemp("languages") / "data") as running:
        yield running


@pytest.fixture(scope="module")
def indexed(server):
    response = server.client.post("/index/run", json={"documents": corpus_documents()})
    assert response.status_code == 200, response.text[:1000]
    return response.json()["result"]


def post(server, path, body, status=200):
    response = server.client.post(path, json=body)
    assert response.status_code == status, response.text[:1000]
    return response.json()["result"] if status == 200 else response.json()


def search(server, query, **options):
    return post(server, "/search/run", {"query": query, **STAFF, **options})["results"]


class TestIndexing:
    def test_every_document_indexed_and_unchanged_on_a_second_run(self, server, indexed):
        assert {entry["status"] for entry in indexed["documents"]} == {"indexed"}
        # The detected language is a function of the content: re-indexing finds nothing changed.
        again = post(server, "/index/run", {"documents": corpus_documents()})
        assert {entry["status"] for entry in again["documents"]} == {"unchanged"}


class TestKeywordSearch:
    @pytest.mark.parametrize(
        ("term", "document_id", "language"),
        [
            ("отпуска", "ru-hr-handbook", "ru"),
            ("Баумана", "ru-office-kazan", "ru"),
            ("Kündigungsfrist", "de-personalhandbuch", "de"),
            ("Brandschutzbeauftragter", "de-gebaeude", "de"),
            ("年假", "zh-staff-handbook", "zh"),
            ("热线", "zh-it-security", "zh"),
        ],
    )
    def test_an_exact_term_finds_its_document(self, server, indexed, term, document_id, language):
        results = search(server, term, search_mode="keyword", k=3)
        assert results and results[0]["document_id"] == document_id
        assert results[0]["language"] == language

    def test_language_filter_narrows_hybrid_search(self, server, indexed):
        for language in ("ru", "de", "zh"):
            results = search(server, "vacation days leave 年假 Urlaub отпуск", filters={"language": language})
            assert results and {result["language"] for result in results} == {language}
        # The sample corpus (English) is there too; a filter on a language nobody wrote finds nothing.
        assert search(server, "vacation days", filters={"language": "fr"}) == []

    def test_a_bad_language_filter_is_a_422(self, server, indexed):
        for bad in ("German", "DE", 7):
            response = server.client.post("/search/run", json={"query": "x", **STAFF, "filters": {"language": bad}})
            assert "language" in error_of(response, 422)


class TestAnswers:
    @pytest.mark.parametrize(
        ("query", "span", "document_id"),
        [
            ("Сколько дней оплачиваемого отпуска получает сотрудник в год?", "28 календарных дней", "ru-hr-handbook"),
            ("Wie lange ist die Kündigungsfrist?", "drei Monate zum Quartalsende", "de-personalhandbuch"),
            ("笔记本电脑丢失后应该拨打哪个热线？", "400-820-1234", "zh-it-security"),
            ("When is the Kazan office open?", "8:30 to 19:00", "ru-office-kazan"),  # the mixed document
        ],
    )
    def test_answer_in_the_documents_language(self, server, indexed, query, span, document_id):
        result = post(server, "/rag/run", {"query": query, **STAFF})
        assert result["action"] == "CITE" and span in result["answer"], result
        assert document_id in {citation["document_id"] for citation in result["citations"]}

    @pytest.mark.parametrize(
        ("answerable", "unanswerable"),
        [
            ("Где находится парковка для сотрудников?", "Когда выплачивается годовая премия?"),
            ("Wie hoch ist das Hotelbudget in München?", "Wie hoch ist das Weihnachtsgeld?"),
            ("正式员工每年有多少天带薪年假？", "公司的年终奖什么时候发放？"),
        ],
    )
    def test_confidence_ranks_answerable_above_unanswerable(self, server, indexed, answerable, unanswerable):
        known = post(server, "/rag/run", {"query": answerable, **STAFF})
        unknown = post(server, "/rag/run", {"query": unanswerable, **STAFF})
        assert known["confidence"]["overall"] > unknown["confidence"]["overall"]
        assert unknown["answer"].startswith(INSUFFICIENT) and unknown["action"] != "CITE"
