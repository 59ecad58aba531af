"""
Readers that turn the bytes of a source into text sections (pure functions, no Haystack component).

The converters (``text_converter``, ``markdown_converter``, ``html_converter``,
``pdf_converter``) are thin components around these functions, and the indexing
service calls the same functions to validate a whole batch before anything is
written, so a file is judged by exactly one piece of code.

* :func:`decode_text`: strict UTF-8 (a UTF-8 or UTF-16 byte-order mark is honoured);
  undecodable bytes and binary data are errors, never silently replaced.
* :func:`split_markdown_sections`: splits at ``#``/``##`` headings (configurable
  depth), ignoring ``#`` lines inside fenced code and YAML front matter.
* :func:`parse_html`: the stdlib ``html.parser``; drops scripts, styles and
  navigation, keeps block structure as paragraphs, splits at ``<h1>``/``<h2>``,
  and reads ``<title>``, ``<html lang>`` and ``<link rel="canonical">``.
* :func:`read_pdf_pages`: pypdf, one text per page (1-based ``page_number``).
* ``.docx``, ``.pptx``, ``.xlsx``, ``.csv``: :mod:`components.converters.office_readers`
  (magic bytes, bounded expansion, header row with every group of table rows).

Every failure raises :class:`SourceReadError` naming the problem.

Usage:

```python
from components.converters.source_readers import split_markdown_sections

split_markdown_sections("# Guide\\n\\nIntro\\n\\n## Install\\n\\nRun it.")
# [Section(heading='Guide', text='# Guide\\n\\nIntro'), Section(heading='Install', text='## Install\\n\\nRun it.')]
```
"""

import io
import logging
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from haystack import Document
from haystack.components.converters.utils import get_bytestream_from_source, normalize_metadata
from haystack.dataclasses import ByteStream

from components.converters import office_readers
from components.core.document_identity import IndexingValidationError, content_hash
from components.core.errors import SourceboundError
from components.core.text_normalization import normalize_text
from components.core.url_canonicalizer import is_http_url

logger = logging.getLogger(__name__)


class SourceReadError(SourceboundError, ValueError):
    """The bytes of a source cannot be read as its type (undecodable, empty, unparsable)."""


@dataclass
class Section:
    """A run of text under one heading (``heading`` is ``None`` before the first heading)."""

    heading: str | None
    text: str


@dataclass
class HtmlContent:
    """What :func:`parse_html` extracts from a page."""

    sections: list[Section] = field(default_factory=list)
    title: str | None = None
    language: str | None = None
    canonical_url: str | None = None


# --------------------------------------------------------------------------- text


def decode_text(data: bytes) -> str:
    """
    Decode a text source strictly.

    :param data: The raw bytes.
    :returns: The text (a leading byte-order mark removed).
    :raises SourceReadError: On undecodable bytes or binary data (NUL bytes).
    """
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        encoding, payload = "utf-16", data
    else:
        encoding, payload = "utf-8", data.removeprefix(b"\xef\xbb\xbf")
    try:
        text = payload.decode(encoding)
    except UnicodeDecodeError as error:
        raise SourceReadError(
            f"undecodable bytes: not valid {encoding.upper()} text (byte 0x{payload[error.start]:02x} at offset "
            f"{error.start}); convert the file to UTF-8"
        ) from error
    if "\x00" in text:
        raise SourceReadError("undecodable bytes: the data contains NUL bytes (binary data, not text)")
    return text.removeprefix("\ufeff")


def _refuse_binary(data: bytes, source_type: str) -> None:
    """A text type whose bytes are a PDF, an Office package or an image: name what the content is."""
    seen = office_readers.describe_content(data)
    if seen and seen not in ("plain text", "an HTML page"):
        raise SourceReadError(
            f"the file's content does not match its type {source_type!r}: its content is {seen}, not UTF-8 text"
        )


