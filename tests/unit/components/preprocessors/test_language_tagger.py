"""LanguageTagger: every part of a document gets its document's language (the caller's, else detected)."""

import pytest
from haystack import Document

from components.preprocessors.language_tagger import LanguageTagger


def part(content: str, document_id: str, **meta) -> Document:
    return Document(content=content, meta={"tenant_id": "t", "document_id": document_id, **meta})


@pytest.mark.unit
class TestLanguageTagger:
    def test_init_and_serialisation(self):
        tagger = LanguageTagger(max_detection_chars=500)
        assert LanguageTagger.from_dict(tagger.to_dict()).max_detection_chars == 500
        assert tagger.to_dict()["init_parameters"] == {"max_detection_chars": 500}
        for bad in (0, -1, True, "100"):
            with pytest.raises(ValueError, match="max_detection_chars"):
                LanguageTagger(max_detection_chars=bad)

    def test_detects_each_documents_language(self):
        documents = [
            part("Каждый сотрудник получает 28 календарных дней оплачиваемого отпуска в году.", "ru-doc"),
            part("Die Kündigungsfrist beträgt für beide Seiten drei Monate zum Quartalsende.", "de-doc"),
            part("正式员工每年享有十五天带薪年假。", "zh-doc"),
            part("Full-time employees receive 27 days of paid annual leave per calendar year.", "en-doc"),
        ]
        tagged = LanguageTagger().run(documents=documents)["documents"]
        assert [doc.meta["language"] for doc in tagged] == ["ru", "de", "zh", "en"]
        assert [doc.id for doc in tagged] == [doc.id for doc in documents]
        assert "language" not in documents[0].meta  # the input is not changed

    def test_the_callers_language_wins_and_is_reduced_to_its_primary_subtag(self):
        documents = [
            part("Full-time employees receive 27 days of paid annual leave.", "a", language="de-DE"),
            part("Second section of the same document, in English as well.", "a"),
        ]
        assert [doc.meta["language"] for doc in LanguageTagger().run(documents=documents)["documents"]] == ["de", "de"]

    def test_parts_of_one_document_share_its_language(self):
        # A mixed document gets the language most of its text is in; every part (and so every chunk) carries it.
        documents = [
            part("Офис в Казани", "mixed"),
            part("Парковка для сотрудников находится во дворе здания на улице Баумана.", "mixed"),
            part("Столовая на втором этаже работает с 12:00 до 15:00. Пропуск выдаёт администратор.", "mixed"),
            part("The Kazan office is open on weekdays.", "mixed"),
            part("The Kazan office is open on weekdays from 8:30 to 19:00.", "other"),
        ]
        tagged = LanguageTagger().run(documents=documents)["documents"]
        assert [doc.meta["language"] for doc in tagged] == ["ru", "ru", "ru", "ru", "en"]

    def test_too_little_text_stays_unknown(self):
        tagged = LanguageTagger().run(documents=[part("v2.1 -- 42", "x")])["documents"]
        assert tagged[0].meta["language"] is None

    def test_an_unusable_given_language_is_replaced_by_detection(self):
        documents = [part("Die Kündigungsfrist beträgt drei Monate zum Quartalsende.", "d", language="German!")]
        assert LanguageTagger().run(documents=documents)["documents"][0].meta["language"] == "de"
