"""
Text helpers shared by the query components, so each rule lives in one place:

* SourceIds: the citation regex (docs/contract.md, "Documents, chunks and SourceIds"),
  formatting a chunk's SourceId, stripping markers from an answer.
* Words: a lower-cased word tokenizer for every script (docs/contract.md, "Languages"): letters, marks and
  digits of any alphabet form words; a run of Han characters (written without spaces) is cut into words by a
  dictionary segmenter. ASCII text is tokenised by the original ASCII pattern, so English tokens are exactly
  what they were. A light, deterministic English suffix normaliser (``policies`` -> ``policy``, ``days`` ->
  ``day``), the Snowball stemmer of an inflecting language (``content_words``: Russian, German, ...) and an
  English stopword list (with question fillers such as "name" and "called"), joined by the
  ``stopwords-iso`` list of the text's language when the text has non-ASCII letters. No model of ours, no
  randomness: the same text always gives the same tokens.
* Key phrases (for coverage): the text is cut into *runs* of consecutive content
  words (a stopword or a punctuation mark ends a run; a line break does not, as
  hard-wrapped text breaks lines mid-sentence).
  A run of one word gives that word as a phrase; a longer run gives each adjacent
  pair (bigram). So "employees receive 25 vacation days" gives
  ``employee receive``, ``receive 25``, ``25 vacation``, ``vacation day``.
  A phrase is *found* in a context when the context's own runs contain it.
* Near-duplicate text (for dedup): Jaccard similarity of word 3-shingles,
  O(words) per chunk and exact on identical text.
* Sentences (Latin, Cyrillic, Greek and CJK end punctuation), snippets and tiktoken token counts.
"""

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import regex
from haystack import Document

from components.core.language import detect_language, language_stopwords, segment_han, stem_word
from components.core.url_credentials import strip_userinfo

# The specification's citation pattern (v2, "Citation Mapping").
SOURCE_ID_PATTERN = r"\[SourceId:\s*([a-zA-Z0-9-]+:\d+)\]"
_SOURCE_ID_RE = re.compile(SOURCE_ID_PATTERN)

SNIPPET_CHARS = 200

STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because been before being below
    between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each
    either else etc even ever every few for from further get gets got had hadn't has hasn't have haven't having he
    he'd he'll he's her here here's hers herself him himself his how how's however i i'd i'll i'm i've if in into is
    isn't it it's its itself just let's like may me might more most much must mustn't my myself need neither no nor
    not now of off on once one only or other ought our ours ourselves out over own per please rather same shall
    shan't she she'd she'll she's should shouldn't so some such than that that's the their theirs them themselves
    then there there's these they they'd they'll they're they've this those though through thus to too under until
    up upon us very via was wasn't we we'd we'll we're we've were weren't what what's when when's where where's
    whether which while who who's whom whose why why's will with within without won't would wouldn't yes yet you
    you'd you'll you're you've your yours yourself yourselves tell know anything something thing things many
    name named called exactly actually really currently
    """.split()
)

_WORD_RE = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)*")
# The same word shape in every script (letters, combining marks, digits), except Han: a Han run is one match,
# cut into words by ``segment_han``.
_UNICODE_WORD_RE = regex.compile(r"(\p{Han}+)|[\p{L}\p{M}\p{N}--\p{Han}]+(?:['’][\p{L}\p{M}--\p{Han}]+)*", regex.V1)
_HAN_RE = regex.compile(r"\p{Han}")
_HAN_RUN_RE = regex.compile(r"\p{Han}+")
_NON_ASCII_LETTER_RE = regex.compile(r"[\p{L}--[\x00-\x7f]]", regex.V1)
# Characters that end a run of content words (besides stopwords). Line breaks do not: in
# hard-wrapped text they fall mid-sentence.
_RUN_BREAK_RE = re.compile(r"[.,;:!?()\[\]{}\"“”/|。，、；：！？（）「」『』《》„«»]+")
# A sentence ends at ``.!?`` (``;`` is the Greek question mark) followed by space and a capital or digit of any
# script, at the CJK ``。！？`` whether a space follows or not, and at ``!?`` right before a CJK character
# (NFKC turns the full-width ``！？`` into ASCII). For ASCII text this is exactly the ASCII rule.
_CJK = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}"
_SENTENCE_END_RE = regex.compile(
    rf"(?<=[.!?])\s+(?=[\"'“„«‹(\[]?[\p{{Lu}}\p{{Lt}}\p{{N}}{_CJK}])"
    rf"|(?<=[。！？｡])\s*(?=\S)|(?<=[!?])(?=[{_CJK}])|(?<=\p{{Greek}}[;])\s+(?=\p{{Lu}})"
)
# The same rule for ASCII text (where the Unicode classes reduce to ASCII ones and the CJK and Greek branches cannot
# match; `regex`'s \s is these six characters there), with the standard `re` engine: ~12x faster on a chunk's lines,
# and a request's reader splits every context chunk (tests check both agree on ASCII text).
_ASCII_SENTENCE_END_RE = re.compile(r"(?<=[.!?])[\t\n\x0b\x0c\r ]+(?=[\"'(\[]?[A-Z0-9])")


def find_source_ids(text: str) -> list[str]:
    """Every SourceId cited in ``text``, in order, duplicates kept."""
    return _SOURCE_ID_RE.findall(text or "")


def strip_source_ids(text: str) -> str:
    """``text`` without its ``[SourceId: ...]`` markers."""
    return _SOURCE_ID_RE.sub(" ", text or "")


def source_id_marker(source_id: str) -> str:
    """The marker an answer cites a chunk with."""
    return f"[SourceId: {source_id}]"


def source_id_of(document: Document) -> str:
    """
    A chunk's SourceId: ``{document_id}:{chunk_index}`` from its meta, which the data
    model makes equal to ``Document.id``; ``Document.id`` when the meta lacks them.
    """
    meta = document.meta or {}
    document_id, chunk_index = meta.get("document_id"), optional_int(meta.get("chunk_index"))
    if document_id and chunk_index is not None:
        return f"{document_id}:{chunk_index}"
    return str(document.id)


def document_id_of(document: Document) -> str:
    """The parent document's id (``meta.document_id``, else the part of the id before the last ``:``)."""
    meta = document.meta or {}
    if meta.get("document_id"):
        return str(meta["document_id"])
    return str(document.id).rsplit(":", 1)[0]


def source_url_of(document: Document) -> str | None:
    """
    A chunk's link for citing (docs/contract.md, "Sources"): its document's ``source_uri`` when that is an
    http(s) URL or the file's address in a declared git source (``commit_sha`` set: the operator's remote),
    else ``None`` (an upload's server-side file path is no use to a caller and says where the data lives).
    Never with a ``user:password@`` (``components.core.url_credentials``).
    """
    meta = document.meta or {}
    uri = meta.get("source_uri")
    if isinstance(uri, str) and (uri.lower().startswith(("http://", "https://")) or meta.get("commit_sha")):
        return strip_userinfo(uri)  # chunks indexed before URLs lost their credentials still show none
    return None


def source_title_of(document: Document) -> str:
    """A chunk's document title for a link: its ``document_name`` (the heading or file name), else its id."""
    name = (document.meta or {}).get("document_name")
    return str(name) if isinstance(name, str) and name.strip() else document_id_of(document)


def chunk_fields(document: Document, none_value: str = "N/A") -> dict[str, Any]:
    """The fields of the context-chunk format (docs/contract.md, "Prompts") for one document."""
    meta = document.meta or {}
    page, section = meta.get("page_number"), meta.get("section")
    return {
        "source_id": source_id_of(document),
        "document_name": meta.get("document_name") or document_id_of(document),
        "page_number": none_value if page in (None, "") else page,
        "section": none_value if section in (None, "") else section,
        "content": document.content or "",
    }


def optional_int(value: Any) -> int | None:
    """``value`` as an int (``4``, ``"4"``), or ``None`` when it is missing or not a whole number."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if number.is_integer() else None


def chunk_index_of(document: Document) -> int:
    """A chunk's index: ``meta.chunk_index``, else the number after the last ``:`` of its SourceId (0 if none)."""
    index = optional_int((document.meta or {}).get("chunk_index"))
    if index is None:
        index = optional_int(source_id_of(document).rsplit(":", 1)[-1])
    return index if index is not None else 0


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """The first ``limit`` characters of ``text``, with ``...`` appended when cut."""
    text = text or ""
    return text if len(text) <= limit else text[:limit] + "..."