def require_text(text: str, what: str = "document") -> str:
    """Return ``text`` unless it is empty or only whitespace and invisible characters (then raise)."""
    if not text or not normalize_text(text).strip():
        raise SourceReadError(f"the {what} is empty or contains only whitespace")
    return text


# ----------------------------------------------------------------------- markdown

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_ATX_HEADING = re.compile(r"^\s{0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
_SETEXT_UNDERLINE = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n.*?\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_INLINE_MARKUP = re.compile(r"[*_`]+|\[([^\]]*)\]\([^)]*\)")


def _heading_text(raw: str) -> str:
    text = _INLINE_MARKUP.sub(lambda match: match.group(1) or "", raw or "")
    return re.sub(r"\s+", " ", text).strip()


def split_markdown_sections(text: str, max_level: int = 2) -> list[Section]:
    """
    Split Markdown at headings of level ``<= max_level`` (``#`` and ``##`` by default).

    Deeper headings stay inside their section. A heading with no body of its own
    (``# Title`` directly followed by ``## Part``) is merged into the next section,
    so no chunk is a bare heading. Each section's text starts with its heading line.

    :param text: Markdown text.
    :param max_level: Deepest heading level that starts a section (1-6).
    :returns: The non-empty sections in document order.
    """
    text = _FRONT_MATTER.sub("", text.replace("\r\n", "\n").replace("\r", "\n"), count=1)
    lines = text.split("\n")
    # (heading, number of heading lines, lines including the heading lines)
    sections: list[tuple[str | None, int, list[str]]] = [(None, 0, [])]
    fence: str | None = None
    index = 0
    while index < len(lines):
        line = lines[index]
        fence_match = _FENCE.match(line)
        if fence is not None:
            if fence_match and fence_match.group(1)[0] == fence[0] and len(fence_match.group(1)) >= len(fence):
                fence = None
            sections[-1][2].append(line)
            index += 1
            continue
        if fence_match:
            fence = fence_match.group(1)
            sections[-1][2].append(line)
            index += 1
            continue
        heading_match = _ATX_HEADING.match(line)
        if heading_match and len(heading_match.group(1)) <= max_level:
            sections.append((_heading_text(heading_match.group(2) or ""), 1, [line]))
            index += 1
            continue
        # A setext heading: a one-line paragraph underlined with === (level 1) or --- (level 2).
        if (
            index + 1 < len(lines)
            and line.strip()
            and (not sections[-1][2] or not sections[-1][2][-1].strip())
            and _SETEXT_UNDERLINE.match(lines[index + 1])
        ):
            level = 1 if lines[index + 1].strip().startswith("=") else 2
            if level <= max_level:
                sections.append((_heading_text(line), 2, [line, lines[index + 1]]))
                index += 2
                continue
        sections[-1][2].append(line)
        index += 1

    result: list[Section] = []
    pending_heading: list[str] = []
    for heading, heading_lines, section_lines in sections:
        body = "\n".join(section_lines).strip()
        has_body = any(line.strip() for line in section_lines[heading_lines:])
        if heading is not None and not has_body:
            # Only a heading line (or nothing): carry it into the next section.
            if body:
                pending_heading.append(body)
            continue
        if not body:
            continue
        if pending_heading:
            body = "\n\n".join([*pending_heading, body])
            pending_heading = []
        result.append(Section(heading=heading, text=body))
    if pending_heading:
        result.append(Section(heading=None, text="\n\n".join(pending_heading)))
    return result


def markdown_title(sections: list[Section]) -> str | None:
    """The text of the first level-1 heading, if the document has one."""
    for section in sections:
        for line in section.text.split("\n"):
            match = _ATX_HEADING.match(line)
            if match and len(match.group(1)) == 1 and match.group(2):
                return _heading_text(match.group(2))
    return None


# --------------------------------------------------------------------------- html

_SKIPPED_TAGS = frozenset(
    {"script", "style", "noscript", "template", "svg", "iframe", "object", "canvas", "nav", "footer", "aside", "form"}
)
_BLOCK_TAGS = frozenset(
    {
        "address",
        "article",
        "blockquote",
        "body",
        "dd",
        "details",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "header",
        "hr",
        "li",
        "main",
        "ol",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "ul",
    }
)
_HEADING_TAGS = {f"h{level}": level for level in range(1, 7)}
_VOID_TAGS = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"})


class _HtmlTextExtractor(HTMLParser):
    def __init__(self, max_level: int) -> None:
        super().__init__(convert_charrefs=True)
        self.max_level = max_level
        self.content = HtmlContent()
        self._sections: list[tuple[str | None, list[str]]] = [(None, [])]
        self._block: list[str] = []
        self._skip_depth = 0
        self._pre_depth = 0
        self._in_title = False
        self._title_parts: list[str] = []
        self._heading_level: int | None = None
        self._heading_parts: list[str] = []

    # Blocks are paragraphs; a section is a list of paragraphs.
    def _flush(self) -> None:
        text = "".join(self._block)
        text = text.strip("\n") if self._pre_depth else re.sub(r"[ \t\r\n\f\v\u00a0]+", " ", text).strip()
        if text.strip():
            self._sections[-1][1].append(text)
        self._block = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name.lower(): (value or "") for name, value in attrs}
        if tag == "html" and attributes.get("lang"):
            self.content.language = attributes["lang"].strip().lower() or None
        elif tag == "link" and "canonical" in attributes.get("rel", "").lower().split():
            self.content.canonical_url = attributes.get("href", "").strip() or None
        elif tag == "meta" and attributes.get("property", "").lower() == "og:url" and not self.content.canonical_url:
            self.content.canonical_url = attributes.get("content", "").strip() or None
        if self._skip_depth or tag in _SKIPPED_TAGS:
            if tag not in _VOID_TAGS:
                self._skip_depth += 1
            return
        if tag == "title":
            self._in_title = True
        elif tag in _HEADING_TAGS:
            self._flush()
            self._heading_level = _HEADING_TAGS[tag]
            self._heading_parts = []
        elif tag == "br":
            self._block.append("\n" if self._pre_depth else " ")
        elif tag in _BLOCK_TAGS:
            self._flush()
            if tag == "pre":
                self._pre_depth += 1
            elif tag == "li":
                self._block.append("- ")

    def handle_endtag(self, tag: str) -> None:
        if self._skip_depth:
            if tag not in _VOID_TAGS:
                self._skip_depth -= 1
            return
        if tag == "title":
            self._in_title = False
            self.content.title = re.sub(r"\s+", " ", "".join(self._title_parts)).strip() or None
        elif tag in _HEADING_TAGS and self._heading_level is not None:
            heading = re.sub(r"\s+", " ", "".join(self._heading_parts)).strip()
            level, self._heading_level = self._heading_level, None
            if not heading:
                return
            if level <= self.max_level:
                self._sections.append((heading, [heading]))
            else:
                self._sections[-1][1].append(heading)
        elif tag in _BLOCK_TAGS:
            self._flush()
            if tag == "pre" and self._pre_depth:
                self._pre_depth -= 1

    def handle_data(self, data: str) -> None:
        if self._skip_depth:
            return
        if self._in_title:
            self._title_parts.append(data)
        elif self._heading_level is not None:
            self._heading_parts.append(data)
        else:
            self._block.append(data)

    def close(self) -> None:
        super().close()
        self._flush()
        pending: list[str] = []
        for heading, paragraphs in self._sections:
            if heading is not None and len(paragraphs) <= 1:
                pending.extend(paragraphs)  # a heading without a body joins the next section
                continue
            if not paragraphs:
                continue
            self.content.sections.append(Section(heading=heading, text="\n\n".join([*pending, *paragraphs])))
            pending = []
        if pending:
            self.content.sections.append(Section(heading=None, text="\n\n".join(pending)))


