"""
``pipelines/enrich.yml`` through ``EnrichmentService``: part of the sample corpus indexed with
``pipelines/indexing.yml`` into a temporary data dir, then enrichment next to ``pipelines/query.yml``
on the same store, so the two can be compared: enrichment must hand over exactly the context the
answer would be generated from (same identity, filter, retrieval, dedup, limits and budget).
"""

from pathlib import Path

import pytest
import yaml
from haystack import Pipeline
from pydantic import ValidationError

from components.core.models import EnrichResponse
from components.services.enrichment_service import EnrichmentService
from components.services.pipeline_loader import load_pipeline

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SAMPLE = Path(__file__).resolve().parents[3] / "examples" / "sample_corpus"
INDEXED = {"acme-hr-handbook", "acme-expense-policy", "acme-onboarding-priya", "globex-employee-handbook"}
ACME = {"tenant_id": "acme", "user_tags": ["hr", "all-staff", "finance"]}
LEAVE = "How many days of paid annual leave do full-time employees get?"
QUESTIONS = (
    LEAVE,
    "What is the daily meal per diem when travelling for business within the Netherlands?",
    "How do I submit an expense claim?",
    "What happens during onboarding in the first week?",
)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    from components.services.indexing_service import IndexingService

    data_dir = tmp_path_factory.mktemp("enrich-pipeline")
    indexing = IndexingService.from_yaml(env={"SOURCEBOUND_DATA_DIR": str(data_dir)})
    manifest = yaml.safe_load((SAMPLE / "manifest.yml").read_text(encoding="utf-8"))
    for entry in manifest["documents"]:
        if entry["document_id"] in INDEXED:
            fields = {key: entry.get(key) for key in ("scope", "user_id", "project_id", "document_name")}
            result = indexing.index_files(
                [SAMPLE / entry["path"]],
                tenant_id=entry["tenant_id"],
                tags=entry["tags"],
                document_id=entry["document_id"],
                **{key: value for key, value in fields.items() if value is not None},
            )
            assert result["documents"][0]["status"] == "indexed", result
    indexing.index_texts(
        [
            {
                "content": "Annual leave for full-time staff was once 99 days per year according to this tainted note.",
                "tenant_id": "acme",
                "tags": ["hr"],
                "document_id": "acme-tainted-leave",
            }
        ]
    )
    indexing.document_store.update_by_filter(
        {"field": "meta.document_id", "operator": "==", "value": "acme-tainted-leave"}, {"tainted": True}
    )
    return data_dir


@pytest.fixture(scope="module")
def service(data_dir) -> EnrichmentService:
    return EnrichmentService.from_yaml("enrich", env={"SOURCEBOUND_DATA_DIR": str(data_dir)})


@pytest.fixture(scope="module")
def rag(data_dir) -> Pipeline:
    return load_pipeline("query", env={"SOURCEBOUND_DATA_DIR": str(data_dir)})


def sources(result: dict) -> list[str]:
    return [source["source_id"] for source in result["sources"]]


class TestEnrichmentService:
    def test_init_needs_declared_inputs(self):
        with pytest.raises(ValueError, match="declares no `inputs`"):
            EnrichmentService(Pipeline())

    @pytest.mark.parametrize("question", QUESTIONS)
    def test_run_hands_over_the_answers_context(self, service, rag, question):
        """The enrich sources are the chunks the RAG pipeline's budgeter passes to the answerer, in order."""
        result = service.enrich({"message": question, **ACME})
        EnrichResponse.model_validate(result)
        outputs = rag.run(
            {
                "classifier": {"query": question},
                "budgeter": {"query": question},
                "prompt_builder": {"query": question},
                "access_filter": dict(ACME),
                "guard": dict(ACME),
                "router": dict(ACME),
                "expander": {"tenant_id": ACME["tenant_id"]},  # no glossary here: the query as given
            },
            include_outputs_from={"budgeter", "prompt_builder"},
        )
        budgeted = outputs["budgeter"]["documents"]
        assert sources(result) == [f"{d.meta['document_id']}:{d.meta['chunk_index']}" for d in budgeted]
        assert result["tokens_used"] == outputs["budgeter"]["context_tokens_used"]
        assert result["context"] == outputs["prompt_builder"]["context"]

    def test_run_is_deterministic(self, service):
        request = {"message": LEAVE, **ACME}
        assert service.enrich(request) == service.enrich(request)

    def test_run_never_crosses_tenants(self, service):
        for question in QUESTIONS:
            result = service.enrich({"message": question, "tenant_id": "globex", "user_tags": ["people", "everyone"]})
            assert all(source.startswith("globex-") for source in sources(result)), question

    def test_run_user_scope_needs_the_user(self, service):
        question = "Priya Raman personal onboarding plan"
        anyone = service.enrich({"message": question, "top_k": 20, **ACME})
        priya = service.enrich({"message": question, "top_k": 20, "user_id": "u-acme-priya", **ACME})
        assert not any(source.startswith("acme-onboarding-priya:") for source in sources(anyone))
        assert any(source.startswith("acme-onboarding-priya:") for source in sources(priya))

    def test_run_tainted_chunks_are_excluded_unless_asked(self, service):
        default = service.enrich({"message": LEAVE, "top_k": 20, **ACME})
        assert not any(source.startswith("acme-tainted-leave:") for source in sources(default))
        included = service.enrich({"message": LEAVE, "top_k": 20, "filters": {"exclude_tainted": False}, **ACME})
        assert any(source.startswith("acme-tainted-leave:") for source in sources(included))
        assert service.enrich({"message": LEAVE, "filters": {"verified_only": True}, **ACME})["sources"] == []

    def test_run_top_k(self, service):
        assert len(service.enrich({"message": LEAVE, "top_k": 2, **ACME})["sources"]) == 2

    @pytest.mark.parametrize(
        "request_body",
        [
            {"message": " ", **ACME},
            {"message": "x\x00y", **ACME},
            {"message": LEAVE, "query": LEAVE, **ACME},
            {"message": LEAVE, "top_k": 0, **ACME},
            {"message": LEAVE, "tenant_id": "acme", "user_tags": []},
            {"message": LEAVE, "filters": {"tenant_id": "globex"}, **ACME},
        ],
    )
    def test_run_rejects_bad_requests(self, service, request_body):
        with pytest.raises(ValidationError):
            service.enrich(request_body)
