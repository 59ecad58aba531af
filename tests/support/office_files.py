"""
Office files built with the libraries the converters read them with (python-docx, python-pptx,
openpyxl), for the converter, service and HTTP tests; and the committed fixtures beside them.

``tests/fixtures/office/`` holds small files written by :func:`write_fixtures` (run
``python -m support.office_files`` from ``tests/`` to rewrite them) plus two password-protected
files (``encrypted.docx``, ``encrypted.xlsx``, password ``secret``) that were encrypted once with
msoffcrypto-tool, which is not a project dependency.
"""

import io
import zipfile
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "office"


def docx_bytes(title: str | None = None, sections: list[tuple[str | None, list[str]]] = (), table=None) -> bytes:
    """A Word document: an optional Title paragraph, then (heading, paragraphs) sections, then a table."""
    from docx import Document

    document = Document()
    if title:
        document.add_paragraph(title, style="Title")
    for heading, paragraphs in sections:
        if heading:
            document.add_heading(heading, level=1)
        for paragraph in paragraphs:
            document.add_paragraph(paragraph)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for row, values in zip(grid.rows, table, strict=True):
            for cell, value in zip(row.cells, values, strict=True):
                cell.text = value
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def pptx_bytes(slides: list[tuple[str, str] | None]) -> bytes:
    """A presentation: one slide per (title, body); ``None`` makes a blank slide."""
    from pptx import Presentation

    presentation = Presentation()
    for slide in slides:
        if slide is None:
            presentation.slides.add_slide(presentation.slide_layouts[6])
            continue
        page = presentation.slides.add_slide(presentation.slide_layouts[1])
        page.shapes.title.text, page.placeholders[1].text = slide
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


def xlsx_bytes(sheets: dict[str, list[list]]) -> bytes:
    """A workbook with one sheet per name and its rows."""
    from openpyxl import Workbook

    workbook = Workbook()
    workbook.remove(workbook.active)
    for name, rows in sheets.items():
        sheet = workbook.create_sheet(name)
        for row in rows:
            sheet.append(row)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def xlsx_with_empty_cells(cells: int, columns: int = 100) -> bytes:
    """A workbook whose one sheet holds ``cells`` empty (styled, valueless) cells and no text."""
    base = xlsx_bytes({"Sheet1": [["x"]]})
    rows = []
    for row in range(1, cells // columns + 1):
        rows.append(
            f'<row r="{row}">' + "".join(f'<c r="{_column(c)}{row}" s="0"/>' for c in range(columns)) + "</row>"
        )
    sheet = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        f"<sheetData>{''.join(rows)}</sheetData></worksheet>"
    )
    return replace_part(base, "xl/worksheets/sheet1.xml", sheet.encode())


def _column(index: int) -> str:
    name = ""
    index += 1
    while index:
        index, remainder = divmod(index - 1, 26)
        name = chr(65 + remainder) + name
    return name


def replace_part(package: bytes, name: str, data: bytes) -> bytes:
    """The ZIP package with one part's bytes replaced (or added)."""
    source = zipfile.ZipFile(io.BytesIO(package))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for entry in source.infolist():
            if entry.filename != name:
                target.writestr(entry, source.read(entry.filename))
        target.writestr(name, data)
    return buffer.getvalue()


def office_zip_bomb(package: bytes, uncompressed_bytes: int) -> bytes:
    """A valid Office package with one extra part of zeros: a few KB on the wire, ``uncompressed_bytes`` inflated."""
    return replace_part(package, "word/media/padding.bin", b"\0" * uncompressed_bytes)


def office_expanding_part(
    package: bytes, name: str, expanded_bytes: int = 256_000_000, noise_chars: int = 4400
) -> bytes:
    """
    The Office package with part ``name`` replaced by XML that inflates to ``expanded_bytes`` (declared honestly)
    from about 1/23 of that on the wire: 64 KiB paragraphs of random letters then padding, so neither the size
    (~11 MB for 256 MB) nor the ratio looks like a classic zip bomb. Streamed: the XML is never in memory whole.
    """
    import random

    rng = random.Random(7)
    noise = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(noise_chars))
    block = ("<w:p><w:r><w:t>" + noise + "x" * (65536 - noise_chars - 40) + "</w:t></w:r></w:p>").encode()
    source = zipfile.ZipFile(io.BytesIO(package))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as target:
        for entry in source.infolist():
            if entry.filename != name:
                target.writestr(entry, source.read(entry.filename))
        info = zipfile.ZipInfo(name)
        info.compress_type = zipfile.ZIP_DEFLATED
        with target.open(info, "w", force_zip64=True) as part:
            part.write(b'<?xml version="1.0"?><w:document xmlns:w="urn:w"><w:body>')
            written = 0
            while written < expanded_bytes:
                part.write(block)
                written += len(block)
            part.write(b"</w:body></w:document>")
    return buffer.getvalue()


def understate_size(package: bytes, name: str, declared: int) -> bytes:
    """The package with part ``name``'s uncompressed size in the central directory rewritten to ``declared``."""
    data = bytearray(package)
    encoded = name.encode()
    at = 0
    while True:
        at = data.find(b"PK\x01\x02", at)
        if at < 0:
            raise ValueError(f"{name} is not in the package")
        name_length = int.from_bytes(data[at + 28 : at + 30], "little")
        if bytes(data[at + 46 : at + 46 + name_length]) == encoded:
            data[at + 24 : at + 28] = declared.to_bytes(4, "little")
            return bytes(data)
        at += 46


HANDBOOK_DOCX = docx_bytes(
    "Warehouse handbook",
    [
        (None, ["This handbook applies to every Northwind warehouse."]),
        ("Safety", ["Forklift operators renew their certification every 18 months."]),
        ("Shifts", ["The night shift starts at 22:00 and ends at 06:00."]),
    ],
    table=[["Dock", "Opening hours"], ["Dock A", "05:00-21:00"], ["Dock B", "07:00-19:00"]],
)
REVIEW_PPTX = pptx_bytes(
    [
        ("Quarterly review", "Revenue grew 12 percent over the third quarter."),
        None,
        ("Hiring plan", "Northwind hires 14 warehouse technicians in Rotterdam next year."),
    ]
)
CARRIERS_XLSX = xlsx_bytes(
    {
        "Carriers": [["Carrier", "Region", "Lead time (days)"]]
        + [[f"Carrier {n}", f"Region {n}", n % 9 + 1] for n in range(1, 40)]
        + [["Blue Heron Freight", "Scandinavia", 6]],
        "Contacts": [["Team", "Email"], ["Dispatch", "dispatch@northwind.example"]],
    }
)
REORDER_CSV = (
    b"Item;Reorder level;Supplier\n"
    b"Pallet wrap;40 rolls;Packright\n"
    b"Safety gloves;120 pairs;Handsafe\n"
    b"Label printer ribbon;15 ribbons;Inkline\n"
)


def write_fixtures(folder: Path = FIXTURES) -> None:
    """Write the committed readable fixtures (not the encrypted ones)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in (
        ("handbook.docx", HANDBOOK_DOCX),
        ("review.pptx", REVIEW_PPTX),
        ("carriers.xlsx", CARRIERS_XLSX),
        ("reorder.csv", REORDER_CSV),
    ):
        (folder / name).write_bytes(data)


if __name__ == "__main__":
    write_fixtures()