def parse_html(text: str, max_level: int = 2) -> HtmlContent:
    """
    Extract the readable text of an HTML page as sections.

    :param text: The HTML.
    :param max_level: Deepest heading level (``<h1>``..``<h6>``) that starts a section.
    :returns: Sections, title, language and canonical URL.
    """
    parser = _HtmlTextExtractor(max_level)
    try:
        parser.feed(text)
        parser.close()
    except Exception as error:  # html.parser is lenient; anything raised here is a real defect of the input
        raise SourceReadError(f"the HTML cannot be parsed: {error}") from error
    return parser.content


# ---------------------------------------------------------------------------- pdf


def read_pdf_pages(data: bytes) -> list[str]:
    """
    Extract the text of each page of a PDF with pypdf.

    :param data: The PDF bytes.
    :returns: One text per page, in order (a page without text gives ``""``).
    :raises SourceReadError: If the PDF cannot be parsed, is encrypted, or has no extractable text.
    """
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    if not data.lstrip()[:5].startswith(b"%PDF"):
        seen = office_readers.describe_content(data)
        raise SourceReadError(
            "the PDF cannot be parsed: it does not start with a %PDF header"
            + (f" (its content is {seen})" if seen else "")
        )
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise SourceReadError("the PDF is encrypted; decrypt it before indexing")
        pages = [page.extract_text() or "" for page in reader.pages]
    except SourceReadError:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError, OSError) as error:
        raise SourceReadError(f"the PDF cannot be parsed: {type(error).__name__}: {error}") from error
    if not pages:
        raise SourceReadError("the PDF cannot be parsed: it has no pages")
    if not any(page.strip() for page in pages):
        raise SourceReadError("the PDF has no extractable text (scanned pages need OCR first)")
    return pages


