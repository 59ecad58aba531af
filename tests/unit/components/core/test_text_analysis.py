"""Shared text helpers: SourceIds, key phrases, shingles, sentences, snippets, tokens, every script."""

import re
from pathlib import Path

import pytest
import regex
from haystack import Document

from components.core.text_analysis import (
    chunk_fields,
    content_words,
    count_tokens,
    find_source_ids,
    is_content_word,
    jaccard,
    join_ordinals,
    key_phrases,
    keyword_text,
    normalize_word,
    phrase_index,
    sentence_blocks,
    shingles,
    snippet,
    source_id_of,
    split_sentences,
    strip_source_ids,
    text_language,
    words,
)

REPO = Path(__file__).resolve().parents[4]


@pytest.mark.unit
class TestSourceIds:
    def test_find_and_strip(self):
        text = "A [SourceId: doc-1:0] and [SourceId:doc-2:13], not [SourceId: bad_id:1] nor [Source: x:1]."
        assert find_source_ids(text) == ["doc-1:0", "doc-2:13"]
        assert "SourceId: doc" not in strip_source_ids(text)

    def test_source_id_from_meta_or_id(self):
        assert source_id_of(Document(id="x", content="t", meta={"document_id": "hr-1", "chunk_index": 4})) == "hr-1:4"
        assert source_id_of(Document(id="hr-1:4", content="t")) == "hr-1:4"

    def test_chunk_fields_show_na(self):
        fields = chunk_fields(Document(id="d:0", content="text", meta={"document_id": "d", "chunk_index": 0}))
        assert fields["page_number"] == "N/A" and fields["section"] == "N/A" and fields["document_name"] == "d"


@pytest.mark.unit
class TestKeyPhrases:
    def test_runs_give_bigrams_and_unigrams(self):
        assert key_phrases("Employees receive 25 vacation days.") == [
            "employee receive",
            "receive 25",
            "25 vacation",
            "vacation day",
        ]
        assert key_phrases("It is the budget.") == ["budget"]

    def test_markers_and_stopwords_are_ignored(self):
        assert key_phrases("[SourceId: a:1] the and of") == []

    def test_phrase_index_matches_normalised_forms(self):
        index = phrase_index("Policies apply to every employee's vacation days\nin the year")
        assert {"policy", "policy apply", "vacation day", "day year"} - index == {"day year"}

    def test_normalisation(self):
        assert [normalize_word(w) for w in ["Policies", "days", "class", "status", "Employee's"]] == [
            "policy",
            "day",
            "class",
            "status",
            "employee",
        ]
        assert content_words("What is the vacation policy?") == ["vacation", "policy"]


@pytest.mark.unit
class TestShinglesAndSentences:
    def test_jaccard_of_shingles(self):
        text = "the quick brown fox jumps over the lazy dog"
        assert jaccard(shingles(text), shingles(text.upper() + "  ")) == 1.0
        assert jaccard(shingles(text), shingles("completely different words here")) == 0.0
        assert jaccard(shingles("short"), shingles("short")) == 1.0

    def test_split_sentences_joins_wrapped_lines(self):
        text = (
            "## Leave\nFull-time staff get 27 days\nof leave. Part-timers get less!\n- First item here\n- Second item"
        )
        assert split_sentences(text) == [
            "Leave",
            "Full-time staff get 27 days of leave.",
            "Part-timers get less!",
            "First item here",
            "Second item",
        ]

    def test_snippet(self):
        assert snippet("x" * 200) == "x" * 200
        assert snippet("x" * 201) == "x" * 200 + "..."


@pytest.mark.unit
class TestTokens:
    def test_count_tokens_offline_and_special_tokens_are_text(self):
        assert count_tokens("") == 0
        assert count_tokens("hello world") == 2
        assert count_tokens("<|endoftext|>") > 1


@pytest.mark.unit
class TestLenientMeta:
    def test_odd_meta_values_do_not_break_ids(self):
        from components.core.text_analysis import chunk_index_of, optional_int

        assert [optional_int(v) for v in (4, "4", 4.0, "4.5", "x", None, True)] == [4, 4, 4, None, None, None, None]
        odd = Document(id="doc-1:7", content="t", meta={"document_id": "doc-1", "chunk_index": "seven"})
        assert source_id_of(odd) == "doc-1:7" and chunk_index_of(odd) == 7


