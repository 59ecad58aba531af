import io
import zipfile

import pytest
from support.indexing_support import make_pdf
from support.office_files import (
    CARRIERS_XLSX,
    FIXTURES,
    HANDBOOK_DOCX,
    REVIEW_PPTX,
    docx_bytes,
    office_zip_bomb,
    pptx_bytes,
    replace_part,
    understate_size,
    xlsx_bytes,
    xlsx_with_empty_cells,
)

from components.converters.office_readers import (
    OfficeReadError,
    cell_text,
    describe_content,
    open_package,
    read_csv,
    read_docx,
    read_pptx,
    read_xlsx,
    table_parts,
)
from components.converters.source_readers import SourceReadError, read_source


def _zip(**parts: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    return buffer.getvalue()


@pytest.mark.unit
class TestReadDocx:
    def test_headings_start_sections_and_title_names_the_document(self):
        parts, meta = read_docx(HANDBOOK_DOCX)
        assert meta == {"document_name": "Warehouse handbook"}
        assert parts[:3] == [
            ("Warehouse handbook\n\nThis handbook applies to every Northwind warehouse.", {"section": None}),
            ("Safety\n\nForklift operators renew their certification every 18 months.", {"section": "Safety"}),
            ("Shifts\n\nThe night shift starts at 22:00 and ends at 06:00.", {"section": "Shifts"}),
        ]

    def test_tables_keep_their_header_row(self):
        parts, _ = read_docx(HANDBOOK_DOCX)
        assert parts[3] == ("Dock | Opening hours\nDock A | 05:00-21:00\nDock B | 07:00-19:00", {"section": "Shifts"})

    def test_a_heading_without_body_joins_the_next_section_and_deeper_levels_stay_inside(self):
        from docx import Document

        document = Document()
        document.add_heading("Policies", level=1)
        document.add_heading("Travel", level=1)
        document.add_paragraph("Book trains for trips under 500 km.")
        document.add_heading("Exceptions", level=3)
        document.add_paragraph("Night trains count as lodging.")
        buffer = io.BytesIO()
        document.save(buffer)
        parts, _ = read_docx(buffer.getvalue())
        assert parts == [
            (
                "Policies\n\nTravel\n\nBook trains for trips under 500 km.\n\n"
                "Exceptions\n\nNight trains count as lodging.",
                {"section": "Travel"},
            )
        ]

    def test_the_committed_fixture_reads_like_the_generated_file(self):
        assert read_docx((FIXTURES / "handbook.docx").read_bytes()) == read_docx(HANDBOOK_DOCX)


@pytest.mark.unit
class TestReadPptx:
    def test_one_part_per_slide_with_text_and_its_slide_number(self):
        assert read_pptx(REVIEW_PPTX) == [
            ("Quarterly review\nRevenue grew 12 percent over the third quarter.", {"page_number": 1}),
            ("Hiring plan\nNorthwind hires 14 warehouse technicians in Rotterdam next year.", {"page_number": 3}),
        ]
        assert read_pptx((FIXTURES / "review.pptx").read_bytes()) == read_pptx(REVIEW_PPTX)

    def test_slide_tables_follow_their_slide_with_the_header_row(self):
        from pptx import Presentation
        from pptx.util import Inches

        presentation = Presentation()
        slide = presentation.slides.add_slide(presentation.slide_layouts[5])
        slide.shapes.title.text = "Shipping rates"
        table = slide.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(6), Inches(2)).table
        for row, values in enumerate([("Zone", "Rate"), ("Benelux", "EUR 12"), ("Nordics", "EUR 19")]):
            for column, value in enumerate(values):
                table.cell(row, column).text = value
        buffer = io.BytesIO()
        presentation.save(buffer)
        assert read_pptx(buffer.getvalue()) == [
            ("Shipping rates", {"page_number": 1}),
            ("Zone | Rate\nBenelux | EUR 12\nNordics | EUR 19", {"page_number": 1}),
        ]


@pytest.mark.unit
class TestReadXlsx:
    def test_sheets_are_sections_and_every_part_starts_with_the_header(self):
        parts, meta = read_xlsx(CARRIERS_XLSX)
        assert meta == {"document_name": None}
        carriers = [text for text, part_meta in parts if part_meta == {"section": "Carriers"}]
        assert len(carriers) > 1
        assert all(text.startswith("Carrier | Region | Lead time (days)\n") for text in carriers)
        rows = [line for text in carriers for line in text.split("\n")[1:]]
        assert rows[0] == "Carrier 1 | Region 1 | 2" and rows[-1] == "Blue Heron Freight | Scandinavia | 6"
        assert len(rows) == 40  # every row once
        assert parts[-1] == ("Team | Email\nDispatch | dispatch@northwind.example", {"section": "Contacts"})

    def test_values_empty_rows_and_empty_sheets(self):
        from datetime import datetime

        data = xlsx_bytes(
            {
                "Rates": [["Item", "Rate", "From"], [], ["Meals", 45.0, datetime(2026, 1, 1)], ["Hotel", 149.5, None]],
                "Blank": [],
            }
        )
        parts, _ = read_xlsx(data)
        assert parts == [("Item | Rate | From\nMeals | 45 | 2026-01-01\nHotel | 149.5", {"section": "Rates"})]

    def test_the_cell_bound_counts_empty_cells(self, monkeypatch):
        with pytest.raises(OfficeReadError, match=r"more than 200000 cells .*SOURCEBOUND_MAX_SPREADSHEET_CELLS"):
            read_xlsx(xlsx_with_empty_cells(1_000_000))
        monkeypatch.setenv("SOURCEBOUND_MAX_SPREADSHEET_CELLS", "50")
        with pytest.raises(OfficeReadError, match="more than 50 cells"):
            read_xlsx(CARRIERS_XLSX)


