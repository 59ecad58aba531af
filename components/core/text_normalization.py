"""
The text normalisation every indexed text goes through before chunking and BM25 (pure functions).

Converters keep what a format says; this makes the words of every format comparable
(docs/contract.md, "Text normalisation"):

* Unicode NFKC: typographic ligatures (``ﬁ`` -> ``fi``), full-width forms (``ＡＢＣ`` -> ``ABC``),
  non-breaking and other typographic spaces (-> a space), compatibility digits;
* soft hyphens (U+00AD) and zero-width characters removed: they are invisible in the source but
  split a word for BM25;
* with ``join_line_hyphens`` (PDF text, where a line end is where the layout broke a line): a word
  hyphenated across a line end is joined (``speci-\\nfication`` -> ``specification``) when the next
  line continues in lower case; ``e-\\nMail`` and ``-\\n`` list markers stay as they are;
* whitespace: tabs and runs of spaces inside a line become one space (leading indentation is
  kept for code), trailing spaces go, line ends become ``\\n``, and more than one blank line
  becomes one.

The original bytes are untouched: ``source_hash`` still hashes them (change detection), only the
indexed text is normalised.

Usage:

```python
from components.core.text_normalization import normalize_text

normalize_text("The speci\ufb01cation of work\ufb02ows")  # 'The specification of workflows'
normalize_text("data-\\nbase design", join_line_hyphens=True)  # 'database design'
```
"""

import re
import unicodedata

# Invisible characters that split words: soft hyphen, zero-width space/non-joiner/joiner, word
# joiner, byte-order mark (NFKC keeps all of them).
_INVISIBLE_RE = re.compile("[\u00ad\u200b\u200c\u200d\u2060\ufeff]")
# A letter, a hyphen at the end of a line, then a lower-case letter starting the next line.
_LINE_HYPHEN_RE = re.compile(r"(?<=[^\W\d_])-[ \t]*\n[ \t]*(?=[^\W\d_A-Z])")
_LINE_END_RE = re.compile(r"\r\n?|[\u2028\u2029\x85\x0b\x0c]")
_INNER_SPACE_RE = re.compile(r"(?<=\S)[^\S\n]{2,}|(?<=\S)[^\S\n ]")
_TRAILING_SPACE_RE = re.compile(r"[^\S\n]+(?=\n|\Z)")
_BLANK_LINES_RE = re.compile(r"\n[^\S\n]*\n(?:[^\S\n]*\n)+")


def normalize_text(text: str, join_line_hyphens: bool = False) -> str:
    """
    Normalise a text for indexing (see the module docstring for the rules).

    :param text: The converted text of a document part.
    :param join_line_hyphens: Join words hyphenated across line ends (set for PDF text).
    :returns: The normalised text (idempotent: normalising it again changes nothing).
    """
    text = unicodedata.normalize("NFKC", text)
    text = _INVISIBLE_RE.sub("", text)
    text = _LINE_END_RE.sub("\n", text)
    if join_line_hyphens:
        text = _LINE_HYPHEN_RE.sub("", text)
    text = _INNER_SPACE_RE.sub(" ", text)
    text = _TRAILING_SPACE_RE.sub("", text)
    return _BLANK_LINES_RE.sub("\n\n", text)
