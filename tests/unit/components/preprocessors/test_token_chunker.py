"""TokenChunker: the A6 bounds (max tokens, <=10% overflow, overlap +/-20), boundaries, and the embedder limit."""

import hashlib
import logging

import pytest
from haystack import Document
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.indexing_support import sentences

from components.preprocessors.token_chunker import TokenChunker, count_tokens
from components.runtime.offline import embedding_model_path

TOLERANCE = 20


def overlap_text(previous: str, following: str) -> str:
    """The longest suffix of `previous` that starts `following` (texts of distinct sentences: unambiguous)."""
    for size in range(min(len(previous), len(following)), 0, -1):
        if previous.endswith(following[:size]):
            return following[:size]
    return ""


def assert_a6(text: str, spans: list[tuple[int, int, int]], chunker: TokenChunker) -> None:
    """Check the A6 bounds on the spans of one text, and that the chunks cover all of it."""
    limit = chunker.max_tokens or chunker.chunk_size + chunker.chunk_size // 10
    counts = [count_tokens(text[start:end]) for start, end, _ in spans]
    assert counts == [count for _, _, count in spans]
    over = [count for count in counts if count > limit]
    assert len(over) <= 0.1 * len(counts)  # the axiom's allowance ...
    assert not over, f"chunks over {limit}: {over}"  # ... which this chunker never needs
    for (_, previous_end, _), (next_start, _, _) in zip(spans, spans[1:], strict=False):
        overlap = count_tokens(text[next_start:previous_end]) if next_start < previous_end else 0
        assert abs(overlap - chunker.chunk_overlap) <= TOLERANCE, (overlap, text[next_start:previous_end])
        assert next_start >= previous_end or not text[next_start:previous_end].isspace()
        assert text[previous_end:next_start].strip() == ""  # no text falls between chunks
    assert text[: spans[0][0]].strip() == "" and text[spans[-1][1] :].strip() == ""


def wordpieces(texts: list[str]) -> list[int]:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(embedding_model_path(), local_files_only=True)
    return [len(ids) for ids in tokenizer(texts, truncation=False, verbose=False)["input_ids"]]


