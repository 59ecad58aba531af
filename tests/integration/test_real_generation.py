"""
The Ollama pipeline on real model output (docs/contract.md, "Answers"): SmolLM2-135M on cyllama behind an
Ollama-API test server (tests/support/smollm_ollama.py; `make provision-llm`, part of `make test`, installs it).
Every sentence the model writes is judged by the answer verifier: kept only when it cites a context chunk that
supports it, and the answer is a decline when nothing is left. The model is far too small to answer well; these
tests assert that the checks run on its real output, not what it answers.
"""

import pytest
from support.query_corpus import sample_corpus_chunks, write_store
from support.smollm_ollama import SmolLMOllama, smollm_missing

from components.core.models import INSUFFICIENT_INFORMATION_ANSWER, RAGResponse
from components.extractors.citation_extractor import answer_sentences
from components.services.query_service import QueryService
from components.stores.tag_directory import TagDirectory

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ACME_HR = {"tenant_id": "acme", "user_tags": ["hr"]}
QUESTIONS = (
    "How many days of paid annual leave do full-time employees get?",
    "How many weeks of paid parental leave does Acme give?",
)


@pytest.fixture(scope="module")
def smollm():
    missing = smollm_missing()
    if missing:
        pytest.fail(f"The real-generation tests need SmolLM2 and cyllama: {missing}.")
    with SmolLMOllama() as server:
        yield server


@pytest.fixture(scope="module")
def service(tmp_path_factory, smollm):
    data_dir = tmp_path_factory.mktemp("real-generation")
    write_store(
        data_dir / "qdrant", [doc for doc in sample_corpus_chunks() if doc.meta["document_id"] == "acme-hr-handbook"]
    )
    TagDirectory(data_dir / "tags.sqlite").add_user("u-maria", "maria.lopez@acme.example")
    env = {
        "SOURCEBOUND_DATA_DIR": str(data_dir),
        "OLLAMA_BASE_URL": smollm.url,
        "CHAT_MODEL": "llama3.2",
        "RAG_TIMEOUT_SECONDS": "120",
        "SOURCEBOUND_DEBUG_REMOVED_SENTENCES": "true",
    }
    return QueryService.from_yaml(rag="query_ollama", search=None, env=env)


@pytest.mark.parametrize("question", QUESTIONS)
def test_every_generated_sentence_is_verified(service, smollm, question):
    before = len(smollm.generated)
    response = service.rag({"query": question, **ACME_HR})
    RAGResponse.model_validate(response)
    drafts = [entry["text"] for entry in smollm.generated[before:] if entry["kind"] == "answer"]
    assert len(drafts) == 1 and drafts[0].strip()  # the model really wrote this answer
    written = answer_sentences(drafts[0])
    removed = [entry["sentence"] for entry in response["removed_sentences"]]
    context_ids = {f"acme-hr-handbook:{index}" for index in range(20)}
    if response["action"] == "CITE":
        # What is left is what the model wrote, each sentence citing the context, the rest removed with a reason.
        kept = answer_sentences(response["answer"])
        assert len(kept) + len(removed) == len(written) and response["grounded"] is True
        assert all(citation["source_id"] in context_ids for citation in response["citations"])
    else:
        # Nothing the model wrote survived: the decline, never the draft, reaches the caller.
        assert response["answer"].startswith(INSUFFICIENT_INFORMATION_ANSWER)
        assert sorted(removed) == sorted(written) and "ungrounded_draft" not in response
    assert all(entry["reason"] in {"uncited", "unsupported", "declined"} for entry in response["removed_sentences"])
    # The classifier's prompt went to the model too (an unparsable reply falls back to the rules).
    assert "classify" in {entry["kind"] for entry in smollm.generated[before:]}


def test_generation_is_deterministic(service, smollm):
    first = service.rag({"query": QUESTIONS[0], **ACME_HR})
    second = service.rag({"query": QUESTIONS[0], **ACME_HR})
    assert first["answer"] == second["answer"] and first["removed_sentences"] == second["removed_sentences"]
