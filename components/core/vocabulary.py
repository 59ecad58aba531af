"""
A tenant's vocabulary: the glossary (``glossary.csv``: term, aliases, optional definition) compiled
deterministically into ``vocabulary.json`` and matched against query text (docs/contract.md, "Glossary").

* ``parse_glossary_csv(text)`` reads the CSV: a header row naming ``term``, ``aliases`` and optionally
  ``definition``; aliases are separated by ``|`` or ``;``. Bad input raises :class:`GlossaryError`
  naming the row.
* ``compile_vocabulary(entries)`` gives the vocabulary dict: terms sorted, aliases deduplicated and
  sorted, and an index from each normalised phrase to its term(s). The same CSV rows in any order
  give byte-identical JSON (``vocabulary_json``).
* ``Vocabulary(compiled).match(text)`` finds the glossary phrases in ``text`` (the term or any alias,
  compared as normalised word sequences, longest match first, non-overlapping) and
  ``expansions(text)`` the phrases of the matched terms' groups that the text does not already contain.

Usage:

```python
from components.core.vocabulary import Vocabulary, compile_vocabulary, parse_glossary_csv

entries = parse_glossary_csv("term,aliases\\nPeoplebase,HR portal|HRIS\\n")
vocabulary = Vocabulary(compile_vocabulary(entries))
vocabulary.match("Where is the HR portal?")        # ["Peoplebase"]
vocabulary.expansions("Where is the HR portal?")   # (["Peoplebase"], ["Peoplebase", "HRIS"])
```
"""

import csv
import hashlib
import io
import json
from dataclasses import dataclass
from typing import Any

from components.core.errors import SourceboundError
from components.core.text_analysis import normalize_word, words

VOCABULARY_VERSION = 1
MAX_GLOSSARY_TERMS = 5000
MAX_ALIASES_PER_TERM = 50
MAX_PHRASE_CHARS = 200
MAX_DEFINITION_CHARS = 2000
ALIAS_SEPARATORS = ("|", ";")


class GlossaryError(SourceboundError, ValueError):
    """A glossary CSV (or vocabulary) that cannot be used; the message names the row and the fix."""


@dataclass(frozen=True)
class GlossaryEntry:
    """One glossary row: a canonical ``term``, its ``aliases`` and an optional ``definition``."""

    term: str
    aliases: tuple[str, ...] = ()
    definition: str = ""


def phrase_key(text: str) -> str:
    """The matching key of a phrase: its word tokens, normalised, joined by single spaces."""
    return " ".join(normalize_word(word) for word in words(text))


def _clean(value: str | None) -> str:
    return " ".join((value or "").split())


def _check_phrase(value: str, row: int, what: str) -> str:
    if any(ord(char) < 32 for char in value):
        raise GlossaryError(f"row {row}: the {what} contains a control character; remove it.")
    if len(value) > MAX_PHRASE_CHARS:
        raise GlossaryError(f"row {row}: the {what} is longer than {MAX_PHRASE_CHARS} characters.")
    if not phrase_key(value):
        raise GlossaryError(f"row {row}: the {what} {value!r} has no letters or digits to match.")
    return value


def parse_glossary_csv(text: str) -> list[GlossaryEntry]:
    """
    Read a glossary CSV.

    :param text: The CSV text; the header names ``term`` and ``aliases`` (``definition`` optional).
    :returns: The entries in file order.
    :raises GlossaryError: On a missing column, an empty term, a duplicate term, or a phrase with nothing to match.
    """
    # newline="": the csv module reads line ends itself (a bare "\r" is one, not a broken field).
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff"), newline=""))
    try:
        fieldnames, rows = reader.fieldnames or [], list(reader)
    except csv.Error as error:  # e.g. a field over the csv module's size limit
        raise GlossaryError(f"the glossary is not readable CSV ({error}); check its quoting and line ends.") from error
    columns = {(name or "").strip().lower(): name for name in fieldnames}
    missing = [name for name in ("term", "aliases") if name not in columns]
    if missing:
        raise GlossaryError(
            f"the glossary CSV needs a header row with the columns term, aliases[, definition]; missing {missing}."
        )
    entries: list[GlossaryEntry] = []
    seen: dict[str, int] = {}
    for row_number, row in enumerate(rows, start=2):
        term = _clean(row.get(columns["term"]))
        raw_aliases = row.get(columns["aliases"]) or ""
        definition = _clean(row.get(columns["definition"])) if "definition" in columns else ""
        if not term and not raw_aliases.strip() and not definition:
            continue  # a blank line
        if not term:
            raise GlossaryError(f"row {row_number}: the term is empty; every row needs a term.")
        _check_phrase(term, row_number, "term")
        for separator in ALIAS_SEPARATORS[1:]:
            raw_aliases = raw_aliases.replace(separator, ALIAS_SEPARATORS[0])
        aliases = tuple(
            _check_phrase(alias, row_number, "alias")
            for alias in dict.fromkeys(_clean(part) for part in raw_aliases.split(ALIAS_SEPARATORS[0]))
            if alias
        )
        if len(aliases) > MAX_ALIASES_PER_TERM:
            raise GlossaryError(f"row {row_number}: {len(aliases)} aliases; at most {MAX_ALIASES_PER_TERM} per term.")
        if len(definition) > MAX_DEFINITION_CHARS:
            raise GlossaryError(f"row {row_number}: the definition is longer than {MAX_DEFINITION_CHARS} characters.")
        key = term.casefold()
        if key in seen:
            raise GlossaryError(f"row {row_number}: the term {term!r} is already defined in row {seen[key]}.")
        seen[key] = row_number
        entries.append(GlossaryEntry(term, aliases, definition))
    if len(entries) > MAX_GLOSSARY_TERMS:
        raise GlossaryError(f"the glossary has {len(entries)} terms; at most {MAX_GLOSSARY_TERMS}.")
    return entries