def normalize_word(word: str) -> str:
    """Lower-case a word and strip common English inflections deterministically."""
    word = word.lower().replace("’", "'")
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def tokens(text: str) -> list[str]:
    """
    Word tokens of ``text`` in their original case, in order: the ASCII pattern for ASCII text; otherwise words of
    every script, each Han run cut into dictionary words.
    """
    text = text or ""
    if text.isascii():
        return _WORD_RE.findall(text)
    found: list[str] = []
    for match in _UNICODE_WORD_RE.finditer(text):
        if match.group(1):
            found.extend(segment_han(match.group(1)))
        else:
            found.append(match.group(0))
    return found


def keyword_text(text: str) -> str:
    """
    ``text`` prepared for a keyword (BM25) tokenizer that splits at spaces and punctuation: each run of Han
    characters becomes its dictionary words separated by spaces (``带薪年假`` -> ``带薪 年 假``), so a Chinese
    term is a token of its own. Text without Han characters is returned unchanged.
    """
    text = text or ""
    if text.isascii() or not _HAN_RE.search(text):
        return text
    return _HAN_RUN_RE.sub(lambda match: f" {' '.join(segment_han(match.group(0)))} ", text)


def words(text: str) -> list[str]:
    """Lower-cased word tokens (no normalisation), in order."""
    return list(map(str.lower, tokens(text)))


@lru_cache(maxsize=4096)
def text_language(text: str) -> str | None:
    """
    The language whose stopwords apply to ``text``: ``"en"`` when it has no non-ASCII letter (the English rules
    stay as they were), else the detected language (``None`` when undetermined).
    """
    if text.isascii() or not _NON_ASCII_LETTER_RE.search(text):
        return "en"
    return detect_language(text)


def stopwords_for(language: str | None) -> frozenset[str]:
    """The English stopwords, joined by ``language``'s (ISO 639-1) when it is another language."""
    if language in (None, "en"):
        return STOPWORDS
    return _joined_stopwords(language)


@lru_cache(maxsize=32)
def _joined_stopwords(language: str) -> frozenset[str]:
    return STOPWORDS | language_stopwords(language)


def is_content_word(word: str, stopwords: frozenset[str] = STOPWORDS) -> bool:
    """A word that carries meaning: not a stopword, and a number, 2+ letters, or a Han word."""
    lowered = word.lower().replace("’", "'")
    return lowered not in stopwords and (lowered.isdigit() or len(lowered) >= 2 or bool(_HAN_RE.match(lowered)))


def normalize_term(word: str, language: str | None = None) -> str:
    """
    ``word`` as the reader compares it: its Snowball stem in a language that inflects words and has a stemmer
    (``components.core.language.stem_word``), else :func:`normalize_word` (English, Chinese, ...).
    """
    return stem_word(word.lower().replace("’", "'"), language) or normalize_word(word)


def content_words(text: str, language: str | None = None) -> list[str]:
    """
    Normalised content words of ``text``, in order (duplicates kept).

    :param language: The text's language (ISO 639-1), when the caller knows it better than a guess from the text
        itself (a chunk's ``language``); ``None``: :func:`text_language`.
    """
    return list(_content_words(text or "", language or text_language(text or "")))


# The reader analyses the same context sentences request after request: their words are worth keeping (~10 MB).
@lru_cache(maxsize=16384)
def _content_words(text: str, language: str | None) -> tuple[str, ...]:
    stopwords = stopwords_for(language)
    return tuple(normalize_term(token, language) for token in tokens(text) if is_content_word(token, stopwords))


def content_runs(text: str) -> list[list[str]]:
    """Runs of consecutive normalised content words; stopwords and punctuation end a run."""
    runs: list[list[str]] = []
    text = strip_source_ids(text)
    stopwords = stopwords_for(text_language(text))
    for segment in _RUN_BREAK_RE.split(text):
        current: list[str] = []
        for token in tokens(segment):
            if is_content_word(token, stopwords):
                current.append(normalize_word(token))
            elif current:
                runs.append(current)
                current = []
        if current:
            runs.append(current)
    return runs


