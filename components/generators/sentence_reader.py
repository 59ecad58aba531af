"""
``SentenceReader``: the embedded answer backend's reading step (docs/reader.md).
No LLM and no model of its own: it reads the query embedding computed by the
pipeline's query embedder and the sentence embeddings computed by the pipeline's
sentence embedder (same model settings), so the same context and query always give
the same answer.

For every context sentence (from :class:`components.preprocessors.context_sentence_splitter.ContextSentenceSplitter`):

* ``similarity``: cosine similarity of the sentence's embedding to the query's;
* ``lexical``: the share of the query's content-term weight the sentence contains, a
  term weighing ``log(1 + N / (1 + df))`` over the N context sentences, so a rare,
  specific query word counts more than a common one, and a query word absent from the
  whole context weighs most of all;
* ``exact``: the share of the query's *exact terms* the sentence contains verbatim:
  numbers, option names (``--foo``, ``-x``), identifiers (``max_size``, ``os.path``,
  ``CamelCase``), quoted strings and capitalised names. 0 when the query has none.

``score = similarity + lexical_weight * lexical + exact_weight * exact``. For a question in one of
``lexical_only_languages`` (by default Chinese, Japanese and Korean, which the English embedding model does not
read: their sentences all look alike to it), ``similarity`` is replaced by ``lexical`` (docs/reader.md,
"Languages"). The answer is
the best sentence, plus the next best when it scores within ``second_sentence_gap`` of
it (at most ``max_sentences``, within ``max_answer_chars``), in document order, each
followed by its ``[SourceId: ...]``.

Declining is a calibrated decision on the same evidence (docs/reader.md, "Decline rule"): the reader
computes a handful of evidence features (the best sentence's similarity and term coverage, its lead over
the runner-up, the question's exact and rare terms the context or the chosen chunk lacks, whether the
asked-for kind of token is there, whether the dense and keyword sides agree, support across chunks, the
retrieval similarity) and a small logistic model (:class:`components.core.abstention_model.AbstentionModel`,
coefficients in a versioned JSON file named in YAML) turns them into the probability that the context
answers the question. Below the model's threshold the answer is the specification's "I don't have enough
information ..." sentence.

The ``evidence`` output carries the features, the probability and ``support``, the probability mapped
monotonically onto 0-1 with ``support_at_threshold`` at the decline boundary, which
:class:`components.scorers.hybrid_confidence_scorer.HybridConfidenceScorer` uses as its coverage part.
"""

import math
import re
import statistics
import time
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import regex
from haystack import Document, component, default_from_dict, default_to_dict

from components.core.abstention_model import AbstentionModel
from components.core.chunk_context import CONTEXT_HEADER_FIELD
from components.core.errors import ModelUnavailableError
from components.core.language import word_rarity
from components.core.models import INSUFFICIENT_INFORMATION_ANSWER
from components.core.similarity import cosine_similarity
from components.core.text_analysis import (
    STOPWORDS,
    content_words,
    is_content_word,
    normalize_term,
    source_id_marker,
    stopwords_for,
    text_language,
    tokens,
    words,
)

READER_MODEL_NAME = "extractive"
# The packaged abstention model: a bare file name is read from this folder (see ``SentenceReader``).
DEFAULT_ABSTENTION_MODEL = "sentence_reader_abstention.json"
_PACKAGE_DIR = Path(__file__).resolve().parent
# Sentences within this of the best score count as support for it from their chunk ("support_chunks").
_SUPPORT_BAND = 0.1
# How far past the best sentence, in reading order, an answer may be completed (docs/reader.md, "Blocks and completing
# an answer"): an entry's value follows its description within a sentence or two.
_COMPLETION_REACH = 2

# Exact terms of a query (see the module doc): matched verbatim, case-sensitively, in a sentence.
_OPTION_RE = re.compile(r"(?<![\w-])--?[A-Za-z][A-Za-z0-9_-]*")
_NUMBER_RE = re.compile(r"(?<![\w.])\d+(?:[.,:]\d+)*%?")
_IDENTIFIER_RE = re.compile(
    r"\b[A-Za-z_][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)+\b|\b[a-z]+[A-Z][A-Za-z0-9]*\b|\b[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*\b"
)
_QUOTED_RE = re.compile(r"[\"“`']([^\"”`']{2,60})[\"”`']")
# A capitalised word of any cased script (Latin, Cyrillic, Greek); on ASCII text this is ``[A-Z][A-Za-z0-9]*``.
# Hyphen-joined parts belong to the name ("Signed-By", "Saint-Clair"): each part alone is no word of the text.
_NAME_RE = regex.compile(r"\b[\p{Lu}\p{Lt}][\p{L}\p{M}\p{N}]*(?:-[\p{L}\p{M}\p{N}]+)*(?:['’]s)?\b")