@pytest.mark.unit
class TestReadCsv:
    def test_delimiter_is_sniffed_and_the_header_repeats(self):
        text = "Item;Reorder level\n" + "".join(f"Part {n};{n} boxes\n" for n in range(80))
        parts = read_csv(text)
        assert len(parts) > 1 and all(part.startswith("Item | Reorder level\n") for part, _ in parts)
        assert parts[0][0].split("\n")[1] == "Part 0 | 0 boxes"

    def test_quoted_fields_and_pipes(self):
        assert read_csv('name,notes\n"Smith, J.","a|b"\n') == [("name | notes\nSmith, J. | a/b", {"section": None})]

    @pytest.mark.parametrize("text", ["", ",,,\n,,\n", "  \n"])
    def test_no_values_is_empty(self, text):
        with pytest.raises(OfficeReadError, match="the CSV file is empty"):
            read_csv(text)


@pytest.mark.unit
class TestTableParts:
    def test_parts_stay_under_the_token_budget(self):
        from components.preprocessors.token_chunker import count_tokens

        rows = [["Code", "Description"]] + [
            [f"{n:05d}", f"Spare part number {n} for conveyor belts"] for n in range(200)
        ]
        parts = table_parts(rows, max_tokens=60)
        assert len(parts) > 10 and all(count_tokens(part) <= 62 for part in parts)
        assert sum(len(part.split("\n")) - 1 for part in parts) == 200

    def test_cell_text(self):
        assert [cell_text(value) for value in (None, 3.0, 2.5, True, " a \n b ")] == ["", "3", "2.5", "TRUE", "a b"]