def compile_vocabulary(entries: list[GlossaryEntry]) -> dict[str, Any]:
    """
    The vocabulary of a glossary: deterministic whatever the row order.

    :param entries: Parsed glossary rows.
    :returns: ``{"version", "terms": [{"term", "aliases", "definition"}], "index": {phrase key: [terms]}}``.
    """
    terms = []
    index: dict[str, set[str]] = {}
    for entry in sorted(entries, key=lambda item: (item.term.casefold(), item.term)):
        own_key = phrase_key(entry.term)
        aliases = sorted(
            {alias for alias in entry.aliases if phrase_key(alias) != own_key}, key=lambda a: (a.casefold(), a)
        )
        terms.append({"term": entry.term, "aliases": aliases, "definition": entry.definition})
        for phrase in (entry.term, *aliases):
            index.setdefault(phrase_key(phrase), set()).add(entry.term)
    return {
        "version": VOCABULARY_VERSION,
        "terms": terms,
        "index": {key: sorted(index[key]) for key in sorted(index)},
    }


def vocabulary_json(vocabulary: dict[str, Any]) -> str:
    """The canonical ``vocabulary.json`` text (sorted keys, no insignificant whitespace differences)."""
    return json.dumps(vocabulary, sort_keys=True, ensure_ascii=False, indent=1)


def vocabulary_digest(vocabulary: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON: equal vocabularies have equal digests."""
    return hashlib.sha256(vocabulary_json(vocabulary).encode("utf-8")).hexdigest()


class Vocabulary:
    """
    Alias matching over a compiled vocabulary.

    :param compiled: The dict of :func:`compile_vocabulary` (or its JSON, loaded).
    :raises GlossaryError: If the dict is not a vocabulary of this version.
    """

    def __init__(self, compiled: dict[str, Any]) -> None:
        if not isinstance(compiled, dict) or compiled.get("version") != VOCABULARY_VERSION:
            raise GlossaryError(f"not a version-{VOCABULARY_VERSION} vocabulary; recompile it from the glossary CSV.")
        self.terms: dict[str, dict[str, Any]] = {item["term"]: item for item in compiled.get("terms", [])}
        # Keyed with today's tokenisation, not the stored index's: a stored vocabulary keeps matching queries
        # if word normalisation changes after it was compiled.
        index: dict[tuple[str, ...], list[str]] = {}
        for item in compiled.get("terms", []):
            for phrase in (item["term"], *item["aliases"]):
                terms = index.setdefault(tuple(phrase_key(phrase).split(" ")), [])
                if item["term"] not in terms:
                    terms.append(item["term"])
        self._index = index
        self._longest = max((len(key) for key in self._index), default=0)

    def __len__(self) -> int:
        return len(self.terms)

    def _matches(self, text: str) -> list[tuple[str, ...]]:
        tokens = [normalize_word(word) for word in words(text)]
        found: list[tuple[str, ...]] = []
        position = 0
        while position < len(tokens):
            for size in range(min(self._longest, len(tokens) - position), 0, -1):
                candidate = tuple(tokens[position : position + size])
                if candidate in self._index:
                    found.append(candidate)
                    position += size
                    break
            else:
                position += 1
        return found

    def phrases_in(self, text: str) -> list[str]:
        """The glossary phrases found in ``text`` as :func:`phrase_key` keys, in order (longest match first)."""
        return [" ".join(key) for key in self._matches(text)]

    def match(self, text: str) -> list[str]:
        """The glossary terms whose term or alias occurs in ``text``, in order of first occurrence."""
        matched: dict[str, None] = {}
        for key in self._matches(text):
            for term in self._index[key]:
                matched.setdefault(term, None)
        return list(matched)

    def expansions(self, text: str) -> tuple[list[str], list[str]]:
        """
        The matched terms and the phrases to add: every phrase (term and aliases) of a matched term's
        group that ``text`` does not already contain, in vocabulary order.

        :returns: ``(glossary_terms, added_phrases)``.
        """
        terms = self.match(text)
        present = set(self.phrases_in(text))
        added: dict[str, None] = {}
        for term in terms:
            item = self.terms[term]
            for phrase in (item["term"], *item["aliases"]):
                key = phrase_key(phrase)
                if key not in present:
                    added.setdefault(phrase, None)
                    present.add(key)
        return terms, list(added)