@pytest.mark.unit
class TestTokenChunker:
    def test_init(self):
        chunker = TokenChunker()
        assert (chunker.chunk_size, chunker.chunk_overlap, chunker.max_tokens) == (180, 30, 200)
        assert chunker.embedder_max_tokens == 256 and chunker.embedder_tokenizer == "packaged:all-MiniLM-L6-v2"

    @pytest.mark.parametrize(
        "params",
        [
            {"chunk_size": 4},
            {"chunk_overlap": 90},
            {"chunk_overlap": -1},
            {"max_tokens": 100},
            {"min_fill": 0},
            {"encoding": "nope"},
        ],
    )
    def test_init_rejects_inconsistent_sizes(self, params):
        with pytest.raises((ValueError, KeyError)):
            TokenChunker(**params)

    def test_to_dict(self):
        assert TokenChunker(chunk_size=100, chunk_overlap=20, max_tokens=110, embedder_tokenizer=None).to_dict() == {
            "type": "components.preprocessors.token_chunker.TokenChunker",
            "init_parameters": {
                "chunk_size": 100,
                "chunk_overlap": 20,
                "max_tokens": 110,
                "encoding": "cl100k_base",
                "min_fill": 0.6,
                "embedder_max_tokens": 256,
                "embedder_tokenizer": None,
            },
        }

    def test_from_dict(self):
        chunker = TokenChunker.from_dict(TokenChunker(chunk_size=64, chunk_overlap=10, max_tokens=None).to_dict())
        assert (chunker.chunk_size, chunker.chunk_overlap, chunker.max_tokens) == (64, 10, None)

    def test_run_bounds_overlap_and_sentence_ends(self):
        text = "\n\n".join(sentences("vacation", 9, start) for start in range(0, 90, 9))
        chunker = TokenChunker(embedder_tokenizer=None)
        chunks = [doc.content for doc in chunker.run(documents=[Document(content=text)])["documents"]]
        assert len(chunks) > 5
        assert_a6(text, chunker.split_text(text), chunker)
        for previous, following in zip(chunks, chunks[1:], strict=False):  # measured on the chunk texts too
            assert abs(count_tokens(overlap_text(previous, following)) - chunker.chunk_overlap) <= TOLERANCE
        assert all(chunk.endswith(".") for chunk in chunks)  # sentence-aware ends
        assert all(chunk[0].isupper() for chunk in chunks)  # ... and starts

    def test_run_prefers_paragraph_ends(self):
        paragraphs = [sentences(f"topic{number}", 4) for number in range(12)]  # ~60 tokens each
        text = "\n\n".join(paragraphs)
        chunks = TokenChunker(chunk_overlap=0, embedder_tokenizer=None).split_text(text)
        ends = [text[start:end] for start, end, _ in chunks]
        assert all(any(chunk.endswith(paragraph) for paragraph in paragraphs) for chunk in ends)

    def test_run_keeps_meta_and_counts_tokens(self):
        documents = [
            Document(content=sentences("a", 40), meta={"section": "One", "page_number": 3}),
            Document(content="Short section.", meta={"section": "Two"}),
            Document(content="   "),
        ]
        chunks = TokenChunker(embedder_tokenizer=None).run(documents=documents)["documents"]
        assert {chunk.meta["section"] for chunk in chunks} == {"One", "Two"}  # chunks never span inputs
        assert chunks[-1].content == "Short section."
        assert all(chunk.meta["token_count"] == count_tokens(chunk.content) for chunk in chunks)
        assert all(chunk.meta.get("page_number") == 3 for chunk in chunks if chunk.meta["section"] == "One")

    def test_run_short_tail_joins_the_last_chunk(self):
        text = sentences("tail", 17)  # a little more than one chunk
        chunks = TokenChunker(embedder_tokenizer=None).split_text(text)
        assert len(chunks) == 2 or chunks[-1][2] > 60

    def test_run_cuts_an_unbroken_string_at_token_bounds(self):
        blob = "".join(hashlib.sha256(str(number).encode()).hexdigest() for number in range(150))  # no spaces
        text = "start " + blob + " end."
        chunker = TokenChunker(embedder_tokenizer=None)
        spans = chunker.split_text(text)
        assert len(spans) > 10
        assert_a6(text, spans, chunker)

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        sizes=st.lists(st.integers(min_value=1, max_value=60), min_size=1, max_size=60),
        paragraph_every=st.integers(min_value=1, max_value=8),
        chunk_size=st.integers(min_value=60, max_value=300),
        overlap_share=st.floats(min_value=0.0, max_value=0.45),
    )
    def test_run_a6_properties_hold_for_any_text(self, sizes, paragraph_every, chunk_size, overlap_share):
        parts = []
        for number, size in enumerate(sizes):
            parts.append(" ".join(f"w{number}x{word}" for word in range(size)) + ".")
            parts.append("\n\n" if number % paragraph_every == paragraph_every - 1 else " ")
        text = "".join(parts)
        overlap = min(int(chunk_size * overlap_share), chunk_size // 2 - 1)
        chunker = TokenChunker(chunk_size=chunk_size, chunk_overlap=overlap, max_tokens=None, embedder_tokenizer=None)
        assert_a6(text, chunker.split_text(text), chunker)

    def test_init_warns_loudly_when_chunks_exceed_the_embedder(self, caplog):
        with caplog.at_level(logging.WARNING, logger="components.preprocessors.token_chunker"):
            TokenChunker(chunk_size=400, chunk_overlap=50, max_tokens=440, embedder_tokenizer=None)
        assert "more than the 256 the embedder reads" in caplog.text and "truncates" in caplog.text
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="components.preprocessors.token_chunker"):
            TokenChunker()
        assert caplog.text == ""

    def test_default_size_fits_the_embedder_on_prose(self):
        text = "\n\n".join(sentences("benefit", 10, start) for start in range(0, 100, 10))
        chunks = [
            doc.content
            for doc in TokenChunker(embedder_tokenizer=None).run(documents=[Document(content=text)])["documents"]
        ]
        assert max(wordpieces(chunks)) <= 256

    def test_run_shortens_chunks_the_embedder_would_truncate(self, caplog):
        # Punctuation-heavy text: few tiktoken tokens, many word pieces (BERT splits every symbol).
        row = "a ----- b ===== c ..... d"
        text = "\n".join(f"{row} {number}" for number in range(300))
        unchecked = TokenChunker(embedder_tokenizer=None).split_text(text)
        assert max(wordpieces([text[s:e] for s, e, _ in unchecked])) > 256  # the hazard is real
        with caplog.at_level(logging.WARNING, logger="components.preprocessors.token_chunker"):
            chunks = TokenChunker().run(documents=[Document(content=text)])["documents"]
        assert max(wordpieces([chunk.content for chunk in chunks])) <= 256
        assert "shortened to fit the embedder" in caplog.text
        assert all(chunk.meta["token_count"] <= 200 for chunk in chunks)