# Languages that capitalise every noun: there a capital letter does not mark a name.
_NOUN_CAPITALISING_LANGUAGES = frozenset({"de", "lb"})
DEFAULT_LEXICAL_ONLY_LANGUAGES = ("zh", "ja", "ko")


# What kind of token answers a question (docs/reader.md, "Answer types"): a question asking for an amount,
# a time or a limit is answered by a number; one asking for an option, field or path by a code-like token; a
# place by a path or a name. A sentence that holds such a token the question does not is likelier the answer.
_QUANTITY_QUESTION_RE = re.compile(
    r"^\W*when\s+(?:is|are|was|were|do|does|did|will|would|can|could|should|shall|must|may|might|has|have|had)\b|"
    r"\b(?:how (?:many|much|long|often|far|big|large|old|soon|high|low)|what (?:year|date|time|size|"
    r"percentage|number|amount|duration|limit|maximum|minimum|ceiling|timeout|version)|which (?:\w+ )?(?:year|date|"
    r"version|release))\b",
    re.IGNORECASE,
)
_CODE_QUESTION_RE = re.compile(
    r"\b(?:which|what) (?:\w+ ){0,2}(?:option|flag|switch|field|key|keyword|setting|variable|parameter|prefix|"
    r"suffix|command|directive|argument|value|line|letters?|format|file|directory|path|tool|program|library|"
    r"name|mode|unit|action|type)s?\b",
    re.IGNORECASE,
)
_PLACE_QUESTION_RE = re.compile(r"^\W*where\b", re.IGNORECASE)
# "What is the default ...", "..., by default?": a default is a value, a number or a code-like token.
_VALUE_QUESTION_RE = re.compile(r"\bdefaults?\b", re.IGNORECASE)
_CODE_TOKEN_RE = re.compile(
    r"(?<![\w-])--?[A-Za-z][\w-]*|(?<!\w)/[\w.@%-]+(?:/[\w.@%-]+)*|\b\w+(?:[=:]|\(\d\))|[\"“`'][^\"”`']{1,40}[\"”`']|"
    r"\b[A-Za-z_][\w]*(?:[_.][\w]+)+\b|\b[a-z]+[A-Z]\w*\b|\b[A-Z][a-z0-9]+[A-Z]\w*\b"
)


# A manual page reference: a name and its section in parentheses ("deb(5)", "apt-transport-mirror(1)").
_REFERENCE_RE = re.compile(r"(?<=[\w.+-])\(\d[a-z]*\)")


def answer_type(query: str) -> str | None:
    """``quantity``, ``code``, ``place`` or ``value`` when the question asks for one (see above), else ``None``."""
    if _QUANTITY_QUESTION_RE.search(query):
        return "quantity"
    if _CODE_QUESTION_RE.search(query):
        return "code"
    if _PLACE_QUESTION_RE.search(query):
        return "place"
    if _VALUE_QUESTION_RE.search(query):
        return "value"
    return None


def has_answer_token(sentence: str, kind: str | None, query: str) -> bool:
    """Whether ``sentence`` holds a token of ``kind`` that the question itself does not contain."""
    if kind is None:
        return False
    if kind in ("quantity", "value"):
        # A manual's cross-reference ("systemd.time(5)") names a page section, not an amount.
        sentence = _REFERENCE_RE.sub(" ", sentence)
    if kind == "quantity":
        tokens = _NUMBER_RE.findall(sentence)
    elif kind == "code":
        tokens = _CODE_TOKEN_RE.findall(sentence)
    elif kind == "value":
        # A default is a value: an entry's key ("RuntimeDirectorySize=", "Signed-By:") names the setting, not its value.
        tokens = _NUMBER_RE.findall(sentence) + [
            t for t in _CODE_TOKEN_RE.findall(sentence) if not t.endswith(("=", ":"))
        ]
    else:
        tokens = _CODE_TOKEN_RE.findall(sentence) + [name for name in _NAME_RE.findall(sentence)[1:] if len(name) > 1]
    asked = query.lower()
    return any(token.strip("\"“”`'=:").lower() not in asked for token in tokens if token.strip("\"“”`'=:"))


_PERSON_QUESTION_RE = re.compile(r"^\W*(?:who|whom|whose)\b", re.IGNORECASE)
_NAME_QUESTION_RE = re.compile(r"\bnames?\b", re.IGNORECASE)


