"""SourceIdPromptBuilder (specification test_build_context_with_source_ids)."""

import pytest
from haystack import Document

from components.builders.source_id_prompt_builder import SourceIdPromptBuilder
from components.core.prompts import RAG_SYSTEM_PROMPT


def _docs() -> list[Document]:
    return [
        Document(
            id="doc-abc123:2",
            content="Employees receive 27 days of leave.",
            meta={
                "document_id": "doc-abc123",
                "chunk_index": 2,
                "document_name": "hr-handbook.pdf",
                "page_number": 4,
                "section": "Annual leave",
            },
        ),
        Document(
            id="faq:0",
            content="No page here.",
            meta={"document_id": "faq", "chunk_index": 0, "document_name": "faq.md"},
        ),
    ]


@pytest.mark.unit
class TestSourceIdPromptBuilder:
    def test_init(self):
        builder = SourceIdPromptBuilder()
        assert builder.system_prompt == RAG_SYSTEM_PROMPT
        with pytest.raises(ValueError, match="unknown fields"):
            SourceIdPromptBuilder(chunk_template="[SourceId: {source_id}] {content} {secret}")
        with pytest.raises(ValueError, match="not a valid"):
            SourceIdPromptBuilder(system_prompt="{context")

    def test_to_dict(self):
        data = SourceIdPromptBuilder(user_prompt="Q: {query}").to_dict()
        assert data["type"] == "components.builders.source_id_prompt_builder.SourceIdPromptBuilder"
        assert data["init_parameters"]["user_prompt"] == "Q: {query}"

    def test_from_dict(self):
        assert SourceIdPromptBuilder.from_dict(SourceIdPromptBuilder(none_value="-").to_dict()).none_value == "-"

    def test_build_context_with_source_ids(self):
        context = SourceIdPromptBuilder().run(query="q", documents=_docs())["context"]
        assert context == (
            "[SourceId: doc-abc123:2]\n"
            "[Document: hr-handbook.pdf]\n"
            "[Page: 4] [Section: Annual leave]\n"
            "---\n"
            "Employees receive 27 days of leave.\n"
            "---\n"
            "\n"
            "[SourceId: faq:0]\n"
            "[Document: faq.md]\n"
            "[Page: N/A] [Section: N/A]\n"
            "---\n"
            "No page here.\n"
            "---"
        )

    def test_run_messages(self):
        out = SourceIdPromptBuilder().run(
            query="How many days?", documents=_docs(), chat_history=[{"role": "user", "content": "hello"}]
        )
        system, user = out["messages"]
        assert system.role.value == "system" and user.role.value == "user" and user.text == "How many days?"
        assert system.text == out["prompt"]
        assert "answers questions based ONLY on the provided context" in system.text
        assert '"I don\'t have enough information in the available documents to answer this question."' in system.text
        assert out["context"] in system.text and "PREVIOUS CONVERSATION:\nuser: hello\n" in system.text

    def test_run_without_context_or_history(self):
        system = SourceIdPromptBuilder().run(query="q", documents=[])["messages"][0].text
        assert "(no context was retrieved)" in system and "PREVIOUS CONVERSATION:\n(none)" in system