@pytest.mark.unit
class TestBadOfficeFiles:
    @pytest.mark.parametrize(
        ("name", "source_type", "needle"),
        [
            ("encrypted.docx", "docx", "the .docx file is password-protected (encrypted)"),
            ("encrypted.xlsx", "xlsx", "the .xlsx file is password-protected (encrypted)"),
        ],
    )
    def test_password_protected(self, name, source_type, needle):
        with pytest.raises(SourceReadError, match=needle.replace("(", r"\(").replace(")", r"\)")):
            read_source((FIXTURES / name).read_bytes(), source_type)

    def test_extension_that_lies(self, tmp_path):
        pdf = make_pdf(tmp_path / "real.pdf", ["A real PDF."]).read_bytes()
        cases = [
            (pdf, "docx", "does not match its .docx extension: its content is a PDF document"),
            (b"just some notes", "pptx", "does not match its .pptx extension: its content is plain text"),
            (HANDBOOK_DOCX, "xlsx", r"the file is a Word document \(.docx\), not .xlsx; rename it to .docx"),
            (CARRIERS_XLSX, "pptx", r"the file is an Excel file \(.xlsx\), not .pptx"),
            (_zip(**{"notes.txt": b"hello"}), "docx", "it is a ZIP archive, not an Office document"),
            (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 600, "docx", r"legacy binary Office file \(.doc"),
            (HANDBOOK_DOCX, "pdf", "does not start with a %PDF header \\(its content is a ZIP package\\)"),
            (HANDBOOK_DOCX, "txt", "its content is a ZIP package, not UTF-8 text"),
            (pdf, "csv", "its content is a PDF document, not UTF-8 text"),
        ]
        for data, source_type, needle in cases:
            with pytest.raises(SourceReadError, match=needle):
                read_source(data, source_type)

    def test_corrupt(self):
        with pytest.raises(SourceReadError, match="the .docx file is corrupt: not a readable ZIP package"):
            read_source(HANDBOOK_DOCX[: len(HANDBOOK_DOCX) // 2], "docx")
        broken = replace_part(HANDBOOK_DOCX, "word/document.xml", b"<w:document><w:body>")
        with pytest.raises(SourceReadError, match="the .docx file is corrupt or unreadable: XMLSyntaxError"):
            read_source(broken, "docx")
        broken = replace_part(CARRIERS_XLSX, "xl/workbook.xml", b"not xml")
        with pytest.raises(SourceReadError, match="the .xlsx file is corrupt or unreadable"):
            read_source(broken, "xlsx")

    def test_zip_bomb_is_refused_before_inflating(self, monkeypatch):
        with pytest.raises(SourceReadError, match=r"looks like a zip bomb: its part 'word/media/padding.bin'"):
            read_source(office_zip_bomb(HANDBOOK_DOCX, 32 * 1024 * 1024), "docx")
        monkeypatch.setenv("SOURCEBOUND_MAX_EXPANDED_BYTES", "10000")
        with pytest.raises(SourceReadError, match=r"would expand to \d+ bytes, over the limit of 10000"):
            read_source(HANDBOOK_DOCX, "docx")

    def test_an_xml_part_is_capped_before_it_is_parsed(self, monkeypatch):
        big = docx_bytes("Big", [(None, [f"Paragraph {n} of a long document." for n in range(4000)])])
        assert read_docx(big)[0]  # under the default caps
        monkeypatch.setenv("SOURCEBOUND_MAX_OFFICE_PART_BYTES", "100000")
        with pytest.raises(
            SourceReadError,
            match=r"part 'word/document.xml' expands to \d+ bytes, over the limit of 100000 bytes "
            r"\(SOURCEBOUND_MAX_OFFICE_PART_BYTES\)",
        ):
            read_source(big, "docx")

    def test_declared_sizes_are_not_trusted(self, monkeypatch):
        # The directory says 1000 bytes; the part inflates to 3 MB. Nothing past the declared size is inflated:
        # the part fails its CRC check (a corrupt file), never reaching a parser.
        xml = b'<?xml version="1.0"?><w:document xmlns:w="urn:w"><w:body>' + b"<w:p/>" * 500_000 + b"</w:body>"
        lying = understate_size(replace_part(HANDBOOK_DOCX, "word/document.xml", xml), "word/document.xml", 1000)
        assert zipfile.ZipFile(io.BytesIO(lying)).getinfo("word/document.xml").file_size == 1000
        with pytest.raises(SourceReadError, match=r"the .docx file is corrupt: its part 'word/document.xml': Bad CRC"):
            read_source(lying, "docx")
        # The streamed count also holds when the directory understates the total.
        monkeypatch.setenv("SOURCEBOUND_MAX_EXPANDED_BYTES", "200000")
        honest_parts = replace_part(HANDBOOK_DOCX, "word/media/a.bin", b"\0" * 150_000)
        understated = understate_size(
            replace_part(honest_parts, "word/media/b.bin", b"\0" * 150_000), "word/media/b.bin", 150_000
        )
        with pytest.raises(SourceReadError, match=r"over the limit of 200000"):
            read_source(understated, "docx")

    def test_a_workbooks_sheets_are_streamed_not_capped_per_part(self, monkeypatch):
        monkeypatch.setenv("SOURCEBOUND_MAX_OFFICE_PART_BYTES", "1000")
        with pytest.raises(SourceReadError, match=r"part '(?!xl/worksheets/)[^']+' expands"):
            read_source(CARRIERS_XLSX, "xlsx")
        monkeypatch.setenv("SOURCEBOUND_MAX_OFFICE_PART_BYTES", "20000")
        workbook = xlsx_bytes({"Rates": [["Item", "Rate"]] + [[f"Item {n}", n] for n in range(3000)]})
        sheet = zipfile.ZipFile(io.BytesIO(workbook)).getinfo("xl/worksheets/sheet1.xml")
        assert sheet.file_size > 20000  # over the part cap, read anyway: openpyxl streams it
        assert read_xlsx(workbook)[0]

    @pytest.mark.parametrize(
        ("data", "source_type", "needle"),
        [
            (b"", "docx", r"the .docx file is empty \(0 bytes"),
            (b"", "xlsx", r"the .xlsx file is empty \(0 bytes"),
            (docx_bytes(None, [(None, ["", "  "])]), "docx", "the Word document is empty: it has no text"),
            (pptx_bytes([None, None]), "pptx", "the PowerPoint file is empty: it has no text"),
            (xlsx_bytes({"A": [], "B": [[None, None]]}), "xlsx", "the spreadsheet is empty: it has no text"),
            (b"\xef\xbb\xbf \n", "csv", "the document is empty"),
        ],
    )
    def test_empty_documents(self, data, source_type, needle):
        with pytest.raises(SourceReadError, match=needle):
            read_source(data, source_type)

    def test_describe_content(self):
        assert describe_content(b"%PDF-1.7") == "a PDF document"
        assert describe_content(b"\x89PNG\r\n") == "a PNG image"
        assert describe_content(b"\x00\x01\x02\xff") is None

    def test_open_package_closes_nothing_it_did_not_open(self):
        package = open_package(HANDBOOK_DOCX, "docx")
        assert "word/document.xml" in package.namelist()
        package.close()
