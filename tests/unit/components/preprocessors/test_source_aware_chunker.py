"""SourceAwareChunker: specs and ADRs whole when they fit, README sections by paragraphs, code blocks kept whole."""

import pytest
from haystack import Document
from support.indexing_support import sentences

from components.converters.source_readers import split_markdown_sections
from components.preprocessors.source_aware_chunker import SourceAwareChunker, fenced_segments
from components.preprocessors.token_chunker import TokenChunker, count_tokens

pytestmark = pytest.mark.unit

ADR = """# 0007. Use git for the handbook

Date: 2026-11-02

## Status

Accepted.

## Decision

We keep the handbook in git and review every change.
"""


def sections(text: str, **meta) -> list[Document]:
    return [
        Document(
            content=section.text, meta={"tenant_id": "acme", "document_id": "doc-1", "section": section.heading, **meta}
        )
        for section in split_markdown_sections(text)
    ]


@pytest.fixture(scope="module")
def chunker():
    return SourceAwareChunker()  # with the embedder's tokenizer, as in pipelines/indexing.yml


class TestWholeDocuments:
    @pytest.mark.parametrize(
        "meta",
        [
            {"source_path": "decisions/0007-use-git.md"},
            {"source_path": "docs/ADR/0007.md"},
            {"source_uri": "https://github.com/acme/handbook/blob/abc/adr/0007-use-git.md"},
            {"source_uri": "file:///srv/repo/docs/decisions/0007.md"},
        ],
    )
    def test_a_small_adr_is_one_chunk(self, chunker, meta):
        parts = sections(ADR, source_type="md", **meta)
        assert len(parts) == 3 and len(TokenChunker().run(documents=parts)["documents"]) == 3
        chunks = chunker.run(documents=parts)["documents"]
        assert len(chunks) == 1
        assert "Use git for the handbook" in chunks[0].content and "review every change" in chunks[0].content
        assert chunks[0].meta["section"] is None and chunks[0].meta["token_count"] == count_tokens(chunks[0].content)

    def test_a_yaml_spec_is_whole_and_other_markdown_is_not(self, chunker):
        spec = "service: billing\nowner: payments\n" + "".join(f"endpoint_{n}: /v1/items/{n}\n" for n in range(12))
        chunks = chunker.run(documents=[Document(content=spec, meta={"document_id": "s", "source_type": "yaml"})])
        assert [chunk.content for chunk in chunks["documents"]] == [spec.strip()]
        readme = sections(ADR, source_type="md", source_path="README.md")
        assert len(chunker.run(documents=readme)["documents"]) == 3

    def test_a_large_adr_is_split_like_any_document(self, chunker):
        big = ADR + "\n## Consequences\n\n" + "\n\n".join(sentences("handbook", 8, start) for start in range(0, 40, 8))
        parts = sections(big, source_path="adr/0008.md")
        chunks = chunker.run(documents=parts)["documents"]
        assert len(chunks) > 1 and all(chunk.meta["token_count"] <= 200 for chunk in chunks)

    def test_documents_are_grouped_by_their_id(self, chunker):
        first = sections(ADR, source_path="adr/1.md")
        second = [Document(content=p.content, meta={**p.meta, "document_id": "doc-2"}) for p in first]
        chunks = chunker.run(documents=first + second)["documents"]
        assert [chunk.meta["document_id"] for chunk in chunks] == ["doc-1", "doc-2"]


class TestCodeBlocks:
    def test_fenced_segments(self):
        text = "Intro.\n\n```python\nx = 1\n\n## not a heading\n```\n\nAfter.\n~~~\nopen"
        assert fenced_segments(text) == [
            (False, "Intro.\n"),
            (True, "```python\nx = 1\n\n## not a heading\n```"),
            (False, "\nAfter."),
            (True, "~~~\nopen"),
        ]

    def test_a_code_block_is_never_split_mid_block(self, chunker):
        code = "```bash\n" + "\n".join(f"make step-{n} TARGET=handbook-{n}" for n in range(15)) + "\n```"
        text = f"## Build\n\n{sentences('build', 9)}\n\n{code}\n\n{sentences('release', 9)}"
        assert 120 < count_tokens(code) <= 200
        plain = TokenChunker().run(documents=[Document(content=text, meta={"document_id": "r"})])["documents"]
        assert not any(code in chunk.content for chunk in plain)  # the plain chunker cuts the block
        chunks = chunker.run(documents=[Document(content=text, meta={"document_id": "r"})])["documents"]
        holding = [chunk for chunk in chunks if "make step-0" in chunk.content]
        assert len(holding) == 1 and code in holding[0].content
        assert all(chunk.meta["token_count"] <= 200 for chunk in chunks)
        assert "Sentence 0 explains how the build" in chunks[0].content
        assert "Sentence 8 explains how the release" in chunks[-1].content

    def test_small_neighbours_share_a_chunk_and_oversized_blocks_are_cut(self, chunker):
        text = "Run this:\n\n```\nmake docs\n```\n\nThen open the site."
        chunks = chunker.run(documents=[Document(content=text, meta={"document_id": "r"})])["documents"]
        assert [chunk.content for chunk in chunks] == [text]
        huge = "```\n" + "\n".join(f"line {n} of a generated table with values {n * 3}" for n in range(200)) + "\n```"
        chunks = chunker.run(documents=[Document(content=huge, meta={"document_id": "r"})])["documents"]
        assert len(chunks) > 1 and all(chunk.meta["token_count"] <= 200 for chunk in chunks)


class TestSerialisation:
    def test_round_trip_and_validation(self):
        chunker = SourceAwareChunker(chunk_size=100, chunk_overlap=20, max_tokens=110, embedder_tokenizer=None,
                                     whole_document_dirs=["rfcs"], keep_code_blocks=False)  # fmt: skip
        data = chunker.to_dict()
        assert data["type"] == "components.preprocessors.source_aware_chunker.SourceAwareChunker"
        assert data["init_parameters"]["whole_document_dirs"] == ["rfcs"]
        again = SourceAwareChunker.from_dict(data)
        assert (
            again.chunk_size == 100 and again.keeps_whole({"source_path": "rfcs/1.md"}) and not again.keep_code_blocks
        )
        with pytest.raises(ValueError, match="whole_document_dirs"):
            SourceAwareChunker(whole_document_dirs=[""])
