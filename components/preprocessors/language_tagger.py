"""
``LanguageTagger``: sets each document's ``language`` meta at indexing time (docs/contract.md, "Languages").

The parts of one document (``tenant_id``, ``document_id``) get one language, which every chunk inherits:

* the caller's ``language`` (or HTML ``lang``), reduced to its lower-case primary subtag (``"de-DE"`` -> ``"de"``),
  when any part has one;
* otherwise the language detected from the document's text (its first ``max_detection_chars`` characters, all
  parts joined) by :func:`components.core.language.detect_language`;
* ``None`` when neither tells (too little text).

It runs before change detection: the detected language is a function of the content, so an unchanged document
gets the language its stored chunks already carry and is not re-indexed.

Usage:

```python
from haystack import Document
from components.preprocessors.language_tagger import LanguageTagger

parts = [Document(content="Die Kündigungsfrist beträgt drei Monate.", meta={"tenant_id": "t", "document_id": "d"})]
LanguageTagger().run(documents=parts)["documents"][0].meta["language"]  # 'de'
```
"""

import dataclasses
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.core.language import detect_language, primary_language


@component
class LanguageTagger:
    """Gives every document part its document's ``language``: the caller's, else the detected one."""

    def __init__(self, max_detection_chars: int = 4000) -> None:
        """
        :param max_detection_chars: How much of a document's text the detector reads (detection time grows with
            it; a few thousand characters decide any language).
        :raises ValueError: If it is not a positive integer.
        """
        if not isinstance(max_detection_chars, int) or isinstance(max_detection_chars, bool) or max_detection_chars < 1:
            raise ValueError(f"max_detection_chars must be a positive integer, got {max_detection_chars!r}.")
        self.max_detection_chars = max_detection_chars

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self, max_detection_chars=self.max_detection_chars)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LanguageTagger":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    def language_of(self, parts: list[Document]) -> str | None:
        """The language of one document's parts (see the module doc)."""
        for part in parts:
            given = primary_language((part.meta or {}).get("language"))
            if given:
                return given
        text, length = [], 0
        for part in parts:
            if length >= self.max_detection_chars:
                break
            content = (part.content or "")[: self.max_detection_chars - length]
            text.append(content)
            length += len(content)
        return detect_language("\n".join(text))

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """
        :param documents: Document parts with ``tenant_id`` and ``document_id`` (``DocumentIdentifier`` output).
        :returns: ``documents``: copies of the parts, in order, with ``language`` set (``None`` when unknown).
        """
        groups: dict[tuple[Any, Any], list[Document]] = {}
        for document in documents:
            meta = document.meta or {}
            groups.setdefault((meta.get("tenant_id"), meta.get("document_id")), []).append(document)
        languages = {key: self.language_of(parts) for key, parts in groups.items()}
        tagged = []
        for document in documents:
            meta = document.meta or {}
            language = languages[(meta.get("tenant_id"), meta.get("document_id"))]
            tagged.append(dataclasses.replace(document, meta={**meta, "language": language}))
        return {"documents": tagged}