def names_not_asked(sentence: str, query: str) -> list[str]:
    """Capitalised words of ``sentence`` other than its first that are no stopword and not in the question."""
    asked = query.lower()
    return [
        name
        for name in _NAME_RE.findall(sentence)[1:]
        if len(name) > 1 and name.lower() not in STOPWORDS and name.lower() not in asked
    ]


def answer_type_missing(query: str, kind: str | None, chosen: list[dict[str, Any]]) -> bool:
    """
    Whether the question asks for a kind of token that no chosen sentence holds (``typed``): a number, a code-like
    token, a place or a value (``answer_type``); for a question starting with "who", a name; a question asking for
    a name of some kind ("What was the name of ...") is answered by a name as well as by a code-like token.
    """
    texts = [entry["sentence"].content or "" for entry in chosen]
    if kind is None:
        return bool(_PERSON_QUESTION_RE.match(query)) and not any(names_not_asked(text, query) for text in texts)
    if any(entry["typed"] for entry in chosen):
        return False
    return not (kind == "code" and _NAME_QUESTION_RE.search(query) and any(names_not_asked(t, query) for t in texts))


def question_rarities(query: str, language: str | None) -> dict[str, float]:
    """Each content term of the question (as ``content_words`` normalises it) and the rarity of its written form."""
    stopwords = stopwords_for(language or text_language(query))
    rarities: dict[str, float] = {}
    for token in tokens(query):
        if is_content_word(token, stopwords):
            term = normalize_term(token, language)
            rarities[term] = max(rarities.get(term, 0.0), word_rarity(token.lower(), language))
    return rarities


def exact_terms(query: str) -> list[str]:
    """
    The query's exact terms, in order, without duplicates: option names, numbers,
    identifiers, quoted strings, and capitalised words other than a sentence's first word
    (names, acronyms; not in German, which capitalises every noun). Stopwords are never names
    ("What does The ..." asks nothing by "The").
    """
    found: dict[str, None] = {}
    for pattern in (_OPTION_RE, _NUMBER_RE, _IDENTIFIER_RE):
        for match in pattern.finditer(query):
            found[match.group(0).rstrip(".,")] = None
    quoted = []
    for match in _QUOTED_RE.finditer(query):
        found[match.group(1).strip()] = None
        quoted.append(match.span())
    # A sentence's first word is capitalised anyway (a clarified query folds several sentences into one).
    sentence_starts = {match.start(1) for match in re.finditer(r"(?:^|[.!?]\s+)\W*(\w+)", query)}
    names = [] if text_language(query) in _NOUN_CAPITALISING_LANGUAGES else _NAME_RE.finditer(query)
    for match in names:
        # A word inside a quoted string belongs to that one term.
        if match.start() in sentence_starts or any(start <= match.start() < end for start, end in quoted):
            continue
        name = re.sub(r"['’]s$", "", match.group(0))
        if name.lower() not in STOPWORDS and len(name) > 1:
            found[name] = None
    return [term for term in found if term]


# A sentence with one of these among its first words refers back to the sentence before it ("In 2022 it was
# moved ..."); it is read together with that sentence's words (see ``SentenceReader.score_sentences``).
_ANAPHORS = frozenset(
    {"it", "its", "he", "his", "she", "her", "they", "their", "them", "this", "these", "those", "there"}
)
_ANAPHOR_WINDOW = 4


def refers_back(sentence: str) -> bool:
    """Whether a pronoun among the sentence's first words points to the sentence before it."""
    return any(word in _ANAPHORS for word in words(sentence)[:_ANAPHOR_WINDOW])


def fold_accents(text: str) -> str:
    """``text`` without combining accents (``Hervé`` -> ``Herve``): a question often drops what the text writes."""
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(character for character in decomposed if not unicodedata.combining(character))


def contains_exact(sentence: str, term: str) -> bool:
    """Whether ``term`` occurs in ``sentence`` verbatim (accents aside), not as part of a longer word or number."""
    sentence, term = fold_accents(sentence), fold_accents(term)
    # Not inside a longer word, option or number: "--retries" is not in "--retries-max", "11" not in "11.5".
    # A number keeps its unit compound ("512" is in "512-byte"), but not a longer number or a range ("11-12").
    after = r"(?!\w|[.,:]\w|-\d)" if term[0].isdigit() else r"(?!\w|[-.,:]\w)"
    return re.search(rf"(?<![\w-]){re.escape(term)}{after}", sentence) is not None


