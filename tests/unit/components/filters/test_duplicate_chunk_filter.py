"""DuplicateChunkFilter (specification test_deduplicate_chunks)."""

import pytest
from haystack import Document
from hypothesis import given
from hypothesis import strategies as st

from components.core.text_analysis import jaccard, jaccard_bound
from components.filters.duplicate_chunk_filter import DuplicateChunkFilter

BASE = (
    "Full-time employees receive 27 days of paid annual leave per calendar year, plus the Dutch public holidays. "
    "Part-time employees receive leave in proportion to their contracted hours."
)


@pytest.mark.unit
class TestDuplicateChunkFilter:
    def test_init(self):
        assert DuplicateChunkFilter().threshold == 0.9
        with pytest.raises(ValueError):
            DuplicateChunkFilter(threshold=1.5)

    def test_to_dict(self):
        assert DuplicateChunkFilter(threshold=0.8).to_dict()["init_parameters"] == {"threshold": 0.8, "shingle_size": 3}

    def test_from_dict(self):
        assert DuplicateChunkFilter.from_dict(DuplicateChunkFilter(0.95, 2).to_dict()).shingle_size == 2

    def test_deduplicate_chunks(self):
        documents = [
            Document(id="a:0", content=BASE),
            Document(id="b:3", content=BASE.replace("  ", " ") + " "),  # identical words: similarity 1.0
            Document(id="c:1", content="Sick days never reduce your annual leave balance."),
            Document(id="d:2", content=BASE.replace("Dutch", "German")),  # one word differs: below 0.9
        ]
        dedup = DuplicateChunkFilter(threshold=0.9)
        assert dedup.similarity(BASE, documents[3].content) < 0.9
        out = dedup.run(documents=documents)
        assert [doc.id for doc in out["documents"]] == ["a:0", "c:1", "d:2"]
        assert out["dropped"] == 1

    def test_lower_ranked_duplicate_is_the_one_dropped(self):
        out = DuplicateChunkFilter().run(
            documents=[Document(id="first", content=BASE), Document(id="second", content=BASE)]
        )
        assert [doc.id for doc in out["documents"]] == ["first"]


@pytest.mark.unit
class TestJaccard:
    @given(
        st.frozensets(st.integers(0, 30), max_size=25),
        st.frozensets(st.integers(0, 30), max_size=25),
    )
    def test_jaccard_matches_the_definition_and_the_bound_holds(self, first, second):
        expected = len(first & second) / len(first | second) if first or second else 1.0
        assert jaccard(first, second) == pytest.approx(expected)
        assert jaccard_bound(first, second) >= jaccard(first, second)


@pytest.mark.unit
class TestNonLatinChunks:
    RUSSIAN = [
        "Каждый сотрудник получает 28 календарных дней оплачиваемого отпуска в году.",
        "Пароль корпоративной учётной записи должен содержать не менее 14 символов.",
        "Парковка для сотрудников находится во дворе здания на улице Баумана, 12.",
    ]
    GERMAN = [
        "Die Kündigungsfrist beträgt für beide Seiten drei Monate zum Quartalsende.",
        "Das Hotelbudget beträgt 120 Euro pro Nacht, in München und Frankfurt 150 Euro.",
    ]
    CHINESE = [
        "正式员工每年享有十五天带薪年假。未使用的年假最多可以顺延五天到下一年。",
        "公司邮箱密码长度不得少于十二个字符，并且每六十天更换一次。",
        "上海办公室位于南京西路 1266 号二十八楼，工作日早上八点开门。",
    ]

    @pytest.mark.parametrize("texts", [RUSSIAN, GERMAN, CHINESE], ids=["ru", "de", "zh"])
    def test_distinct_chunks_are_kept(self, texts):
        documents = [Document(id=f"d:{index}", content=text) for index, text in enumerate(texts)]
        kept = DuplicateChunkFilter(threshold=0.9).run(documents=documents)["documents"]
        assert [doc.id for doc in kept] == [doc.id for doc in documents]

    @pytest.mark.parametrize(
        ("original", "near_duplicate"),
        [
            (RUSSIAN[0] + " " + RUSSIAN[1], RUSSIAN[0] + "  " + RUSSIAN[1].replace(".", "!")),
            (GERMAN[0] + " " + GERMAN[1], GERMAN[0] + "\n" + GERMAN[1]),
            (CHINESE[0] + CHINESE[1], CHINESE[0] + " " + CHINESE[1].replace("，", ",")),
        ],
        ids=["ru", "de", "zh"],
    )
    def test_near_duplicates_still_merge(self, original, near_duplicate):
        documents = [Document(id="a:0", content=original), Document(id="b:0", content=near_duplicate)]
        dedup = DuplicateChunkFilter(threshold=0.9)
        assert dedup.similarity(original, near_duplicate) >= 0.9
        assert [doc.id for doc in dedup.run(documents=documents)["documents"]] == ["a:0"]

    def test_one_changed_figure_is_not_a_duplicate(self):
        changed = self.RUSSIAN[0].replace("28", "31")
        assert DuplicateChunkFilter(threshold=0.9).similarity(self.RUSSIAN[0], changed) < 0.9