@pytest.mark.unit
class TestSentenceBlocks:
    def test_paragraphs_and_entries_are_blocks(self):
        text = (
            "First paragraph. It has two sentences.\n\n"
            "       use-vc (since glibc 2.14)\n"
            "              Sets RES_USEVC. This option forces TCP.\n\n"
            "- a list item. Second sentence of the item.\n"
        )
        assert sentence_blocks(text) == [
            ["First paragraph.", "It has two sentences."],
            ["use-vc (since glibc 2.14) Sets RES_USEVC.", "This option forces TCP."],
            ["a list item.", "Second sentence of the item."],
        ]

    def test_ascii_lines_split_as_the_unicode_rule_does(self):
        # sentence_blocks splits ASCII lines with the standard-library pattern; it must cut exactly where the
        # Unicode rule cuts (every ASCII character, seeded random lines and the edge cases by hand).
        from random import Random

        from components.core.text_analysis import _ASCII_SENTENCE_END_RE, _SENTENCE_END_RE

        rng = Random(35)
        every_ascii = "".join(map(chr, range(128)))
        alphabet = "aAzZ09 .!?;,:-\t\n\x0b\x0c\r\x1c\x1f\"'([)]"
        lines = ["Ends. Next", "Ends.\x1cNext", "Ends.\x0bNext", "3. 4", 'Q? "Quoted"', "(x). (Y", "a.  \t B", ". A"]
        lines += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24))) for _ in range(20_000)]
        lines += [
            "".join(rng.choice(every_ascii) for _ in range(rng.randint(0, 12))) + rng.choice(".!?") + rng.choice(" \t")
            + rng.choice(every_ascii) + rng.choice(every_ascii)
            for _ in range(20_000)
        ]  # fmt: skip
        mismatched = [line for line in lines if _ASCII_SENTENCE_END_RE.split(line) != _SENTENCE_END_RE.split(line)]
        assert mismatched == []
        assert sentence_blocks("Ends. Next one!\nÜber. Zwei") == [["Ends.", "Next one!", "Über.", "Zwei"]]  # not ASCII

    def test_split_sentences_is_the_blocks_flattened(self):
        text = "# Heading\nOne. Two.\n\nThree four five.\n| a | b |\n"
        assert split_sentences(text) == [sentence for block in sentence_blocks(text) for sentence in block]
        assert sentence_blocks("") == []


@pytest.mark.unit
class TestLinksBack:
    def test_url_is_a_web_link_or_a_declared_source_never_an_upload_path(self):
        from components.core.text_analysis import source_title_of, source_url_of

        web = Document(content="x", meta={"document_id": "d1", "source_uri": "https://help.example.com/a"})
        upload = Document(content="x", meta={"document_id": "d2", "source_uri": "file:///srv/uploads/a.md"})
        synced = Document(
            content="x",
            meta={
                "document_id": "d3",
                "source_uri": "file:///srv/git/h.git/a.md",
                "commit_sha": "abc",
                "document_name": "A",
            },
        )
        assert source_url_of(web) == "https://help.example.com/a"
        assert source_url_of(upload) is None
        # A chunk stored with a credential in its URL (before sources lost them) still links without it.
        legacy = Document(
            content="x", meta={"source_uri": "https://deploy:TOKEN@git.example/h/a.md", "commit_sha": "c"}
        )
        assert source_url_of(legacy) == "https://git.example/h/a.md"
        assert source_url_of(synced) == "file:///srv/git/h.git/a.md"
        assert source_title_of(synced) == "A" and source_title_of(web) == "d1"


# English texts whose words, sentences and key phrases are pinned to what the ASCII-only rules gave before
# text analysis became Unicode-aware (curly quotes, an em dash and a non-breaking hyphen context included).
ENGLISH_TEXTS = [
    "Full-time employees receive 27 days of paid annual leave per calendar year. It's the company’s policy — no "
    'exceptions!\nSee section 4.2 ("Leave") for details. e.g. carry-over: up to 5 days until March 31.',
    "# Expense policy\n\n- Meals: EUR 45 per day.\n- Hotels are booked via TravelDesk; the limit is EUR 180/night. "
    "Ask finance@acme.example?\nThe CFO approves exceptions. “Quoted” items follow.",
    "Run `sourcebound index --max-retries=3` on os.path objects; CamelCase names like QdrantEdgeDocumentStore stay "
    "whole. The 2nd run is faster... Really? Yes.",
]
ASCII_WORD_PATTERN = r"[A-Za-z0-9]+(?:['’][A-Za-z]+)*"


