"""The Edge store's BM25 model in Russian, German and Chinese: an exact term finds its chunk (real Qdrant Edge)."""

import pytest
from haystack import Document

from components.document_stores.qdrant_edge import QdrantEdgeDocumentStore
from components.document_stores.qdrant_edge.bm25 import SegmentedBm25, build_bm25
from components.embedders.bm25_embedders import Bm25DocumentEmbedder, Bm25TextEmbedder

CHUNKS = {
    "ru-hr:0": ("ru", "Каждый сотрудник получает 28 календарных дней оплачиваемого отпуска в году."),
    "ru-it:0": ("ru", "Пароль корпоративной учётной записи должен содержать не менее 14 символов."),
    "de-hb:0": ("de", "Die Kündigungsfrist beträgt für beide Seiten drei Monate zum Quartalsende."),
    "de-rk:0": ("de", "Das Hotelbudget beträgt 120 Euro pro Nacht, in München und Frankfurt 150 Euro."),
    "zh-hb:0": ("zh", "正式员工每年享有十五天带薪年假。未使用的年假最多可以顺延五天到下一年。"),
    "zh-it:0": ("zh", "公司邮箱密码长度不得少于十二个字符,并且每六十天更换一次。"),
    "en-hb:0": ("en", "Full-time employees receive 27 days of paid annual leave per calendar year."),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    document_store = QdrantEdgeDocumentStore(path=str(tmp_path_factory.mktemp("bm25") / "qdrant"), embedding_dim=4)
    document_store.write_documents(
        [
            Document(id=doc_id, content=text, meta={"tenant_id": "t", "tags": ["all"], "language": language})
            for doc_id, (language, text) in CHUNKS.items()
        ]
    )
    yield document_store
    document_store.close()


@pytest.mark.unit
class TestMultilingualKeywordSearch:
    @pytest.mark.parametrize(
        ("term", "expected"),
        [
            ("отпуска", "ru-hr:0"),
            ("Пароль", "ru-it:0"),
            ("пароль", "ru-it:0"),  # lower-cased like the indexed text
            ("Kündigungsfrist", "de-hb:0"),
            ("München", "de-rk:0"),
            ("Quartalsende", "de-hb:0"),
            ("年假", "zh-hb:0"),
            ("带薪年假", "zh-hb:0"),
            ("密码", "zh-it:0"),
            ("邮箱密码", "zh-it:0"),
            ("vacation leave", "en-hb:0"),
        ],
    )
    def test_an_exact_term_finds_its_chunk(self, store, term, expected):
        assert store.bm25_retrieval(term, top_k=3)[0].id == expected

    def test_an_absent_term_finds_nothing(self, store):
        assert store.bm25_retrieval("健身房") == []
        assert store.bm25_retrieval("Weihnachtsgeld") == []

    def test_language_filter_on_the_indexed_field(self, store):
        filters = {"field": "meta.language", "operator": "==", "value": "de"}
        assert {doc.id for doc in store.filter_documents(filters)} == {"de-hb:0", "de-rk:0"}
        assert store.bm25_retrieval("Kündigungsfrist", filters={**filters, "value": "ru"}) == []
        assert [doc.id for doc in store.bm25_retrieval("Kündigungsfrist", filters=filters)] == ["de-hb:0"]


@pytest.mark.unit
class TestSegmentedBm25:
    def test_build_segments_han_only(self):
        model = build_bm25()
        assert isinstance(model, SegmentedBm25)
        english = "Employees receive 27 days of paid annual leave."
        # English text reaches the engine unchanged: the vectors are the engine's own.
        assert list(model.embed_document(english).indices) == list(model.model.embed_document(english).indices)
        chinese = "正式员工每年享有十五天带薪年假"
        assert len(model.embed_document(chinese).indices) > 1 == len(model.model.embed_document(chinese).indices)

    def test_server_profile_embedders_segment_alike(self):
        document = Bm25DocumentEmbedder().run(documents=[Document(content=CHUNKS["zh-it:0"][1])])["documents"][0]
        query = Bm25TextEmbedder().run(text="邮箱密码")["sparse_embedding"]
        assert query.indices and set(query.indices) <= set(document.sparse_embedding.indices)