def cosines(query_embedding: list[float], embeddings: list[list[float] | None]) -> list[float]:
    """Cosine similarity of each embedding to the query's; 0 for a missing or all-zero vector."""
    present = [index for index, embedding in enumerate(embeddings) if embedding]
    result = [0.0] * len(embeddings)
    if not present or not query_embedding:
        return result
    matrix = np.asarray([embeddings[index] for index in present], dtype=np.float64)
    values = cosine_similarity(np.asarray(query_embedding, dtype=np.float64), matrix)
    for index, value in zip(present, values.tolist(), strict=True):
        result[index] = value
    return result


@component
class SentenceReader:
    """
    Usage:
    ```python
    reader = SentenceReader()
    out = reader.run(query="How many vacation days do employees get?", query_embedding=query_vector,
                     sentences=embedded_sentences)
    out["answer"]    # "Employees receive 25 vacation days per year. [SourceId: hr-handbook:2]"
    out["evidence"]  # {"support": 0.91, "decision": 0.83, "similarity": 0.71, "margin": 0.12, ...}
    ```
    """

    # run() changes none of its inputs and keeps none of them: the planned pipeline passes them without a defensive
    # copy (docs/contract.md, "Pipeline runs").
    reads_inputs_only = True

    def __init__(
        self,
        lexical_weight: float = 0.2,
        exact_weight: float = 0.1,
        answer_type_weight: float = 0.3,
        abstention_model: str = DEFAULT_ABSTENTION_MODEL,
        decision_threshold: float | None = None,
        second_sentence_gap: float = 0.25,
        support_at_threshold: float = 0.8,
        max_sentences: int = 3,
        max_answer_chars: int = 700,
        insufficient_answer: str = INSUFFICIENT_INFORMATION_ANSWER,
        model_name: str = READER_MODEL_NAME,
        lexical_only_languages: list[str] | None = None,
    ) -> None:
        """
        :param lexical_weight: Weight of the query's IDF-weighted term coverage in a sentence's score.
        :param exact_weight: Weight of the share of the query's exact terms (numbers, options, names) a sentence holds.
        :param answer_type_weight: Added, times the sentence's ``lexical`` share, to the score of a sentence holding
            the kind of token the question asks for (a number for "how long", an option or path for "which option")
            that the question lacks; 0 turns answer types (and completing an answer from its block) off.
        :param abstention_model: The abstention model file (``python -m evaluation.fit_abstention`` writes it). A
            bare file name is read from ``components/generators/`` (the packaged model); any other path as given.
        :param decision_threshold: Answer when the model's probability is at least this; ``None``: the threshold
            the model file names.
        :param second_sentence_gap: A second sentence is added when it scores within this of the best one.
        :param support_at_threshold: ``evidence.support`` at the decline boundary (0-1); answered questions get
            more, declined ones less.
        :param max_sentences: Most sentences in an answer.
        :param max_answer_chars: Length budget of an answer (SourceId markers included); the best sentence is
            always kept.
        :param insufficient_answer: The answer when the reader declines.
        :param model_name: Reported as ``model_used``; the only ``model`` a request may name for this backend.
        :param lexical_only_languages: ISO 639 codes of question languages the embedding model does not read; for
            them a sentence's lexical evidence stands in for its similarity. ``None``: ``["zh", "ja", "ko"]``.
        :raises AbstentionModelError: If the model file is missing or invalid.
        """
        for name, value in {
            "lexical_weight": lexical_weight,
            "exact_weight": exact_weight,
            "answer_type_weight": answer_type_weight,
            "second_sentence_gap": second_sentence_gap,
        }.items():
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a non-negative number, got {value!r}.")
        if decision_threshold is not None and (
            not isinstance(decision_threshold, (int, float))
            or isinstance(decision_threshold, bool)
            or not 0.0 < float(decision_threshold) < 1.0
        ):
            raise ValueError(f"decision_threshold must be null or within (0, 1), got {decision_threshold!r}.")
        if not isinstance(support_at_threshold, (int, float)) or not 0.0 < float(support_at_threshold) < 1.0:
            raise ValueError(f"support_at_threshold must be in (0, 1), got {support_at_threshold!r}.")
        if not isinstance(max_sentences, int) or isinstance(max_sentences, bool) or max_sentences < 1:
            raise ValueError(f"max_sentences must be a positive integer, got {max_sentences!r}.")
        if not isinstance(max_answer_chars, int) or max_answer_chars < 50:
            raise ValueError(f"max_answer_chars must be an integer >= 50, got {max_answer_chars!r}.")
        if not insufficient_answer or not model_name:
            raise ValueError("insufficient_answer and model_name must be non-empty.")
        if not isinstance(abstention_model, str) or not abstention_model:
            raise ValueError(f"abstention_model must be a file name or path, got {abstention_model!r}.")
        if lexical_only_languages is not None and (
            not isinstance(lexical_only_languages, list)
            or not all(isinstance(code, str) and code for code in lexical_only_languages)
        ):
            raise ValueError(
                f"lexical_only_languages must be a list of language codes, got {lexical_only_languages!r}."
            )
        self.lexical_weight = float(lexical_weight)
        self.exact_weight = float(exact_weight)
        self.answer_type_weight = float(answer_type_weight)
        self.abstention_model = abstention_model
        self.decision_threshold = None if decision_threshold is None else float(decision_threshold)
        self.second_sentence_gap = float(second_sentence_gap)
        self.support_at_threshold = float(support_at_threshold)
        self.max_sentences = max_sentences
        self.max_answer_chars = max_answer_chars
        self.insufficient_answer = insufficient_answer
        self.model_name = model_name
        self.lexical_only_languages = lexical_only_languages
        self._lexical_only = frozenset(
            DEFAULT_LEXICAL_ONLY_LANGUAGES if lexical_only_languages is None else lexical_only_languages
        )
        self._model = AbstentionModel.load(model_path(abstention_model))
        self.threshold = self._model.threshold if self.decision_threshold is None else self.decision_threshold

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(
            self,
            lexical_weight=self.lexical_weight,
            exact_weight=self.exact_weight,
            answer_type_weight=self.answer_type_weight,
            abstention_model=self.abstention_model,
            decision_threshold=self.decision_threshold,
            second_sentence_gap=self.second_sentence_gap,
            support_at_threshold=self.support_at_threshold,
            max_sentences=self.max_sentences,
            max_answer_chars=self.max_answer_chars,
            insufficient_answer=self.insufficient_answer,
            model_name=self.model_name,
            lexical_only_languages=self.lexical_only_languages,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SentenceReader":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    def health(self) -> dict[str, Any]:
        """The backend's health, for the service's health check (always reachable: it is in-process)."""
        return {"backend": "extractive", "model": self.model_name, "reachable": True}

    def score_sentences(
        self, query: str, query_embedding: list[float], sentences: list[Document]
    ) -> list[dict[str, Any]]:
        """
        Every sentence's evidence, in the order given: ``{sentence, similarity, lexical, exact, score}``.
        Sentences without an embedding get similarity 0 (they can still win on lexical evidence).
        A sentence that refers back with a pronoun ("In 2022 it was moved ...") is matched lexically together
        with the sentence before it in the same chunk, whose words name what the pronoun stands for.
        """
        return self._score(query, query_embedding, sentences)[0]

    def _score(
        self, query: str, query_embedding: list[float], sentences: list[Document]
    ) -> tuple[list[dict[str, Any]], dict[str, float]]:
        """``score_sentences`` and the query terms' weights (``log(1 + N / (1 + df))``) it used."""
        if not sentences:
            return [], {}
        query_terms = list(dict.fromkeys(content_words(query, context_language(query, sentences))))
        texts = []
        for index, sentence in enumerate(sentences):
            text = sentence.content or ""
            previous = sentences[index - 1] if index else None
            if previous is not None and _source(previous) == _source(sentence) and refers_back(text):
                text = f"{previous.content or ''} {text}"
            texts.append(text)
        terms_of = [
            set(content_words(text, _language(sentence))) for text, sentence in zip(texts, sentences, strict=True)
        ]
        frequency = Counter(term for terms in terms_of for term in set(query_terms) & terms)
        weights = {term: math.log(1.0 + len(sentences) / (1.0 + frequency[term])) for term in query_terms}
        total = sum(weights.values())
        exact = exact_terms(query)
        lexical_only = text_language(query) in self._lexical_only
        similarities = cosines(query_embedding, [sentence.embedding for sentence in sentences])
        kind = answer_type(query)
        scored = []
        for sentence, text, terms, similarity in zip(sentences, texts, terms_of, similarities, strict=True):
            lexical = sum(weights[term] for term in query_terms if term in terms) / total if total else 0.0
            if lexical_only:
                similarity = lexical
            exact_share = sum(1 for term in exact if contains_exact(text, term)) / len(exact) if exact else 0.0
            typed = has_answer_token(sentence.content or "", kind, query)
            # A token of the asked-for kind counts as far as the sentence is about the question's words.
            type_bonus = self.answer_type_weight * typed * lexical
            score = similarity + self.lexical_weight * lexical + self.exact_weight * exact_share + type_bonus
            scored.append(
                {
                    "sentence": sentence,
                    "similarity": similarity,
                    "lexical": lexical,
                    "exact": exact_share,
                    "typed": typed,
                    "type_bonus": type_bonus,
                    "score": score,
                }
            )
        return scored, weights

    def _completion(self, chosen: list[dict[str, Any]], scored: list[dict[str, Any]]) -> dict[str, Any] | None:
        """
        The sentence that completes the answer, when the question asks for a kind of token (a value, an option
        name) that the best sentence lacks: the nearest sentence holding one in the best sentence's own block
        ("This option forces TCP." + its entry's head "use-vc ..."), else among the next
        ``_COMPLETION_REACH`` sentences of the same document in reading order, which in a manual is the rest of
        the entry ("RuntimeDirectorySize= Sets the size limit ..." + "Defaults to 10%.", also when the value
        sits in the next chunk, read as a neighbour). Then the other chosen sentences' in rank order. ``None``
        when nothing needs or offers completing (a question without an answer type has no ``typed`` sentence).
        """
        if not self.answer_type_weight or not chosen or chosen[0]["typed"]:
            return None
        taken = {id(entry) for entry in chosen}
        in_order = sorted(scored, key=lambda entry: _order(entry["sentence"]))
        for anchor in sorted(chosen, key=lambda entry: -entry["score"]):
            if anchor["typed"]:
                continue
            meta = anchor["sentence"].meta or {}
            position = int(meta.get("position", 0))
            same_block = [
                entry
                for entry in scored
                if entry["typed"]
                and id(entry) not in taken
                and meta.get("block") is not None
                and _source(entry["sentence"]) == _source(anchor["sentence"])
                and (entry["sentence"].meta or {}).get("block") == meta.get("block")
            ]
            if same_block:
                return min(
                    same_block,
                    key=lambda entry: (
                        abs(int((entry["sentence"].meta or {}).get("position", 0)) - position),
                        _order(entry["sentence"]),
                    ),
                )
            start = next(index for index, entry in enumerate(in_order) if entry is anchor)
            document = meta.get("document_id")
            for entry in in_order[start + 1 : start + 1 + _COMPLETION_REACH]:
                if (entry["sentence"].meta or {}).get("document_id") != document:
                    break
                if entry["typed"] and id(entry) not in taken:
                    return entry
        return None

    def support(self, probability: float) -> float:
        """
        The model's probability mapped onto 0-1, monotonically: ``support_at_threshold`` at the decision threshold,
        linear to 0 at probability 0 below it and to 1 at probability 1 above it.
        """
        threshold, at = self.threshold, self.support_at_threshold
        if probability >= threshold:
            return min(1.0, at + (1.0 - at) * (probability - threshold) / (1.0 - threshold))
        return max(0.0, at * probability / threshold)

    def _choose(self, ranked: list[dict[str, Any]], scored: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The answer's sentences (best first, then close runners-up, then a completion), in document order."""
        best = ranked[0]
        chosen = [best]
        length = len(_part(best["sentence"]))
        for entry in ranked[1:]:
            if len(chosen) == self.max_sentences or entry["score"] < best["score"] - self.second_sentence_gap:
                break
            added = len(_part(entry["sentence"])) + 1
            if length + added <= self.max_answer_chars:
                chosen.append(entry)
                length += added
        completion = self._completion(chosen, scored)
        if completion is not None and length + len(_part(completion["sentence"])) + 1 <= self.max_answer_chars:
            chosen.append(completion)
        return sorted(chosen, key=lambda entry: _order(entry["sentence"]))

    def evidence_features(
        self,
        query: str,
        scored: list[dict[str, Any]],
        ranked: list[dict[str, Any]],
        chosen: list[dict[str, Any]],
        weights: dict[str, float],
    ) -> dict[str, float]:
        """
        The abstention model's features (docs/reader.md, "Decline rule"), each a plain number:

        * ``similarity``, ``lexical``: the best sentence's cosine to the query and its share of the query's
          rarity-weighted terms;
        * ``margin``: its lead over the runner-up, without the answer-type bonus;
        * ``missing_exact``: the share of the query's exact terms (numbers, options, names) no context sentence
          or chunk header holds;
        * ``missing_exact_in_answer``: the same share for the answer's own sentences (a name or number the
          question states that the chosen sentences do not: the answer is about something else);
        * ``missing_in_chunk``: the rarity-weighted share of the query's terms absent from the best sentence's
          whole chunk, its contextual header (document, section) included;
        * ``answer_token_support``: when the question asks for a kind of token (a number, an option, a place), the
          highest term coverage among answer sentences holding one it does not already name (0: none does);
          otherwise the best sentence's ``lexical``;
        * ``agreement``: 1 when the sentence nearest in meaning (the dense side) and the one holding most of the
          query's terms (the keyword side) come from the same chunk;
        * ``support_chunks``: log of the number of chunks holding a sentence within 0.1 of the best score;
        * ``retrieval``: the highest dense similarity of a context chunk;
        * ``similarity_lead``: the best sentence's similarity above the median similarity of the context's sentences
          (an embedding model that reads a language poorly gives every sentence a high similarity: the lead, not the
          level, says the sentence is about the question);
        * ``rare_term_missing``: the rarity in the language at large (``word_rarity``) of the rarest question word
          absent from the best sentence's chunk and its header (0: none is absent): a rare word the question
          hinges on ("bereavement") that the passage never uses;
        * ``number_missing``: 1 when a number the question states is in none of the answer's sentences;
        * ``answer_type_missing``: 1 when the question asks for a kind of token (a number, an option, a place; for
          "who", a name) and no answer sentence holds one it does not already name.
        """
        best = ranked[0]
        untyped_runner_up = max((entry["score"] - entry["type_bonus"] for entry in ranked[1:]), default=None)
        margin = 0.0 if untyped_runner_up is None else max(0.0, best["score"] - best["type_bonus"] - untyped_runner_up)
        headers = {_source(entry["sentence"]): _header(entry["sentence"]) for entry in scored}
        context_texts = [entry["sentence"].content or "" for entry in scored] + [h for h in headers.values() if h]
        terms = exact_terms(query)
        missing = sum(1 for term in terms if not any(contains_exact(text, term) for text in context_texts))
        source = _source(best["sentence"])
        chunk_terms = set(content_words(headers.get(source, ""), _language(best["sentence"])))
        for entry in scored:
            if _source(entry["sentence"]) == source:
                chunk_terms.update(content_words(entry["sentence"].content or "", _language(entry["sentence"])))
        answer_texts = [entry["sentence"].content or "" for entry in chosen]
        missing_from_answer = sum(1 for term in terms if not any(contains_exact(text, term) for text in answer_texts))
        total = sum(weights.values())
        missing_in_chunk = sum(w for term, w in weights.items() if term not in chunk_terms) / total if total else 0.0
        kind = answer_type(query)
        typed = [entry["lexical"] for entry in chosen if entry["typed"]]
        # The asked-for token counts as far as its sentence is about the question (a number in an unrelated
        # sentence is no answer); a question without an answer type is judged by its best sentence alone.
        answer_token_support = (max(typed) if typed else 0.0) if kind is not None else best["lexical"]
        dense_best = max(scored, key=lambda entry: (entry["similarity"], -_order(entry["sentence"])[0]))
        keyword_best = max(scored, key=lambda entry: (entry["lexical"], -_order(entry["sentence"])[0]))
        supporting = {_source(entry["sentence"]) for entry in ranked if entry["score"] >= best["score"] - _SUPPORT_BAND}
        retrieval = max(float((entry["sentence"].meta or {}).get("chunk_score") or 0.0) for entry in scored)
        language = context_language(query, [entry["sentence"] for entry in scored])
        numbers = _NUMBER_RE.findall(query)
        return {
            "similarity": float(best["similarity"]),
            "lexical": float(best["lexical"]),
            "margin": float(margin),
            "missing_exact": missing / len(terms) if terms else 0.0,
            "missing_in_chunk": float(missing_in_chunk),
            "missing_exact_in_answer": missing_from_answer / len(terms) if terms else 0.0,
            "answer_token_support": float(answer_token_support),
            "agreement": float(_source(dense_best["sentence"]) == _source(keyword_best["sentence"])),
            "support_chunks": math.log(len(supporting)),
            "retrieval": retrieval,
            "similarity_lead": float(best["similarity"] - statistics.median(entry["similarity"] for entry in scored)),
            "rare_term_missing": max(
                (rarity for term, rarity in question_rarities(query, language).items() if term not in chunk_terms),
                default=0.0,
            ),
            "number_missing": float(
                any(not any(contains_exact(text, number) for text in answer_texts) for number in numbers)
            ),
            "answer_type_missing": float(answer_type_missing(query, kind, chosen)),
        }

    def read(self, query: str, query_embedding: list[float], sentences: list[Document]) -> tuple[str, dict[str, Any]]:
        """The answer and its evidence (see the module doc)."""
        scored, weights = self._score(query, query_embedding, sentences)
        # Repeated sentences (overlapping chunks) count once: the first occurrence in context order.
        unique: dict[str, dict[str, Any]] = {}
        for entry in scored:
            unique.setdefault(" ".join(words(entry["sentence"].content)), entry)
        ranked = sorted(unique.values(), key=lambda entry: (-round(entry["score"], 9), _order(entry["sentence"])))
        if not ranked:
            evidence = {
                "support": 0.0,
                "decision": 0.0,
                "probability": 0.0,
                "threshold": self.threshold,
                "features": {},
                "model_version": self._model.version,
                "sentences": 0,
                "answered": False,
            }
            return self.insufficient_answer, evidence
        chosen = self._choose(ranked, scored)
        features = self.evidence_features(query, scored, ranked, chosen, weights)
        probability = self._model.probability(features)
        answered = probability >= self.threshold
        evidence = {
            "support": round(self.support(probability), 6),
            "decision": round(probability, 6),
            "probability": round(probability, 6),
            "threshold": self.threshold,
            "features": {name: round(value, 6) for name, value in features.items()},
            "model_version": self._model.version,
            "sentences": len(sentences),
            "answered": answered,
        }
        if not answered:
            return self.insufficient_answer, evidence
        return " ".join(_part(entry["sentence"]) for entry in chosen), evidence

    @component.output_types(answer=str, model_used=str, generation_time_ms=float, evidence=dict[str, Any])
    def run(
        self,
        query: str,
        sentences: list[Document],
        query_embedding: list[float] | None = None,
        model: str | None = None,
    ) -> dict[str, Any]:
        """
        :param query: The question (the retrieval query, which folds in a clarified turn).
        :param sentences: The context sentences with their embeddings (``meta.source_id``, ``chunk_rank``,
            ``position`` as the splitter sets them).
        :param query_embedding: The query's embedding from the pipeline's query embedder (same model as the
            sentences'); without it only lexical evidence counts.
        :param model: Must be ``None`` or this backend's ``model_name``: an LLM name is refused, never served
            silently by extraction.
        :returns: ``answer``, ``model_used``, ``generation_time_ms`` and ``evidence`` (see the module doc).
        :raises ModelUnavailableError: If a request names an LLM.
        """
        if model not in (None, self.model_name):
            raise ModelUnavailableError(
                f"Model '{model}' is not served: this pipeline answers with the built-in extractive backend. "
                "Omit `model`, or run the Ollama pipeline (pipelines/query_ollama.yml) to use an LLM."
            )
        started = time.perf_counter()
        answer, evidence = self.read(query, query_embedding or [], sentences)
        return {
            "answer": answer,
            "model_used": self.model_name,
            "generation_time_ms": (time.perf_counter() - started) * 1000.0,
            "evidence": evidence,
        }


def _order(sentence: Document) -> tuple[int, int]:
    """Document order: the chunk's place in the context, then the sentence's place in its chunk."""
    meta = sentence.meta or {}
    return int(meta.get("chunk_rank", 0)), int(meta.get("position", 0))


def _source(sentence: Document) -> str:
    """The SourceId of the chunk a sentence comes from."""
    return str((sentence.meta or {}).get("source_id", ""))


def _language(sentence: Document) -> str | None:
    """The language of a sentence's chunk (``meta.language``, detected at indexing), when known."""
    return (sentence.meta or {}).get("language")


def context_language(query: str, sentences: list[Document]) -> str | None:
    """
    The language the question's words are compared in: the commonest language of the context's chunks, detected at
    indexing on whole chunks (a short question, or a German one without umlauts, is easily taken for English),
    else the question's own.
    """
    languages = Counter(language for language in map(_language, sentences) if language)
    return languages.most_common(1)[0][0] if languages else text_language(query)


def _header(sentence: Document) -> str:
    """The contextual header of a sentence's chunk (document, section), as the splitter recorded it."""
    return str((sentence.meta or {}).get(CONTEXT_HEADER_FIELD) or "")


def model_path(name: str) -> Path:
    """Where an ``abstention_model`` value points: a bare file name beside this module, any other path as given."""
    path = Path(name)
    return _PACKAGE_DIR / path if path.name == name else path


def _part(sentence: Document) -> str:
    """A sentence followed by its chunk's SourceId marker."""
    return f"{sentence.content} {source_id_marker((sentence.meta or {}).get('source_id', sentence.id))}"
