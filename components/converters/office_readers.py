"""
Readers for Word, PowerPoint, Excel and CSV sources (pure functions, no Haystack component).

Like :mod:`components.converters.source_readers` (which dispatches to them), they turn the
bytes of one source into text parts with their meta, and raise
:class:`~components.converters.source_readers.SourceReadError` naming the problem, so the
indexing service judges a file with the same code the pipeline's converters run.

The text comes from Haystack's own converters where they fit: ``.pptx`` slides are
``PPTXToDocument``'s text split at its slide breaks; ``.docx`` paragraphs, links and text boxes
are ``DOCXToDocument``'s, walked here so that headings start sections. Haystack's converters log
and skip a file they cannot read, and give one Document per file or sheet; the checks around them
make a bad file an error instead, and the parts carry our metadata:

* ``.docx``: one part per section (``Heading 1``/``Heading 2`` paragraphs, meta ``section``);
  ``document_name`` from the ``Title`` paragraph or the core properties' title;
* ``.pptx``: one part per slide with text, meta ``page_number`` (1-based slide number), then
  the row groups of the slide's tables (Haystack's converter skips tables);
* ``.xlsx``: per sheet, groups of rows, meta ``section`` (the sheet name); read with openpyxl in
  read-only mode (streamed, so the cell bound holds before a sheet is in memory);
* ``.csv``: groups of rows (strict UTF-8, delimiter sniffed among ``, ; tab |``).

Tables (spreadsheets, CSV files, Word tables) are cut into groups of rows, each starting with the
header row (the first non-empty row), so every chunk is readable alone: ``Region | Per diem``
then ``Netherlands | 45``.

Before any Office file is parsed (docs/contract.md, "Text normalisation" and docs/api.md,
"Supported file types"):

* magic bytes: a ZIP package whose ``[Content_Types].xml`` declares the type the extension
  claims; an encrypted (password-protected) file, a legacy binary ``.doc``/``.xls``/``.ppt``, a
  PDF or text renamed to ``.docx`` are refused by name;
* bounded expansion, before any XML is built: every part is stream-decompressed once (1 MiB at a
  time, nothing kept) and counted, so the declared sizes are never trusted: an XML part may expand
  to at most ``SOURCEBOUND_MAX_OFFICE_PART_BYTES`` (default 16 MiB: parsing one takes about ten
  times that in memory) and all parts together to ``SOURCEBOUND_MAX_EXPANDED_BYTES`` (default
  64 MiB, near the 50 MiB file size limit). The declared sizes refuse a zip bomb earlier, without
  inflating anything (also a part over 8 MiB that claims more than 100 times its compressed size);
  a part that inflates past its declared size fails its CRC check (a corrupt file);
* a spreadsheet or CSV may hold at most ``SOURCEBOUND_MAX_SPREADSHEET_CELLS`` cells (default
  200,000, empty ones and missing rows included), counted while streaming.

Usage:

```python
from components.converters.office_readers import read_csv

read_csv(b"Region,Per diem\\nNetherlands,45\\n")
# [('Region | Per diem\\nNetherlands | 45', {'section': None})]
```
"""

import csv
import functools
import io
import os
import re
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import Any

from components.core.errors import SourceboundError
from components.core.text_normalization import normalize_text

DEFAULT_MAX_EXPANDED_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_OFFICE_PART_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_SPREADSHEET_CELLS = 200_000
# A part this large may not expand more than this many times its compressed size.
BOMB_PART_BYTES = 8 * 1024 * 1024
BOMB_RATIO = 100
MAX_ZIP_ENTRIES = 10_000
_INFLATE_STEP = 1 << 20
# cl100k tokens of a table part (header included): under the default chunk size (180), so the
# chunker keeps a part whole and every chunk of a table starts with its header row.
TABLE_PART_MAX_TOKENS = 150

