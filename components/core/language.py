"""
Language-specific text resources, loaded lazily: the English query path never loads them
(docs/contract.md, "Languages"):

* :func:`detect_language`: the ISO 639-1 code of a text's language (``"ru"``, ``"de"``, ``"zh"``), from
  ``lingua`` restricted to :data:`DETECTED_LANGUAGES` in its low-accuracy mode (its n-gram models ship inside
  the package; about 13 MB resident and under 0.2 s to build, on the first text that needs it); ``None`` when the
  text has no letters or no language is likely;
* :func:`language_stopwords`: the ``stopwords-iso`` collection's list for a language, without words that hold a
  numeral character (its Chinese list has ``七``, ``八``: a question about a number needs them);
* :func:`segment_han`: words of a run of Han characters (Chinese is written without spaces), from ``jieba``'s
  dictionary (about 65 MB and 1-2 s to load, on the first Chinese text);
* :func:`stem_word`: a word's stem by the language's Snowball stemmer (``snowballstemmer``, pure Python), so the
  inflected forms of a word match (``неиспользованных`` and ``неиспользованные`` -> ``неиспользова``);
* :func:`word_rarity`: how rare a word is in the language at large, from ``wordfreq``'s frequency lists (inside the
  package; about 0.1 s to load a language's list, on its first word), not from the few texts at hand.

Usage:

```python
from components.core.language import detect_language, segment_han

detect_language("Die Kündigungsfrist beträgt drei Monate.")  # 'de'
segment_han("员工每年享有带薪年假")  # ['员工', '每年', '享有', '带薪', '年', '假']
stem_word("отпуска", "ru")  # 'отпуск'
word_rarity("bereavement", "en")  # 0.63 (Zipf frequency 2.96); word_rarity("days", "en")  # 0.30
```
"""

import logging
import re
import threading
import unicodedata
from functools import lru_cache
from typing import Any

# The languages the detector chooses among: a small set keeps its memory and start-up small. A text in another
# language gets the closest of these (its words and sentences are still split correctly: that needs no language).
DETECTED_LANGUAGES = ("en", "de", "fr", "es", "it", "pt", "nl", "pl", "ru", "uk", "zh", "ja", "ko")
# Shorter texts carry too little evidence for a reliable guess.
MIN_DETECTION_LETTERS = 12
CJK_LETTER_WEIGHT = 4
_CJK_RE = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")

# A chunk's ``language`` and the search filter on it: a lower-case ISO 639 code (the primary subtag of a BCP 47 tag).
LANGUAGE_CODE_PATTERN = r"^[a-z]{2,3}$"
_LANGUAGE_CODE_RE = re.compile(LANGUAGE_CODE_PATTERN)

# One lock per lazily built resource: loading the Chinese dictionary (1-2 s) must not hold up detection.
_detector_lock = threading.Lock()
_jieba_lock = threading.Lock()
_stemmer_lock = threading.Lock()

# ISO 639-1 codes with a Snowball stemmer (``snowballstemmer.algorithms()``). English is not here: its words keep the
# light suffix normaliser of ``components.core.text_analysis.normalize_word``, which the English figures rest on.
SNOWBALL_LANGUAGES = {
    "ar": "arabic", "ca": "catalan", "cs": "czech", "da": "danish", "de": "german", "el": "greek", "es": "spanish",
    "et": "estonian", "eu": "basque", "fa": "persian", "fi": "finnish", "fr": "french", "ga": "irish",
    "hi": "hindi", "hu": "hungarian", "hy": "armenian", "id": "indonesian", "it": "italian", "lt": "lithuanian",
    "ne": "nepali", "nl": "dutch", "no": "norwegian", "nb": "norwegian", "pl": "polish", "pt": "portuguese",
    "ro": "romanian", "ru": "russian", "sr": "serbian", "sv": "swedish", "ta": "tamil", "tr": "turkish",
    "yi": "yiddish",
}  # fmt: skip
# Zipf frequency (log10 of occurrences per billion words) at and above which a word counts as not rare at all: the
# commonest words ("the", "и") are near 7.5. Unknown words have frequency 0, the rarest.
_COMMON_ZIPF = 8.0


