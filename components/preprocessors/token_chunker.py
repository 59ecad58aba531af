"""
A sentence- and paragraph-aware chunker that counts tokens with tiktoken.

Each input document (a Markdown or HTML section, a PDF page, a whole text) is
split on its own, so a chunk never spans two sections or pages; the Markdown
converter has already split at ``##`` headings.

Bounds (RAG Standard axiom A6, configured in ``pipelines/indexing.yml``):

* a chunk aims at ``chunk_size`` tokens and never exceeds ``max_tokens``;
  the only chunks above ``chunk_size`` are final chunks that absorb a short tail
  (so no tiny last chunk repeats the previous one), and they stay <= ``max_tokens``;
* consecutive chunks of one input overlap by ``chunk_overlap`` tokens, within
  +/-20 (the overlap starts at a sentence or paragraph start when one lies within
  a few tokens of the target, else at a word start);
* a chunk ends preferably at a paragraph end, then a sentence end, then a line
  end, then a word end, as long as it keeps at least ``min_fill`` of
  ``chunk_size`` (and more than the overlap); a single "word" longer than a chunk
  (a URL, base64) is cut at a token boundary.

The embedder reads only so many word pieces (all-MiniLM-L6-v2: 256, including
[CLS] and [SEP]) and silently drops the rest, which makes that text unfindable
by dense search. The chunker therefore checks its size against
``embedder_max_tokens`` at init (a loud warning when ``max_tokens`` tiktoken
tokens are likely to exceed it: on our corpora one cl100k token is ~1.1 word
pieces on prose and up to ~1.4 on technical text), and with
``embedder_tokenizer`` set it counts the real word pieces of every chunk and
shortens any chunk that would be truncated (logged; a warning when more than 5%
of a batch's chunks needed it).

Defaults (``chunk_size=180``, ``chunk_overlap=30``, ``max_tokens=200``) come from
measuring all-MiniLM-L6-v2's word pieces against cl100k tokens on our texts: at
200-220-token chunks 5.8% of technical chunks exceeded 256 word pieces, at
180-198 1.3% (those few are shortened), on prose none.

Usage:

```python
from haystack import Document
from components.preprocessors.token_chunker import TokenChunker

chunker = TokenChunker(chunk_size=180, chunk_overlap=30, max_tokens=200)
chunks = chunker.run(documents=[Document(content=long_text, meta={"section": "Intro"})])["documents"]
chunks[0].meta["token_count"]  # <= 200
```
"""

import functools
import logging
import math
import re
from pathlib import Path
from typing import Any

import tiktoken
from haystack import Document, component, default_from_dict, default_to_dict

from components.runtime.offline import resolve_model_reference

logger = logging.getLogger(__name__)

DEFAULT_ENCODING = "cl100k_base"
# Word pieces (all-MiniLM-L6-v2's BERT uncased vocab) per cl100k token, measured on
# chunks of the specifications (technical Markdown): median 1.15, p90 1.36; on prose
# (SQuAD, the sample corpus) ~1.0. Chunks of 180-198 tokens: 1.3% of technical
# chunks exceed 256 word pieces, 5.8% at 200-220, 10.9% at 220-242.
WORDPIECES_PER_TOKEN_MEDIAN = 1.15
WORDPIECES_PER_TOKEN_P90 = 1.36
# [CLS] and [SEP] take two of the embedder's positions.
SPECIAL_TOKENS = 2
OVERLAP_TOLERANCE = 20

_WHITESPACE = re.compile(r"\s+")
# Chunk-end boundaries, best first; the named group is the whitespace between the chunks.
_BOUNDARIES = (
    re.compile(r"(?P<gap>[ \t]*\n[ \t\r\f\v]*\n\s*)"),
    re.compile(r"[.!?\u2026\u3002][\"'\u201d\u2019)\]]*(?P<gap>\s+)"),
    re.compile(r"(?P<gap>[ \t]*\n\s*)"),
    re.compile(r"(?P<gap>\s+)"),
)
_SENTENCE_END = re.compile(r"[.!?\u2026\u3002][\"'\u201d\u2019)\]]*$")
# Cut-point priorities: a paragraph end beats a sentence end beats a line end beats a word end.
_PARAGRAPH, _SENTENCE, _LINE, _WORD = 3, 2, 1, 0