_CFB_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")
_ZIP_MAGIC = b"PK\x03\x04"
# The main part's content type of each Office Open XML type (macro-enabled and template variants included).
_MAIN_CONTENT_TYPES = {
    "docx": ("wordprocessingml.document.main+xml", "wordprocessingml.template.main+xml", "ms-word.document.macro"),
    "pptx": ("presentationml.presentation.main+xml", "presentationml.slideshow.main+xml", "ms-powerpoint.present"),
    "xlsx": ("spreadsheetml.sheet.main+xml", "spreadsheetml.template.main+xml", "ms-excel.sheet.macro"),
}
_TYPE_NAMES = {"docx": "a Word document (.docx)", "pptx": "a PowerPoint file (.pptx)", "xlsx": "an Excel file (.xlsx)"}
_HEADING_STYLE_RE = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)


class OfficeReadError(SourceboundError, ValueError):
    """Raised by these readers; :mod:`source_readers` re-raises it as its ``SourceReadError``."""


def _env_int(name: str, default: int) -> int:
    try:
        value = int(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default


def max_expanded_bytes() -> int:
    """The most bytes all parts of one Office file may expand to (``SOURCEBOUND_MAX_EXPANDED_BYTES``)."""
    return _env_int("SOURCEBOUND_MAX_EXPANDED_BYTES", DEFAULT_MAX_EXPANDED_BYTES)


def max_office_part_bytes() -> int:
    """The most bytes one XML part of an Office file may expand to (``SOURCEBOUND_MAX_OFFICE_PART_BYTES``)."""
    return _env_int("SOURCEBOUND_MAX_OFFICE_PART_BYTES", DEFAULT_MAX_OFFICE_PART_BYTES)


def max_spreadsheet_cells() -> int:
    """The most cells one spreadsheet or CSV file may hold (``SOURCEBOUND_MAX_SPREADSHEET_CELLS``)."""
    return _env_int("SOURCEBOUND_MAX_SPREADSHEET_CELLS", DEFAULT_MAX_SPREADSHEET_CELLS)


# ------------------------------------------------------------------ magic bytes


def describe_content(data: bytes) -> str | None:
    """What the first bytes of ``data`` say it is, for error messages (``None`` when they say nothing)."""
    head = data.lstrip()[:16]
    if head.startswith(b"%PDF"):
        return "a PDF document"
    if data.startswith(_CFB_MAGIC):
        return "a legacy binary Office file (.doc, .xls or .ppt) or an encrypted Office file"
    if data.startswith(_ZIP_MAGIC):
        return "a ZIP package"
    for magic, name in ((b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"), (b"GIF8", "a GIF image")):
        if data.startswith(magic):
            return name
    if head.lower().startswith((b"<!doctype html", b"<html")):
        return "an HTML page"
    if not data.strip():
        return None
    sample = data[:4096]
    if b"\x00" not in sample:
        try:
            sample.decode("utf-8")
            return "plain text"
        except UnicodeDecodeError as error:
            if error.start >= len(sample) - 4:
                return "plain text"
    return None


def open_package(data: bytes, source_type: str) -> zipfile.ZipFile:
    """
    Check an Office Open XML file's bytes and open it as a ZIP package, inflating nothing.

    :param data: The file's bytes.
    :param source_type: ``docx``, ``pptx`` or ``xlsx``.
    :returns: The open package.
    :raises OfficeReadError: Empty, encrypted, legacy binary, another type by its content, corrupt, or a zip bomb.
    """
    extension = f".{source_type}"
    if not data.strip():
        raise OfficeReadError(f"the {extension} file is empty (0 bytes of content)")
    if data.startswith(_CFB_MAGIC):
        if _ENCRYPTED_PACKAGE in data:
            raise OfficeReadError(
                f"the {extension} file is password-protected (encrypted); save a copy without a password and index that"
            )
        raise OfficeReadError(
            f"the file is a legacy binary Office file (.doc, .xls or .ppt), not {extension}; save it as {extension}"
        )
    if not data.startswith(_ZIP_MAGIC):
        seen = describe_content(data)
        found = f"its content is {seen}" if seen else "its content is not a ZIP package"
        raise OfficeReadError(f"the file's content does not match its {extension} extension: {found}")
    try:
        package = zipfile.ZipFile(io.BytesIO(data))
        entries = package.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as error:
        raise OfficeReadError(f"the {extension} file is corrupt: not a readable ZIP package ({error})") from error
    if len(entries) > MAX_ZIP_ENTRIES:
        raise OfficeReadError(f"the {extension} file has {len(entries)} parts, over the limit of {MAX_ZIP_ENTRIES}")
    _check_declared_sizes(entries, extension)
    _check_expanded_sizes(package, entries, extension)
    try:
        content_types = package.read("[Content_Types].xml").decode("utf-8", errors="replace")
    except KeyError:
        raise OfficeReadError(
            f"the file's content does not match its {extension} extension: it is a ZIP archive, not an Office document"
        ) from None
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as error:
        raise OfficeReadError(f"the {extension} file is corrupt: {error}") from error
    if not any(marker in content_types for marker in _MAIN_CONTENT_TYPES[source_type]):
        actual = next(
            (kind for kind, markers in _MAIN_CONTENT_TYPES.items() if any(m in content_types for m in markers)), None
        )
        if actual:
            raise OfficeReadError(f"the file is {_TYPE_NAMES[actual]}, not {extension}; rename it to .{actual}")
        raise OfficeReadError(f"the file's content does not match its {extension} extension: no {extension} main part")
    return package


def _is_xml_part(name: str, extension: str) -> bool:
    """A part a parser builds a tree from; a workbook's worksheets are streamed (openpyxl read-only mode)."""
    if extension == ".xlsx" and _WORKSHEET_PART_RE.match(name):
        return False
    return name.lower().endswith((".xml", ".rels", ".vml"))


def _too_large(extension: str, name: str, size: str, limit: int, setting: str) -> OfficeReadError:
    return OfficeReadError(
        f"the {extension} file's part {name!r} expands to {size} bytes, over the limit of {limit} bytes "
        f"({setting}): a zip bomb or a file to split"
    )


def _check_declared_sizes(entries: list[zipfile.ZipInfo], extension: str) -> None:
    """Refuse what the package's own directory admits to, before inflating anything."""
    for entry in entries:
        if entry.file_size > BOMB_PART_BYTES and entry.file_size > BOMB_RATIO * max(entry.compress_size, 1):
            raise OfficeReadError(
                f"the {extension} file looks like a zip bomb: its part {entry.filename!r} expands "
                f"{entry.file_size // max(entry.compress_size, 1)} times to {entry.file_size} bytes"
            )
    part_limit = max_office_part_bytes()
    for entry in entries:
        if _is_xml_part(entry.filename, extension) and entry.file_size > part_limit:
            raise _too_large(
                extension, entry.filename, str(entry.file_size), part_limit, "SOURCEBOUND_MAX_OFFICE_PART_BYTES"
            )
    limit = max_expanded_bytes()
    total = sum(entry.file_size for entry in entries)
    if total > limit:
        raise OfficeReadError(
            f"the {extension} file would expand to {total} bytes, over the limit of {limit} "
            "(SOURCEBOUND_MAX_EXPANDED_BYTES): a zip bomb or a file to split"
        )


def _check_expanded_sizes(package: zipfile.ZipFile, entries: list[zipfile.ZipInfo], extension: str) -> None:
    """
    Inflate every part once, 1 MiB at a time and keeping nothing, and count what comes out: the limits hold for
    what a parser would get, whatever the directory declares (docs/api.md, "Supported file types").
    """
    part_limit, total_limit = max_office_part_bytes(), max_expanded_bytes()
    total = 0
    for entry in entries:
        if entry.is_dir():
            continue
        xml = _is_xml_part(entry.filename, extension)
        size = 0
        try:
            with package.open(entry) as part:
                while chunk := part.read(_INFLATE_STEP):
                    size += len(chunk)
                    total += len(chunk)
                    if xml and size > part_limit:
                        raise _too_large(
                            extension, entry.filename, f"more than {part_limit}", part_limit,
                            "SOURCEBOUND_MAX_OFFICE_PART_BYTES",
                        )  # fmt: skip
                    if total > total_limit:
                        raise OfficeReadError(
                            f"the {extension} file expands to more than {total_limit} bytes, over the limit of "
                            f"{total_limit} (SOURCEBOUND_MAX_EXPANDED_BYTES): a zip bomb or a file to split"
                        )
        except OfficeReadError:
            raise
        except (
            zipfile.BadZipFile,
            zlib.error,
            OSError,
            ValueError,
            EOFError,
            RuntimeError,
            NotImplementedError,
        ) as error:  # a bad CRC (a part longer than declared), bad deflate data, an encrypted or unknown method
            raise OfficeReadError(f"the {extension} file is corrupt: its part {entry.filename!r}: {error}") from error


def _corrupt(extension: str, error: Exception) -> OfficeReadError:
    detail = str(error).strip() or type(error).__name__
    return OfficeReadError(f"the {extension} file is corrupt or unreadable: {type(error).__name__}: {detail[:200]}")


# ------------------------------------------------------------------------ tables


@dataclass
class _CellBudget:
    """Counts cells (and rows) read from one file against the bound."""

    what: str
    limit: int = field(default_factory=max_spreadsheet_cells)
    used: int = 0

    def spend(self, cells: int) -> None:
        self.used += max(cells, 1)
        if self.used > self.limit:
            raise OfficeReadError(
                f"the {self.what} has more than {self.limit} cells (empty ones included), over the limit "
                "(SOURCEBOUND_MAX_SPREADSHEET_CELLS); delete the empty rows and columns or split the file"
            )


def cell_text(value: Any) -> str:
    """A cell value as text: integers without ``.0``, dates as ISO 8601, ``None`` as empty."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    if isinstance(value, datetime):
        return value.date().isoformat() if value.time() == time(0) else value.isoformat(sep=" ")
    if isinstance(value, date | time):
        return value.isoformat()
    return re.sub(r"\s*\n\s*", " ", str(value)).strip()


def _row_line(cells: Iterable[str]) -> str:
    values = [cell.replace("|", "/") for cell in cells]
    while values and not values[-1].strip():
        values.pop()
    return " | ".join(values)


@functools.lru_cache(maxsize=1)
def _encoding() -> Any:
    import tiktoken

    return tiktoken.get_encoding("cl100k_base")


def _tokens(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=()))


def table_parts(rows: Iterable[list[str]], max_tokens: int = TABLE_PART_MAX_TOKENS) -> list[str]:
    """
    Cut a table into texts of a header line and the rows that fit in ``max_tokens`` (cl100k).

    :param rows: The cell texts of each row; empty rows are skipped, the first non-empty one is the header.
    :param max_tokens: Tokens per part, header included (a longer single row makes a part of its own, which
        the chunker splits).
    :returns: One text per group of rows, each starting with the header line.
    """
    header: str | None = None
    parts: list[str] = []
    group: list[str] = []
    size = 0
    for row in rows:
        line = _row_line(row)
        if not normalize_text(line).replace("|", "").strip():
            continue
        if header is None:
            header = line
            size = _tokens(header) + 1
            continue
        tokens = _tokens(line) + 1
        if group and size + tokens > max_tokens:
            parts.append("\n".join([header, *group]))
            group, size = [], _tokens(header) + 1
        group.append(line)
        size += tokens
    if header is not None and (group or not parts):
        parts.append("\n".join([header, *group]))
    return parts


# ------------------------------------------------------------------------- docx


@dataclass
class _DocxSection:
    heading: str | None
    blocks: list[str | list[list[str]]] = field(default_factory=list)  # paragraphs and tables


def _paragraph_style_names(document: Any) -> Callable[[Any], str]:
    """
    A paragraph element -> its style name, as ``Paragraph.style.name`` answers it, from one pass over the styles.
    python-docx looks the default style up anew for every paragraph without a style (milliseconds each: minutes
    for a large document), so the names are resolved once here.
    """
    from docx.enum.style import WD_STYLE_TYPE

    names = {
        style.style_id: style.name or ""
        for style in document.styles
        if style.type == WD_STYLE_TYPE.PARAGRAPH and style.style_id
    }
    default = document.styles.default(WD_STYLE_TYPE.PARAGRAPH)
    default_name = (default.name or "") if default is not None else ""

    def name(element: Any) -> str:
        style_id = element.style  # the pPr/pStyle value, None without one
        return names.get(style_id, default_name) if style_id else default_name

    return name


def read_docx(data: bytes, max_level: int = 2) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]]:
    """
    Read a Word document into parts: the text of each section, and the row groups of its tables.

    :param data: The ``.docx`` bytes.
    :param max_level: Deepest heading level (``Heading 1``..``Heading 9``) that starts a section.
    :returns: ``(parts, source_meta)``: parts as ``(text, {"section": heading})``; ``document_name`` in the meta.
    :raises OfficeReadError: If the file cannot be read or has no text.
    """
    open_package(data, "docx").close()
    try:
        from docx import Document as open_docx
        from docx.table import Table
        from docx.text.paragraph import Paragraph
        from haystack.components.converters.docx import DOCXToDocument

        converter = DOCXToDocument(link_format="none")
        document = open_docx(io.BytesIO(data))
        style_name = _paragraph_style_names(document)
        sections = [_DocxSection(None)]
        title: str | None = None
        for element in document.element.body.iterchildren():
            tag = element.tag if isinstance(element.tag, str) else ""
            if tag.endswith("}p"):
                paragraph = Paragraph(element, document)
                # Haystack's paragraph text (links as configured), then any text boxes anchored to it.
                text = converter._process_links_in_paragraph(paragraph).strip()
                style = style_name(element)
                heading = _HEADING_STYLE_RE.match(style.strip())
                if style.strip().lower() == "title" and text and title is None:
                    title = text
                if heading and int(heading.group(1)) <= max_level and text:
                    sections.append(_DocxSection(text, [text]))
                elif text:
                    sections[-1].blocks.append(text)
                sections[-1].blocks.extend(box for box in converter._extract_text_boxes(element, document) if box)
            elif tag.endswith("}tbl"):
                table = Table(element, document)
                rows = []
                for row in table.rows:
                    cells, previous = [], None
                    for cell in row.cells:
                        if previous is not None and cell._tc is previous._tc:
                            continue  # a merged cell repeats itself across the cells it spans
                        cells.append(cell_text(converter._cell_text(cell)))
                        previous = cell
                    rows.append(cells)
                sections[-1].blocks.append(rows)
        if not title:
            title = (document.core_properties.title or "").strip() or None
    except OfficeReadError:
        raise
    except Exception as error:  # python-docx and lxml raise many types; any of them is a defect of the file
        raise _corrupt(".docx", error) from error
    parts: list[tuple[str, dict[str, Any]]] = []
    pending: list[str] = []
    for section in sections:
        texts: list[str] = []
        has_body = len(section.blocks) > (1 if section.heading is not None else 0)
        if section.heading is not None and not has_body:
            pending.extend(block for block in section.blocks if isinstance(block, str))
            continue
        for block in section.blocks:
            if isinstance(block, str):
                texts.append(block)
                continue
            if texts or pending:
                parts.append(("\n\n".join([*pending, *texts]), {"section": section.heading}))
                texts, pending = [], []
            parts.extend((text, {"section": section.heading}) for text in table_parts(block))
        if texts or pending:
            parts.append(("\n\n".join([*pending, *texts]), {"section": section.heading}))
            pending = []
    if pending:
        parts.append(("\n\n".join(pending), {"section": None}))
    return _require_parts(parts, "Word document"), {"document_name": title}


# ------------------------------------------------------------------------- pptx


def read_pptx(data: bytes) -> list[tuple[str, dict[str, Any]]]:
    """
    Read a PowerPoint file into one part per slide with text (meta ``page_number``, the slide number),
    and the row groups of each slide's tables (with the same ``page_number``).

    :raises OfficeReadError: If the file cannot be read or no slide has text.
    """
    open_package(data, "pptx").close()
    try:
        from haystack.components.converters.pptx import PPTXToDocument
        from pptx import Presentation

        # Haystack's converter joins the slides' text frames with form feeds: one slide per page.
        texts = PPTXToDocument()._convert(io.BytesIO(data)).split("\f")
        # It skips tables; they follow their slide's text as row groups with their header row.
        tables = [
            [
                [[cell_text(cell.text) for cell in row.cells] for row in shape.table.rows]
                for shape in slide.shapes
                if getattr(shape, "has_table", False)
            ]
            for slide in Presentation(io.BytesIO(data)).slides
        ]
    except Exception as error:  # python-pptx and lxml raise many types; any of them is a defect of the file
        raise _corrupt(".pptx", error) from error
    parts: list[tuple[str, dict[str, Any]]] = []
    for number, (text, slide_tables) in enumerate(zip(texts, tables, strict=False), 1):
        parts.append((text, {"page_number": number}))
        for rows in slide_tables:
            parts.extend((part, {"page_number": number}) for part in table_parts(rows))
    return _require_parts(parts, "PowerPoint file")


# ------------------------------------------------------------------------- xlsx


_CELL_OR_ROW_RE = re.compile(rb"<(?:[A-Za-z]+:)?(?:c|row)[\s/>]")
_WORKSHEET_PART_RE = re.compile(r"^xl/worksheets/[^/]+\.xml$")


def _count_cells(package: zipfile.ZipFile, budget: _CellBudget) -> None:
    """Count the cell and row elements of every worksheet part, streamed, before openpyxl parses any."""
    for entry in package.infolist():
        if not _WORKSHEET_PART_RE.match(entry.filename):
            continue
        tail = b""
        with package.open(entry) as part:
            while chunk := part.read(1 << 20):
                buffer = tail + chunk
                # A match ending inside the carried tail was counted with the previous chunk.
                found = sum(1 for match in _CELL_OR_ROW_RE.finditer(buffer) if match.end() > len(tail))
                if found:
                    budget.spend(found)
                tail = buffer[-8:]


def _sheet_rows(sheet: Any, budget: _CellBudget) -> Iterator[list[str]]:
    for row in sheet.iter_rows(values_only=True):
        budget.spend(len(row))
        yield [cell_text(value) for value in row]


def read_xlsx(data: bytes) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]]:
    """
    Read an Excel workbook into row groups per sheet (meta ``section``: the sheet name).

    Formulas give their last computed value; charts and images are ignored.

    :returns: ``(parts, source_meta)`` with ``document_name`` from the workbook's title property.
    :raises OfficeReadError: If the file cannot be read, holds too many cells, or has no text.
    """
    package = open_package(data, "xlsx")
    budget = _CellBudget("spreadsheet")
    parts: list[tuple[str, dict[str, Any]]] = []
    try:
        with package:
            _count_cells(package, _CellBudget("spreadsheet", limit=budget.limit))
        from openpyxl import load_workbook

        workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
        try:
            title = (workbook.properties.title or "").strip() or None
            for sheet in workbook.worksheets:
                # Declared dimensions can lie (A1:XFD1048576); read the rows that are there.
                sheet.reset_dimensions()
                parts.extend((text, {"section": sheet.title}) for text in table_parts(_sheet_rows(sheet, budget)))
        finally:
            workbook.close()
    except OfficeReadError:
        raise
    except Exception as error:  # openpyxl and its XML parser raise many types; any of them is a defect of the file
        raise _corrupt(".xlsx", error) from error
    return _require_parts(parts, "spreadsheet"), {"document_name": title}


# -------------------------------------------------------------------------- csv


def read_csv(text: str) -> list[tuple[str, dict[str, Any]]]:
    """
    Read a CSV text (already decoded) into row groups, each starting with the header row.

    :raises OfficeReadError: If the CSV cannot be parsed, holds too many cells, or has no values.
    """
    budget = _CellBudget("CSV file")
    sample = text[:8192]
    try:
        dialect: Any = csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel

    def rows() -> Iterator[list[str]]:
        for row in csv.reader(io.StringIO(text, newline=""), dialect):
            budget.spend(len(row))
            yield [cell_text(value) for value in row]

    try:
        parts = [(part, {"section": None}) for part in table_parts(rows())]
    except csv.Error as error:
        raise OfficeReadError(f"the CSV file cannot be parsed: {error}") from error
    return _require_parts(parts, "CSV file")


def _require_parts(parts: list[tuple[str, dict[str, Any]]], what: str) -> list[tuple[str, dict[str, Any]]]:
    kept = [(text, meta) for text, meta in parts if normalize_text(text).strip()]
    if not kept:
        raise OfficeReadError(f"the {what} is empty: it has no text to index")
    return kept