def primary_language(value: object) -> str | None:
    """
    The lower-case primary language subtag of a language tag (``"de-DE"`` -> ``"de"``, ``"EN_us"`` -> ``"en"``), or
    ``None`` when ``value`` is not a string starting with a 2-3 letter code.
    """
    if not isinstance(value, str):
        return None
    primary = re.split(r"[-_]", value.strip().lower(), maxsplit=1)[0]
    return primary if _LANGUAGE_CODE_RE.match(primary) else None


@lru_cache(maxsize=1)
def _detector() -> Any:
    from lingua import IsoCode639_1, LanguageDetectorBuilder

    codes = [getattr(IsoCode639_1, code.upper()) for code in DETECTED_LANGUAGES]
    return LanguageDetectorBuilder.from_iso_codes_639_1(*codes).with_low_accuracy_mode().build()


def detect_language(text: str) -> str | None:
    """
    The ISO 639-1 code of ``text``'s language among :data:`DETECTED_LANGUAGES`, or ``None`` when it has fewer
    than :data:`MIN_DETECTION_LETTERS` letters (a CJK character counts as :data:`CJK_LETTER_WEIGHT`) or the
    detector cannot tell. Deterministic.
    """
    text = text or ""
    letters = sum(1 for character in text if character.isalpha())
    # A CJK character carries about a word: three of them tell the language as well as a dozen Latin letters.
    weighted = letters + (CJK_LETTER_WEIGHT - 1) * len(_CJK_RE.findall(text))
    if weighted < MIN_DETECTION_LETTERS:
        return None
    with _detector_lock:
        detector = _detector()
    language = detector.detect_language_of(text)
    return None if language is None else language.iso_code_639_1.name.lower()


@lru_cache(maxsize=32)
def language_stopwords(language: str) -> frozenset[str]:
    """The lower-cased stopwords of ``language`` (ISO 639-1) without numerals; empty for an unknown language."""
    import stopwordsiso

    if not stopwordsiso.has_lang(language):
        return frozenset()
    return frozenset(
        word.lower()
        for word in stopwordsiso.stopwords(language)
        if not any(unicodedata.numeric(character, None) is not None for character in word)
    )


@lru_cache(maxsize=1)
def _jieba() -> Any:
    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba


def segment_han(run: str) -> list[str]:
    """The words of ``run`` (Han characters only) by ``jieba``'s dictionary, in order."""
    with _jieba_lock:
        jieba = _jieba()
    return [word for word in jieba.lcut(run) if word.strip()]


@lru_cache(maxsize=32)
def _stemmer(language: str) -> Any:
    import snowballstemmer

    return snowballstemmer.stemmer(SNOWBALL_LANGUAGES[language])


def stem_word(word: str, language: str | None) -> str | None:
    """``word`` (lower-cased) reduced to its stem in ``language``; ``None`` when the language has no stemmer."""
    if language not in SNOWBALL_LANGUAGES:
        return None
    # A Snowball stemmer keeps its state on the instance while it works: one word at a time.
    with _stemmer_lock:
        return _stemmer(language).stemWord(word)


@lru_cache(maxsize=65536)
def word_rarity(word: str, language: str | None) -> float:
    """
    How rare ``word`` is in ``language`` (default English), 0-1: ``(8 - Zipf frequency) / 8``, so a word of everyday
    text ("days", Zipf 5.6) gives 0.30, a specialised one ("bereavement", 2.96) 0.63 and a word the lists do not
    hold (a name, a typo, an identifier) 1.0. Deterministic: the lists ship inside the ``wordfreq`` package.
    """
    from wordfreq import zipf_frequency

    language = language if language in _word_list_languages() else "en"
    return min(1.0, max(0.0, (_COMMON_ZIPF - zipf_frequency(word, language)) / _COMMON_ZIPF))


@lru_cache(maxsize=1)
def _word_list_languages() -> frozenset[str]:
    """The languages ``wordfreq`` has lists for (it globs its data folder on every call: ~1 ms)."""
    from wordfreq import available_languages

    return frozenset(available_languages())