@pytest.mark.unit
class TestEnglishUnchanged:
    def test_pinned_sentences(self):
        assert split_sentences(ENGLISH_TEXTS[0]) == [
            "Full-time employees receive 27 days of paid annual leave per calendar year.",
            "It's the company’s policy — no exceptions!",
            'See section 4.2 ("Leave") for details. e.g. carry-over: up to 5 days until March 31.',
        ]
        assert split_sentences(ENGLISH_TEXTS[1]) == [
            "Expense policy",
            "Meals: EUR 45 per day.",
            "Hotels are booked via TravelDesk; the limit is EUR 180/night.",
            "Ask finance@acme.example?",
            "The CFO approves exceptions.",
            "“Quoted” items follow.",
        ]
        assert split_sentences(ENGLISH_TEXTS[2]) == [
            "Run `sourcebound index --max-retries=3` on os.path objects; CamelCase names like QdrantEdgeDocumentStore "
            "stay whole.",
            "The 2nd run is faster...",
            "Really?",
            "Yes.",
        ]

    def test_pinned_key_phrases(self):
        assert key_phrases(ENGLISH_TEXTS[0]) == [
            "full time", "time employee", "employee receive", "receive 27", "27 day", "paid annual", "annual leave",
            "calendar year", "company policy", "exception", "see section", "section 4", "2", "leave", "detail",
            "carry", "5 day", "march 31",
        ]  # fmt: skip

    @pytest.mark.parametrize("text", ENGLISH_TEXTS)
    def test_words_are_the_ascii_words(self, text):
        assert words(text) == [word.lower() for word in re.findall(ASCII_WORD_PATTERN, text)]

    def test_sample_corpus_words_unchanged(self):
        # The bundled English corpus tokenises as the ASCII pattern did, except words holding a non-ASCII letter
        # ("cafés" is one word now, not "caf" and "s"), which are taken out before comparing.
        for path in sorted((REPO / "examples" / "sample_corpus").rglob("*.md")):
            text = regex.sub(r"\S*[\p{L}--[\x00-\x7f]]\S*", " ", path.read_text(encoding="utf-8"), flags=regex.V1)
            assert words(text) == [word.lower() for word in re.findall(ASCII_WORD_PATTERN, text)], path
            assert split_sentences(text) and key_phrases(text)


@pytest.mark.unit
class TestUnicodeWords:
    def test_cyrillic_german_greek(self):
        assert words("Отпуск — 28 календарных дней.") == ["отпуск", "28", "календарных", "дней"]
        assert words("Die Kündigungsfrist beträgt drei Monate; Straße 14.") == [
            "die", "kündigungsfrist", "beträgt", "drei", "monate", "straße", "14",
        ]  # fmt: skip
        assert words("Η άδεια είναι 25 ημέρες.") == ["η", "άδεια", "είναι", "25", "ημέρες"]

    def test_han_runs_are_segmented_into_words(self):
        assert words("正式员工每年享有十五天带薪年假。") == [
            "正式",
            "员工",
            "每年",
            "享有",
            "十五天",
            "带薪",
            "年",
            "假",
        ]
        # Latin inside Chinese stays a word of its own.
        assert words("所有员工必须为邮箱和VPN开启双重认证")[-5:] == ["和", "vpn", "开启", "双重", "认证"]

    def test_inflected_forms_share_a_stem(self):
        # A question and the passage answering it inflect the same word differently (genitive vs nominative).
        assert content_words("Сколько дней отпуска?", "ru")[-1] == content_words("Отпуск составляет 28 дней.", "ru")[0]
        assert content_words("неиспользованных дней", "ru")[0] == content_words("неиспользованные дни", "ru")[0]
        # English keeps its light suffix normaliser: no stemmer for "en".
        assert content_words("policies days", "en") == ["policy", "day"]

    def test_stopwords_of_the_text_language(self):
        assert text_language("Каждый сотрудник получает 28 календарных дней отпуска.") == "ru"
        assert text_language("Employees receive 27 days.") == "en"
        # Russian words are compared by their Snowball stems ("получает" -> "получа").
        assert content_words("Каждый сотрудник получает 28 дней и не более того.")[:3] == [
            "сотрудник",
            "получа",
            "28",
        ]
        assert "и" not in content_words("Каждый сотрудник получает 28 дней и не более того.")
        assert "der" not in content_words("Die Kündigungsfrist der Mitarbeiter beträgt drei Monate.")
        # English stays English: "die" is a content word of an ASCII text.
        assert "die" in content_words("Old batteries die quickly.")
        # A single Han character can carry the meaning ("假", leave).
        assert is_content_word("假")

    def test_non_latin_shingles_tell_chunks_apart(self):
        first = shingles("Каждый сотрудник получает 28 календарных дней оплачиваемого отпуска в году.")
        second = shingles("Пароль корпоративной учётной записи должен содержать не менее 14 символов.")
        chinese = shingles("正式员工每年享有十五天带薪年假。")
        assert first and second and chinese
        assert jaccard(first, second) == 0.0 and jaccard(first, chinese) == 0.0
        assert (
            jaccard(first, shingles("Каждый сотрудник получает 28 календарных дней оплачиваемого отпуска в году!"))
            == 1.0
        )

    def test_key_phrases_coverage_of_a_russian_answer(self):
        context = "Каждый сотрудник получает 28 календарных дней оплачиваемого отпуска в году."
        index = phrase_index(context)
        answer = key_phrases("Сотрудник получает 28 календарных дней отпуска.")
        assert answer and sum(phrase in index for phrase in answer) / len(answer) >= 0.5
        unrelated = key_phrases("Пароль меняется каждые 90 дней.")
        assert not any(phrase in index for phrase in unrelated)

    def test_keyword_text(self):
        assert keyword_text("Employees receive 27 days.") == "Employees receive 27 days."
        assert keyword_text("Die Kündigungsfrist") == "Die Kündigungsfrist"
        assert keyword_text("带薪年假 VPN") == " 带薪 年 假  VPN"


