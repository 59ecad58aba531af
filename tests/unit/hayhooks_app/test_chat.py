"""The OpenAI-compatible reply lists the cited documents once each, with their title and link."""

import json

import pytest

from hayhooks_app import chat

pytestmark = pytest.mark.unit

CITATION = {"document_name": "Guide", "chunk_index": 0, "relevance_score": 0.9, "snippet": "s", "snippet_full": "s"}
RESULT = {
    "answer": "Use make [SourceId: doc-a:0] and review [SourceId: doc-b:2] [SourceId: doc-a:1].",
    "action": "CITE",
    "citations": [
        {**CITATION, "source_id": "doc-a:0", "document_id": "doc-a", "title": "Guide", "url": "https://x.example/a"},
        {**CITATION, "source_id": "doc-b:2", "document_id": "doc-b", "title": "Notes", "url": None},
        {**CITATION, "source_id": "doc-a:1", "document_id": "doc-a", "title": "Guide", "url": "https://x.example/a"},
    ],
}


class TestReplySources:
    def test_each_cited_document_once_with_its_link(self):
        data = json.loads(chat.completion(RESULT, "chatcmpl-1", 1).model_dump_json())
        assert data["sourcebound"]["sources"] == [
            {
                "document_id": "doc-a",
                "title": "Guide",
                "url": "https://x.example/a",
                "source_ids": ["doc-a:0", "doc-a:1"],
            },
            {"document_id": "doc-b", "title": "Notes", "url": None, "source_ids": ["doc-b:2"]},
        ]
        last = list(chat.completion_chunks(RESULT, "chatcmpl-1", 1))[-1]
        assert json.loads(last.model_dump_json())["sourcebound"]["sources"][0]["url"] == "https://x.example/a"

    def test_no_citations_no_sources(self):
        assert chat.sourcebound_extra({"answer": "I don't know.", "citations": []})["sources"] == []