def key_phrases(text: str) -> list[str]:
    """
    The key phrases of ``text`` (see module doc), unique, in order of first appearance.
    SourceId markers are stripped first.
    """
    phrases: dict[str, None] = {}
    for run in content_runs(text):
        if len(run) == 1:
            phrases[run[0]] = None
        else:
            for first, second in zip(run, run[1:]):
                phrases[f"{first} {second}"] = None
    return list(phrases)


def phrase_index(text: str) -> set[str]:
    """Every unigram and adjacent-pair phrase of ``text``'s content runs, for membership tests."""
    index: set[str] = set()
    for run in content_runs(text):
        index.update(run)
        index.update(f"{first} {second}" for first, second in zip(run, run[1:]))
    return index


# The dedup step shingles the same retrieved chunks request after request (a frozenset is immutable: safe to share).
@lru_cache(maxsize=4096)
def shingles(text: str, size: int = 3) -> frozenset[tuple[str, ...]]:
    """Word ``size``-shingles of ``text``; a text shorter than ``size`` words is one shingle."""
    tokens = words(text)
    if len(tokens) <= size:
        return frozenset([tuple(tokens)]) if tokens else frozenset()
    # zip over shifted views builds the tuples in C (the dedup step runs this for every candidate chunk).
    return frozenset(zip(*(tokens[offset:] for offset in range(size))))


def jaccard(first: frozenset, second: frozenset) -> float:
    """Jaccard similarity of two sets; two empty sets are identical (1.0)."""
    if not first and not second:
        return 1.0
    shared = len(first & second)  # |A ∪ B| = |A| + |B| - |A ∩ B|: no union set is built
    return shared / (len(first) + len(second) - shared)


def jaccard_bound(first: frozenset, second: frozenset) -> float:
    """An upper bound of ``jaccard(first, second)`` from the sizes alone (the smaller set inside the larger)."""
    larger = max(len(first), len(second))
    return min(len(first), len(second)) / larger if larger else 1.0


_BLOCK_START_RE = re.compile(r"^\s*(?:#{1,6}\s+|[-*+•]\s+|\d+[.)]\s+|\|)")
_STANDALONE_RE = re.compile(r"^\s*(?:#{1,6}\s+|\|)")


def _logical_lines(text: str) -> list[str]:
    """
    Re-join hard-wrapped lines: a line continues the previous one unless it is blank,
    or starts a heading, a list item or a table row (each of which is its own line).
    """
    lines: list[str] = []
    current: list[str] = []
    for raw in (text or "").splitlines():
        if not raw.strip() or _BLOCK_START_RE.match(raw):
            if current:
                lines.append(" ".join(current))
            current = [raw.strip()] if raw.strip() else []
            if current and _STANDALONE_RE.match(raw):
                # Headings and table rows never continue onto the next line.
                lines.append(current[0])
                current = []
            continue
        current.append(raw.strip())
    if current:
        lines.append(" ".join(current))
    return lines


# Languages that write ordinal numbers with a dot (German "am 31. März"): there a number and a dot end no sentence.
_ORDINAL_DOT_LANGUAGES = frozenset({"de", "pl", "cs", "sk", "da", "nb", "no", "fi", "hu", "sl", "hr", "sr", "et", "lv"})
_ORDINAL_END_RE = re.compile(r"(?<![\d.,])\b\d{1,2}\.$")
# A part can end with an ordinal only where the text has a digit, a dot and a space (the split that made the part):
# without one there is nothing to re-join, so the language need not be detected (~10 ms for a non-ASCII chunk).
_ORDINAL_CANDIDATE_RE = regex.compile(r"\d\.\s")