@pytest.mark.unit
class TestMultilingualSentences:
    def test_cyrillic_capitals_end_sentences(self):
        assert split_sentences("Отпуск составляет 28 дней. Это важно! Заявление подаётся заранее.") == [
            "Отпуск составляет 28 дней.",
            "Это важно!",
            "Заявление подаётся заранее.",
        ]

    def test_cjk_end_punctuation(self):
        # NFKC (indexing) turns the full-width ！？ into ASCII, so both forms end a sentence.
        assert split_sentences("员工每年享有十五天带薪年假。年假可以顺延!下一句？最后一句") == [
            "员工每年享有十五天带薪年假。",
            "年假可以顺延!",
            "下一句？",
            "最后一句",
        ]

    def test_greek_question_mark(self):
        assert split_sentences("Πόσες ημέρες άδειας έχω; Έχετε 25 ημέρες.") == [
            "Πόσες ημέρες άδειας έχω;",
            "Έχετε 25 ημέρες.",
        ]

    def test_german_ordinal_dates_end_no_sentence(self):
        text = "Resturlaub muss bis zum 31. März genommen werden. Die Frist gilt für alle Beschäftigten."
        assert split_sentences(text) == [
            "Resturlaub muss bis zum 31. März genommen werden.",
            "Die Frist gilt für alle Beschäftigten.",
        ]
        # English keeps its rule: a number and a dot before a capital end a sentence.
        assert split_sentences("Leave must be taken by day 31. March is the deadline.") == [
            "Leave must be taken by day 31.",
            "March is the deadline.",
        ]
        assert join_ordinals(["bis zum 31.", "März"]) == ["bis zum 31. März"]

    def test_language_is_detected_only_where_an_ordinal_could_join(self, monkeypatch):
        from components.core import text_analysis

        texts = [
            "Resturlaub muss bis zum 31. März genommen werden. Die Frist gilt für alle Beschäftigten.",
            "Der Urlaub beträgt 30 Tage. Über Ausnahmen entscheidet die Leitung.",
            "Les Normands (Normands en normand) furent le peuple. Ils donnèrent leur nom à la Normandie.",
            "Отпуск составляет 28 дней. Заявление подаётся заранее.",
        ]
        expected = [sentence_blocks(text) for text in texts]
        text_analysis.text_language.cache_clear()
        calls: list[str] = []
        detect = text_analysis.detect_language
        monkeypatch.setattr(text_analysis, "detect_language", lambda text: calls.append(text) or detect(text))
        assert [sentence_blocks(text) for text in texts] == expected
        assert calls == [texts[0]]  # the only one with "<digit>. " in it

    def test_mixed_language_text(self):
        text = "The Kazan office opens at 8:30. Парковка находится во дворе. 员工食堂在三楼。"
        assert split_sentences(text) == [
            "The Kazan office opens at 8:30.",
            "Парковка находится во дворе.",
            "员工食堂在三楼。",
        ]
        assert {"kazan", "парковка", "食堂"} <= set(words(text))