@functools.lru_cache(maxsize=8)
def get_encoding(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    """A tiktoken encoding (cached; offline thanks to ``components.runtime.offline``)."""
    return tiktoken.get_encoding(name)


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Number of tiktoken tokens of ``text``."""
    return len(get_encoding(encoding).encode(text, disallowed_special=()))


def safe_max_tokens(embedder_max_tokens: int, ratio: float = WORDPIECES_PER_TOKEN_P90) -> int:
    """The largest tiktoken chunk that fits ``embedder_max_tokens`` word pieces at ``ratio`` pieces per token."""
    return math.floor((embedder_max_tokens - SPECIAL_TOKENS) / ratio)


@component
class TokenChunker:
    """
    Splits documents into token-bounded, overlapping chunks at paragraph and sentence boundaries.

    Each chunk keeps its input document's meta (``section``, ``page_number``, ...) and gets
    ``token_count``. Chunk ids and ``chunk_index`` are assigned later by ``ChunkMetadataEnricher``.
    """

    def __init__(
        self,
        chunk_size: int = 180,
        chunk_overlap: int = 30,
        max_tokens: int | None = 200,
        encoding: str = DEFAULT_ENCODING,
        min_fill: float = 0.6,
        embedder_max_tokens: int | None = 256,
        embedder_tokenizer: str | None = "packaged:all-MiniLM-L6-v2",
    ) -> None:
        """
        Create the chunker.

        :param chunk_size: Target tokens per chunk, overlap included.
        :param chunk_overlap: Tokens repeated from the end of the previous chunk; below ``chunk_size / 2``.
        :param max_tokens: Hard maximum tokens per chunk; ``None`` means ``chunk_size`` + 10%.
        :param encoding: tiktoken encoding name.
        :param min_fill: A chunk may end early at a better boundary, but not below this share of ``chunk_size``.
        :param embedder_max_tokens: Word pieces the embedder reads (256 for all-MiniLM-L6-v2); ``None`` skips the check.
        :param embedder_tokenizer: Path of the embedder's tokenizer (``packaged:all-MiniLM-L6-v2`` works); when set,
            chunks are measured in real word pieces and shortened rather than truncated by the embedder.
            Keep it in step with the embedder's model; ``None`` only estimates (and warns).
        :raises ValueError: If the sizes are inconsistent.
        """
        if chunk_size < 8:
            raise ValueError(f"chunk_size must be at least 8 tokens, got {chunk_size}")
        if not 0 <= chunk_overlap < chunk_size // 2:
            raise ValueError(
                f"chunk_overlap must be >= 0 and below chunk_size / 2 ({chunk_size // 2}), got {chunk_overlap}"
            )
        if max_tokens is not None and max_tokens < chunk_size:
            raise ValueError(f"max_tokens ({max_tokens}) must be >= chunk_size ({chunk_size})")
        if not 0.1 <= min_fill <= 1.0:
            raise ValueError(f"min_fill must be between 0.1 and 1.0, got {min_fill}")
        if embedder_max_tokens is not None and embedder_max_tokens <= SPECIAL_TOKENS + 8:
            raise ValueError(f"embedder_max_tokens must be above {SPECIAL_TOKENS + 8}, got {embedder_max_tokens}")
        get_encoding(encoding)  # fail now on an unknown encoding

        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.max_tokens = max_tokens
        self.encoding = encoding
        self.min_fill = min_fill
        self.embedder_max_tokens = embedder_max_tokens
        self.embedder_tokenizer = embedder_tokenizer
        self._max = max_tokens if max_tokens is not None else chunk_size + chunk_size // 10
        self._tokenizer: Any = None
        self._shortened = 0
        self._check_embedder_limit()

    def _check_embedder_limit(self) -> None:
        # With the tokenizer, over-long chunks are shortened, so warn when that would be the rule (median text);
        # without it, they are truncated by the embedder, so warn when it would happen to technical text (p90).
        if self.embedder_max_tokens is None:
            return
        ratio = WORDPIECES_PER_TOKEN_MEDIAN if self.embedder_tokenizer else WORDPIECES_PER_TOKEN_P90
        estimate = math.ceil(self._max * ratio) + SPECIAL_TOKENS
        if estimate <= self.embedder_max_tokens:
            return
        consequence = (
            "most chunks will be shortened to fit, so chunk_size is not what you get"
            if self.embedder_tokenizer
            else "the embedder silently truncates the rest: that text gets no embedding and dense search never finds it"
        )
        logger.warning(
            "TokenChunker: chunks of up to %d tiktoken tokens are about %d word pieces, more than the %d the "
            "embedder reads; %s. Set max_tokens and chunk_size to %d or less in pipelines/indexing.yml.",
            self._max,
            estimate,
            self.embedder_max_tokens,
            consequence,
            safe_max_tokens(self.embedder_max_tokens, ratio),
        )

    def warm_up(self) -> None:
        """Load the embedder's tokenizer when ``embedder_tokenizer`` is set."""
        if self.embedder_tokenizer and self._tokenizer is None:
            from tokenizers import Tokenizer

            # The Rust tokenizer straight from tokenizer.json: ~10x faster than transformers' wrapper, and
            # serving imports no transformers (docs/embeddings.md). It must not truncate while counting.
            self._tokenizer = Tokenizer.from_file(
                str(Path(resolve_model_reference(self.embedder_tokenizer)) / "tokenizer.json")
            )
            self._tokenizer.no_truncation()
            self._tokenizer.no_padding()

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(
            self,
            chunk_size=self.chunk_size,
            chunk_overlap=self.chunk_overlap,
            max_tokens=self.max_tokens,
            encoding=self.encoding,
            min_fill=self.min_fill,
            embedder_max_tokens=self.embedder_max_tokens,
            embedder_tokenizer=self.embedder_tokenizer,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TokenChunker":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """
        Split each document into chunks.

        :param documents: Documents with text content; empty ones give no chunks.
        :returns: ``documents``: the chunks, in input order, each with meta ``token_count``.
        """
        if self.embedder_tokenizer and self._tokenizer is None:
            self.warm_up()
        self._shortened = 0
        chunks: list[Document] = []
        for document in documents:
            if not document.content or not document.content.strip():
                continue
            for start, end, tokens in self.split_text(document.content):
                meta = {**document.meta, "token_count": tokens}
                chunks.append(Document(content=document.content[start:end], meta=meta))
        if self._shortened:
            # A few shortened chunks are expected on technical text; many mean chunk_size is too large.
            level = logging.WARNING if self._shortened > 0.05 * len(chunks) else logging.INFO
            logger.log(
                level,
                "TokenChunker: %d of %d chunks were shortened to fit the embedder's %d word pieces; lower chunk_size "
                "in pipelines/indexing.yml if this happens often.",
                self._shortened,
                len(chunks),
                self.embedder_max_tokens,
            )
        return {"documents": chunks}

    # ------------------------------------------------------------------ splitting

    def _word_pieces(self, text: str) -> int:
        return len(self._tokenizer.encode(text).ids)

    def split_text(self, text: str) -> list[tuple[int, int, int]]:
        """
        Split one text into chunk spans.

        :param text: The text.
        :returns: ``(start, end, token_count)`` per chunk; ``text[start:end]`` is the chunk (no surrounding whitespace).
        """
        encoding = get_encoding(self.encoding)
        spans: list[tuple[int, int, int]] = []
        start, length = _strip(text, 0, len(text))
        previous_end = start
        while start < length:
            window_end, tokens = self._window(text, start, length)
            # The rest fits in one chunk: take it whole, so a short tail joins its predecessor.
            if window_end == length and len(tokens) <= self._max + 8:
                fits, rest_tokens, _, _ = self._fits(text, start, length)
                if fits:
                    spans.append((start, length, len(rest_tokens)))
                    break
            limit = start + _prefix_chars(encoding, tokens, self.chunk_size)
            # A chunk shorter than the overlap could not give the next one its overlap.
            floor_tokens = min(
                self.chunk_size, max(int(self.chunk_size * self.min_fill), self.chunk_overlap + OVERLAP_TOLERANCE)
            )
            floor = max(start + _prefix_chars(encoding, tokens, floor_tokens), previous_end + 1)
            end, resume = _choose_end(text, max(start, previous_end), floor, limit)
            fits, chunk_tokens, allowed_share, embedder_bound = self._fits(text, start, end)
            self._shortened += int(embedder_bound)
            while not fits:
                # Too long by the exact count or the word pieces: aim just below the allowed share of this
                # chunk and take the best boundary in the last 15% before that point.
                target = max(1, int(len(chunk_tokens) * allowed_share) - 1)
                new_limit = start + _prefix_chars(encoding, chunk_tokens, target)
                new_floor = start + _prefix_chars(encoding, chunk_tokens, int(target * 0.85))
                new_end, new_resume = _choose_end(text, start, new_floor, new_limit)
                if not start < new_end < end:
                    if not start < new_limit < end:
                        break  # a single token cannot be split further
                    new_end, new_resume = new_limit, new_limit
                end, resume = new_end, new_resume
                fits, chunk_tokens, allowed_share, _ = self._fits(text, start, end)
            chunk_start, chunk_end = _strip(text, start, end)
            spans.append((chunk_start, chunk_end, len(chunk_tokens)))
            previous_end = chunk_end
            next_start = self._next_start(encoding, text, chunk_start, chunk_end, chunk_tokens, resume)
            start, _ = _strip(text, next_start, length)
        return spans

    def _window(self, text: str, start: int, length: int) -> tuple[int, list[int]]:
        # Tokens of text[start:window_end], where the window holds more than a chunk or reaches the end.
        # Encoding a window per chunk keeps splitting linear in the text length.
        encoding = get_encoding(self.encoding)
        chars = (self._max + 16) * 6
        while True:
            window_end = min(length, start + chars)
            tokens = encoding.encode(text[start:window_end], disallowed_special=())
            if window_end == length or len(tokens) > self._max + 8:
                return window_end, tokens
            chars *= 2

    def _fits(self, text: str, start: int, end: int) -> tuple[bool, list[int], float, bool]:
        """
        Measure the stripped span ``text[start:end]``.

        :returns: whether it fits, its tiktoken tokens, the share of it that would fit (1.0 when it fits),
            and whether the embedder's word pieces (not ``max_tokens``) were the binding limit.
        """
        start, end = _strip(text, start, end)
        chunk = text[start:end]
        tokens = get_encoding(self.encoding).encode(chunk, disallowed_special=())
        if len(tokens) > self._max:
            return False, tokens, self._max / len(tokens), False
        if self._tokenizer is not None and self.embedder_max_tokens:
            pieces = self._word_pieces(chunk)
            if pieces > self.embedder_max_tokens:
                return False, tokens, self.embedder_max_tokens / pieces, True
        return True, tokens, 1.0, False

    def _next_start(self, encoding, text: str, start: int, end: int, tokens: list[int], resume: int) -> int:
        # The next chunk repeats about chunk_overlap tokens: start at the best boundary within a few tokens
        # of the target (paragraph or sentence start, then line start), else at the word start nearest it.
        if self.chunk_overlap == 0 or len(tokens) <= self.chunk_overlap:
            return resume
        keep = len(tokens) - self.chunk_overlap
        target = start + _prefix_chars(encoding, tokens, keep)
        low = start + _prefix_chars(encoding, tokens, max(1, keep - OVERLAP_TOLERANCE // 2))
        high = start + _prefix_chars(encoding, tokens, min(len(tokens) - 1, keep + OVERLAP_TOLERANCE // 2))
        best: tuple[int, int] | None = None  # (priority, next_start)
        for match in _WHITESPACE.finditer(text, max(start, low - 1), min(end, high)):
            resume_at = match.end()
            if not low <= resume_at <= high or resume_at <= start or resume_at >= end:
                continue
            priority = _priority(text, match)
            if priority == _WORD:
                priority = -1  # word starts compete on distance only
            key = (priority, -abs(resume_at - target))
            if best is None or key > (best[0], -abs(best[1] - target)):
                best = (priority, resume_at)
        candidate = best[1] if best else target
        if candidate <= start or candidate >= end:
            return resume  # never go backwards: no overlap rather than no progress
        return candidate


def _prefix_chars(encoding: tiktoken.Encoding, tokens: list[int], count: int) -> int:
    """Characters covered by the first ``count`` tokens (a character split by the cut is left out)."""
    if count >= len(tokens):
        count = len(tokens)
    return len(encoding.decode_bytes(tokens[:count]).decode("utf-8", errors="ignore"))


def _priority(text: str, match: re.Match) -> int:
    run = match.group()
    if run.count("\n") >= 2:
        return _PARAGRAPH
    if _SENTENCE_END.search(text, max(0, match.start() - 4), match.start()):
        return _SENTENCE
    if "\n" in run:
        return _LINE
    return _WORD


def _choose_end(text: str, after: int, floor: int, limit: int) -> tuple[int, int]:
    """
    Where a chunk ends: the best boundary in ``[floor, limit]`` (paragraph, then sentence, then line,
    then word end; the furthest of its kind), else the token boundary ``limit`` (inside a "word" longer
    than the rest of the chunk, such as a URL or base64; ending far below the floor would give tiny chunks).

    :returns: ``(end, next_start)``: the chunk is ``text[..:end]``; text resumes at ``next_start``.
    """
    for pattern in _BOUNDARIES:
        last = None
        for last in pattern.finditer(text, floor, limit + 1):  # noqa: B007 - only the last match counts
            pass
        if last is not None:
            gap_start, gap_end = last.span("gap")
            # The chunk must reach past `after` with real text, not just whitespace.
            if gap_start > after and not text[after:gap_start].isspace():
                return gap_start, gap_end
    return limit, limit


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    """Narrow ``text[start:end]`` to exclude surrounding whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end