# ------------------------------------------------------------------------ streams


def file_updated_at(path: str | Path) -> str | None:
    """A file's modification time as an ISO 8601 UTC timestamp, or ``None`` when it does not exist."""
    try:
        return datetime.fromtimestamp(Path(path).stat().st_mtime, tz=UTC).isoformat()
    except OSError:
        return None


def stream_meta(stream: ByteStream, source_type: str, extracted: dict[str, Any] | None = None) -> dict[str, Any]:
    """
    The source-level meta of a converted stream.

    Precedence, lowest first: what the file tells (name, modification time, hash),
    what the content tells (``extracted``: title, language, canonical URL), and the
    caller's meta on the stream (never overridden by a ``None``).
    """
    file_path = stream.meta.get("file_path")
    meta: dict[str, Any] = {"source_type": source_type, "source_hash": content_hash(stream.data)}
    if file_path:
        meta["document_name"] = Path(str(file_path)).name
        meta["source_updated_at"] = file_updated_at(file_path)
    meta.update({key: value for key, value in (extracted or {}).items() if value is not None})
    meta.update({key: value for key, value in stream.meta.items() if value is not None})
    return meta


def stream_label(stream: ByteStream, position: int) -> str:
    """How an error message names a stream: its file path or name, else its position in the batch."""
    return str(stream.meta.get("file_path") or stream.meta.get("document_name") or f"source #{position + 1}")


# ---------------------------------------------------------------- one entry point


@dataclass
class ReadResult:
    """The text parts of one source (with their part meta) and what the content says about the source."""

    parts: list[tuple[str, dict[str, Any]]]
    meta: dict[str, Any] = field(default_factory=dict)


