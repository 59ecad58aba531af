"""Language resources: detection (lingua), stopword lists (stopwords-iso), Han segmentation (jieba), language codes."""

import pytest

from components.core.language import (
    DETECTED_LANGUAGES,
    detect_language,
    language_stopwords,
    primary_language,
    segment_han,
)


@pytest.mark.unit
class TestDetectLanguage:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("Каждый сотрудник получает 28 календарных дней оплачиваемого отпуска в году.", "ru"),
            ("Die Kündigungsfrist beträgt für beide Seiten drei Monate zum Quartalsende.", "de"),
            ("正式员工每年享有十五天带薪年假。", "zh"),
            ("Full-time employees receive 27 days of paid annual leave per calendar year.", "en"),
            ("公司有健身房吗？", "zh"),  # seven CJK characters are enough
        ],
    )
    def test_detects_the_language(self, text, expected):
        assert detect_language(text) == expected

    def test_too_little_text_is_unknown(self):
        assert detect_language("") is None
        assert detect_language("OK 42") is None
        assert detect_language("年假") is None

    def test_deterministic_and_within_the_set(self):
        text = "Les employés reçoivent vingt-cinq jours de congés payés par an."
        assert detect_language(text) == detect_language(text) == "fr"
        assert "fr" in DETECTED_LANGUAGES


@pytest.mark.unit
class TestStopwordsAndSegmentation:
    def test_language_stopwords(self):
        assert {"und", "der", "nicht"} <= language_stopwords("de")
        assert {"и", "в", "не"} <= language_stopwords("ru")
        assert "的" in language_stopwords("zh")
        assert language_stopwords("xx") == frozenset()

    def test_numerals_are_never_stopwords(self):
        # stopwords-iso lists Chinese numerals; a question about a number needs them.
        assert not {"七", "八", "四"} & language_stopwords("zh")

    def test_segment_han(self):
        assert segment_han("员工每年享有带薪年假") == ["员工", "每年", "享有", "带薪", "年", "假"]
        assert "".join(segment_han("上海办公室位于南京西路")) == "上海办公室位于南京西路"


@pytest.mark.unit
class TestPrimaryLanguage:
    @pytest.mark.parametrize(
        ("value", "expected"),
        [("de", "de"), ("de-DE", "de"), ("EN_us", "en"), (" ru ", "ru"), ("zh-Hans-CN", "zh"), ("fil", "fil")],
    )
    def test_primary_subtag(self, value, expected):
        assert primary_language(value) == expected

    @pytest.mark.parametrize("value", [None, "", "english", "1a", "d", 42, ["de"]])
    def test_not_a_language_code(self, value):
        assert primary_language(value) is None