def sentence_blocks(text: str) -> list[list[str]]:
    """
    The sentences of ``text`` grouped by block: a paragraph, a list item, a heading, a table row,
    or a reference entry (a term line and its indented description, which hard-wrapping joins).
    A block's later sentences continue what its first one introduced (docs/contract.md, "Answers").
    Sentences end as :func:`split_sentences` says.
    """
    blocks: list[list[str]] = []
    ordinal_dots = bool(_ORDINAL_CANDIDATE_RE.search(text or "")) and text_language(text) in _ORDINAL_DOT_LANGUAGES
    for line in _logical_lines(text):
        line = re.sub(r"^\s*(?:#{1,6}\s+|[-*+•]\s+|\d+[.)]\s+)", "", line).strip()
        if not line:
            continue
        pattern = _ASCII_SENTENCE_END_RE if line.isascii() else _SENTENCE_END_RE
        parts = [part.strip() for part in pattern.split(line) if part.strip()]
        if ordinal_dots:
            parts = join_ordinals(parts)
        if parts:
            blocks.append(parts)
    return blocks


def split_sentences(text: str) -> list[str]:
    """
    Split text into sentences. Hard-wrapped lines are joined first; a blank line,
    heading, list item or table row ends a sentence, and so does ``.!?`` followed by
    whitespace and a capital (of any script), digit or opening quote/bracket, and a CJK ``。！？``. In
    languages that write ordinals with a dot (German ``31. März``), a one- or two-digit number before the dot
    ends no sentence. Markdown heading and list markers are removed.
    """
    return [sentence for block in sentence_blocks(text) for sentence in block]


def is_caps_heading(sentence: str) -> bool:
    """
    An ALL-CAPS line ("YOUR ONBOARDING BUDDY") is a heading, not an answer. A script without case (Chinese,
    Japanese) never makes a line a heading: ``upper()`` leaves its letters as they are.
    """
    return sentence.upper() == sentence and not any(
        character.isalpha() and character.upper() == character.lower() for character in sentence
    )


def reading_sentences(text: str, min_sentence_words: int) -> list[tuple[int, int, int, str]]:
    """
    The sentences of a chunk the reader may answer with (docs/reader.md), as ``(position, block,
    block_position, sentence)``: fragments shorter than ``min_sentence_words`` and ALL-CAPS headings are labels,
    not answers, and are left out (``position`` still counts them). The query pipeline's splitter and the
    indexing pipeline's sentence vectors select sentences with this one function, so their texts agree.
    """
    selected = []
    position = -1
    for block, block_sentences in enumerate(sentence_blocks(text)):
        for block_position, sentence in enumerate(block_sentences):
            position += 1
            if len(words(sentence)) >= min_sentence_words and not is_caps_heading(sentence):
                selected.append((position, block, block_position, sentence))
    return selected


def join_ordinals(parts: list[str], text: str | None = None) -> list[str]:
    """
    Re-join sentence parts cut after an ordinal number (``bis zum 31. März``). With ``text``, only when its
    language writes ordinals with a dot (German, Polish, ...); without it, always.
    """
    if text is not None and text_language(text) not in _ORDINAL_DOT_LANGUAGES:
        return parts
    joined: list[str] = []
    for part in parts:
        if joined and _ORDINAL_END_RE.search(joined[-1]):
            joined[-1] = f"{joined[-1]} {part}"
        else:
            joined.append(part)
    return joined


@lru_cache(maxsize=4)
def _encoding(name: str):
    import tiktoken

    return tiktoken.get_encoding(name)


def count_tokens(text: str, encoding: str = "cl100k_base") -> int:
    """
    tiktoken token count of ``text``. Special-token strings in user text are counted
    as plain text (never rejected).
    """
    if not text:
        return 0
    return len(_encoding(encoding).encode(text, disallowed_special=()))


def truncate_tokens(text: str, max_tokens: int, encoding: str = "cl100k_base") -> str:
    """The longest start of ``text`` of at most ``max_tokens`` tiktoken tokens (``text`` itself when it fits)."""
    if max_tokens <= 0:
        return ""
    tokens = _encoding(encoding).encode(text or "", disallowed_special=())
    if len(tokens) <= max_tokens:
        return text
    return _encoding(encoding).decode(tokens[:max_tokens])


def validate_encoding(encoding: str) -> None:
    """Fail early, at init, on an unknown tiktoken encoding name."""
    try:
        _encoding(encoding)
    except (KeyError, ValueError) as error:
        raise ValueError(f"Unknown tiktoken encoding {encoding!r}; use cl100k_base or o200k_base.") from error


def unique(items: Iterable[str]) -> list[str]:
    """Items without duplicates, in order of first appearance."""
    return list(dict.fromkeys(items))