def read_source(data: bytes, source_type: str, section_max_level: int = 2, base_uri: str | None = None) -> ReadResult:
    """
    Read the bytes of one source of a given type into text parts.

    * ``txt``/``text``/``yaml``: one part.
    * ``md``: one part per section, meta ``section``; source meta ``document_name`` from the first ``#`` heading.
    * ``html``: one part per section, meta ``section``; source meta ``document_name`` (title), ``language``
      and ``source_uri`` (the canonical link, resolved against ``base_uri``).
    * ``pdf``: one part per page with text, meta ``page_number`` (1-based).
    * ``docx``: one part per section (Word headings, meta ``section``) and per group of table rows;
      ``pptx``: one part per slide, meta ``page_number``; ``xlsx``: groups of rows with their header
      row, meta ``section`` (the sheet name); ``csv``: groups of rows with their header row
      (:mod:`components.converters.office_readers`).

    :raises SourceReadError: If the bytes cannot be read as that type or hold no text.
    """
    if source_type == "pdf":
        pages = read_pdf_pages(data)
        return ReadResult([(text, {"page_number": number}) for number, text in enumerate(pages, 1) if text.strip()])
    if source_type in ("docx", "pptx", "xlsx"):
        try:
            if source_type == "docx":
                parts, meta = office_readers.read_docx(data, max_level=section_max_level)
                return ReadResult(parts, meta)
            if source_type == "pptx":
                return ReadResult(office_readers.read_pptx(data))
            parts, meta = office_readers.read_xlsx(data)
            return ReadResult(parts, meta)
        except office_readers.OfficeReadError as error:
            raise SourceReadError(str(error)) from error
    _refuse_binary(data, source_type)
    text = decode_text(data)
    if source_type == "csv":
        try:
            return ReadResult(office_readers.read_csv(require_text(text)))
        except office_readers.OfficeReadError as error:
            raise SourceReadError(str(error)) from error
    if source_type in ("txt", "text", "yaml"):
        # A YAML file (a spec) is read as its text: keys and comments are what a reader searches for.
        return ReadResult([(require_text(text), {})])
    if source_type == "md":
        sections = split_markdown_sections(require_text(text), max_level=section_max_level)
        require_text("".join(section.text for section in sections))
        return ReadResult(
            [(section.text, {"section": section.heading}) for section in sections],
            {"document_name": markdown_title(sections)},
        )
    if source_type == "html":
        content = parse_html(text, max_level=section_max_level)
        if not any(section.text.strip() for section in content.sections):
            raise SourceReadError("the HTML page has no readable text")
        canonical = content.canonical_url
        if canonical and base_uri and not is_http_url(canonical):
            canonical = urljoin(base_uri, canonical)
        return ReadResult(
            [(section.text, {"section": section.heading}) for section in content.sections],
            {
                "document_name": content.title,
                "language": content.language,
                "source_uri": canonical if is_http_url(canonical) else None,
            },
        )
    raise SourceReadError(f"unknown source type {source_type!r}")


def convert_streams(streams: list[ByteStream], source_type: str, section_max_level: int = 2) -> list[Document]:
    """
    Convert byte streams of one type into Documents (what every converter component does).

    Every stream is read before anything is returned, and all problems are reported together.

    :raises IndexingValidationError: Listing every stream that cannot be read, by name.
    """
    documents: list[Document] = []
    problems: list[str] = []
    for position, stream in enumerate(streams):
        try:
            result = read_source(stream.data, source_type, section_max_level, base_uri=stream.meta.get("source_uri"))
        except SourceReadError as error:
            problems.append(f"{stream_label(stream, position)}: {error}")
            continue
        meta = stream_meta(stream, source_type, result.meta)
        documents.extend(Document(content=text, meta={**meta, **part_meta}) for text, part_meta in result.parts)
    if problems:
        raise IndexingValidationError(problems)
    return documents


def to_streams(
    sources: list[str | Path | ByteStream], meta: dict[str, Any] | list[dict[str, Any]] | None
) -> list[ByteStream]:
    """
    Sources (paths or byte streams) as byte streams carrying their meta, as Haystack converters accept them.

    :param meta: One dict for all sources or one per source; merged over each stream's own meta.
    """
    streams = []
    for source, source_meta in zip(sources, normalize_metadata(meta, len(sources)), strict=True):
        stream = get_bytestream_from_source(source)
        if source_meta:
            stream = ByteStream(data=stream.data, meta={**stream.meta, **source_meta}, mime_type=stream.mime_type)
        streams.append(stream)
    return streams
