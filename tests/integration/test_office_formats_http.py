"""
Word, PowerPoint, Excel and CSV files over HTTP, and the bad-file matrix.

One server for the module (no sample corpus). The committed fixtures (``tests/fixtures/office``)
and a PDF with a word hyphenated across a line end are uploaded through ``/index/upload``; each
format must then answer a question through ``/rag/run`` with a citation carrying its section or
slide number. Every bad file must get a 422 naming the file and the problem, and leave the store
exactly as it was (every point's id, content, meta and vector, from a copy of the idle server's
shard).
"""

import io

import pytest
from support.api_server import ApiServer
from support.indexing_support import make_pdf
from support.office_files import (
    CARRIERS_XLSX,
    FIXTURES,
    HANDBOOK_DOCX,
    REVIEW_PPTX,
    docx_bytes,
    office_expanding_part,
    office_zip_bomb,
    pptx_bytes,
    replace_part,
    xlsx_with_empty_cells,
)
from support.reliability_support import live_snapshot, zip_bomb

pytestmark = [pytest.mark.integration, pytest.mark.slow]

FORM = {"tenant_id": "northwind", "tags": "ops"}
READER = {"tenant_id": "northwind", "user_tags": ["ops"]}
FIXTURE_FILES = ("handbook.docx", "review.pptx", "carriers.xlsx", "reorder.csv")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with ApiServer(
        tmp_path_factory.mktemp("office") / "data", env={"SOURCEBOUND_BOOTSTRAP_CORPUS": "false"}
    ) as running:
        yield running


def _pdf_with_line_end_hyphen(tmp_path) -> bytes:
    return make_pdf(
        tmp_path / "claims.pdf",
        ["Travel claims need a receipt. Submit every claim for reim-\nbursement within 30 days of the trip."],
    ).read_bytes()


@pytest.fixture(scope="module")
def indexed(server, tmp_path_factory):
    files = [("files", (name, (FIXTURES / name).read_bytes())) for name in FIXTURE_FILES]
    files.append(("files", ("claims.pdf", _pdf_with_line_end_hyphen(tmp_path_factory.mktemp("pdf")))))
    files.append(("files", ("glossary.md", "# Glossary\n\nThe speci\ufb01cation of work\ufb02ows.\n".encode())))
    response = server.client.post("/index/upload", files=files, data=FORM)
    assert response.status_code == 200, response.text
    documents = response.json()["result"]["documents"]
    assert [entry["status"] for entry in documents] == ["indexed"] * len(files), documents
    # An upload's document_name is its file name: the tests below find each file's chunks by it.
    return {name for _, (name, _) in files}


def _rag(server, query: str) -> dict:
    response = server.client.post("/rag/run", json={"query": query, **READER})
    assert response.status_code == 200, response.text
    return response.json()["result"]


@pytest.mark.parametrize(
    ("name", "query", "expected", "where"),
    [
        (
            "handbook.docx",
            "How often do forklift operators renew their certification?",
            "18 months",
            {"section": "Safety"},
        ),
        (
            "review.pptx",
            "How many warehouse technicians does Northwind hire in Rotterdam?",
            "14 warehouse technicians",
            {"page_number": 3},
        ),
        (
            "carriers.xlsx",
            "What is the lead time of Blue Heron Freight?",
            "Blue Heron Freight",
            {"section": "Carriers"},
        ),
        ("reorder.csv", "What is the reorder level for safety gloves?", "120 pairs", {}),
        ("claims.pdf", "When must a claim be submitted for reimbursement?", "reimbursement", {"page_number": 1}),
    ],
)
def test_each_format_answers_with_its_section_or_slide(server, indexed, name, query, expected, where):
    result = _rag(server, query)
    assert expected in result["answer"], result
    cited = [citation for citation in result["citations"] if citation["document_name"] == name]
    assert cited, result["citations"]
    assert all(cited[0][key] == value for key, value in where.items()), cited[0]


def test_a_table_chunk_is_readable_alone(server, indexed):
    response = server.client.post(
        "/search/run",
        json={"query": "Blue Heron Freight Scandinavia lead time", **READER, "k": 20, "search_mode": "keyword"},
    )
    assert response.status_code == 200, response.text
    hits = [hit for hit in response.json()["result"]["results"] if hit["document_name"] == "carriers.xlsx"]
    assert len(hits) > 1
    # Every chunk of a sheet starts with that sheet's header row.
    assert all(hit["snippet"].startswith(("Carrier | Region | Lead time (days)\n", "Team | Email\n")) for hit in hits)
    assert any(hit["snippet"].startswith("Carrier | Region") and hit["chunk_index"] > 0 for hit in hits)


@pytest.mark.parametrize(
    ("query", "name", "word"),
    [("specification workflows", "glossary.md", "specification"), ("reimbursement", "claims.pdf", "reimbursement")],
)
def test_bm25_matches_the_normalised_words(server, indexed, query, name, word):
    response = server.client.post("/search/run", json={"query": query, **READER, "k": 3, "search_mode": "keyword"})
    assert response.status_code == 200, response.text
    [top, *_] = response.json()["result"]["results"]
    assert top["document_name"] == name and word in top["snippet"], top


def _encrypted_pdf(tmp_path) -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for page in PdfReader(make_pdf(tmp_path / "plain.pdf", ["Confidential salaries."])).pages:
        writer.add_page(page)
    writer.encrypt("secret")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def _bad_files(tmp_path) -> list:
    pdf = make_pdf(tmp_path / "real.pdf", ["A real PDF about docks."]).read_bytes()
    return [
        ("cut.docx", HANDBOOK_DOCX[: len(HANDBOOK_DOCX) // 2], "the .docx file is corrupt: not a readable ZIP package"),
        (
            "broken.docx",
            replace_part(HANDBOOK_DOCX, "word/document.xml", b"<w:document"),
            "the .docx file is corrupt or unreadable",
        ),
        (
            "broken.xlsx",
            replace_part(CARRIERS_XLSX, "xl/workbook.xml", b"<x"),
            "the .xlsx file is corrupt or unreadable",
        ),
        ("cut.pdf", b"%PDF-1.4\n1 0 obj << /Type /Catalog", "the PDF cannot be parsed"),
        ("locked.docx", (FIXTURES / "encrypted.docx").read_bytes(), "the .docx file is password-protected (encrypted)"),
        ("locked.xlsx", (FIXTURES / "encrypted.xlsx").read_bytes(), "the .xlsx file is password-protected (encrypted)"),
        ("locked.pdf", _encrypted_pdf(tmp_path), "the PDF is encrypted"),
        ("report.docx", pdf, "does not match its .docx extension: its content is a PDF document"),
        ("rates.xlsx", HANDBOOK_DOCX, "the file is a Word document (.docx), not .xlsx"),
        ("handbook.pdf", HANDBOOK_DOCX, "does not start with a %PDF header (its content is a ZIP package)"),
        ("archive.pptx", zip_bomb(1000), "it is a ZIP archive, not an Office document"),
        ("notes.csv", pdf, "its content is a PDF document, not UTF-8 text"),
        ("legacy.docx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 1000, "a legacy binary Office file"),
        ("bomb.docx", office_zip_bomb(HANDBOOK_DOCX, 64 * 1024 * 1024), "looks like a zip bomb"),
        ("empty.docx", docx_bytes(None, [(None, [" "])]), "the Word document is empty"),
        ("zero.xlsx", b"", "the .xlsx file is empty"),
        ("blank.pptx", pptx_bytes([None]), "the PowerPoint file is empty"),
        ("empty.csv", b"\n\n", "the document is empty"),
        ("grid.xlsx", xlsx_with_empty_cells(1_000_000), "the spreadsheet has more than 200000 cells"),
    ]


def test_bad_files_get_a_clear_422_and_change_nothing(server, indexed, tmp_path):
    before = live_snapshot(server.data_dir)
    cases = _bad_files(tmp_path)
    for name, data, needle in cases:
        response = server.client.post("/index/upload", files={"files": (name, data)}, data=FORM)
        assert response.status_code == 422, f"{name}: {response.status_code} {response.text[:300]}"
        body = response.json()
        assert body["error"] == "validation_error" and f"- {name}: " in body["message"], (name, body)
        assert needle in body["message"], (name, body)
    # A good file in the same batch as a bad one is not written either.
    response = server.client.post(
        "/index/upload",
        files=[
            ("files", ("fresh.docx", docx_bytes("Fresh", [("New", ["A brand new policy on ladders."])]))),
            ("files", ("locked.docx", (FIXTURES / "encrypted.docx").read_bytes())),
        ],
        data=FORM,
    )
    assert response.status_code == 422 and "locked.docx: the .docx file is password-protected" in response.text
    after = live_snapshot(server.data_dir)
    assert (after.points, after.content_digest, after.vector_digest) == (
        before.points,
        before.content_digest,
        before.vector_digest,
    )
    assert server.client.get("/health").json()["status"] == "healthy"
    print(f"\nbad files: {len(cases) + 1} uploads refused with 422; store unchanged at {after.points} points")


def _memory_kib(pid: int, field: str) -> int:
    for line in open(f"/proc/{pid}/status", encoding="ascii"):
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"/proc/{pid}/status has no {field}")


@pytest.fixture(scope="module")
def hostile_files():
    # ~11 MB each on the wire, one XML part inflating to 256 MB: neither ratio nor size looks like a classic bomb.
    return {
        "huge.docx": office_expanding_part(HANDBOOK_DOCX, "word/document.xml"),
        "huge.pptx": office_expanding_part(REVIEW_PPTX, "ppt/slides/slide1.xml"),
        "huge.xlsx": office_expanding_part(CARRIERS_XLSX, "xl/worksheets/sheet1.xml"),
    }


def test_hostile_office_files_are_refused_with_bounded_memory(server, indexed, hostile_files):
    pid = server.process.pid
    before = live_snapshot(server.data_dir)
    expected = {
        "huge.docx": "part 'word/document.xml' expands to 256",
        "huge.pptx": "part 'ppt/slides/slide1.xml' expands to 256",
        # A workbook's sheets are streamed, not parsed whole: the total cap refuses it.
        "huge.xlsx": "over the limit of 67108864 (SOURCEBOUND_MAX_EXPANDED_BYTES)",
    }
    for name, data in hostile_files.items():
        assert 9_000_000 < len(data) < 13_000_000, len(data)
        resident = _memory_kib(pid, "VmRSS")
        with open(f"/proc/{pid}/clear_refs", "w", encoding="ascii") as clear:
            clear.write("5")  # restart the peak (VmHWM) from the current resident size
        response = server.client.post("/index/upload", files={"files": (name, data)}, data=FORM)
        peak = _memory_kib(pid, "VmHWM")
        assert response.status_code == 422, (name, response.text[:300])
        assert expected[name] in response.json()["message"], (name, response.json())
        growth_mib = (peak - resident) / 1024
        print(
            f"\n{name}: {len(data) / 2**20:.1f} MiB upload refused; "
            f"peak RSS {resident / 1024:.0f} -> {peak / 1024:.0f} MiB"
        )
        # Parsing the part whole would take gigabytes; the upload's own bytes and one inflate step take tens of MB.
        assert growth_mib < 128, (name, growth_mib)
    after = live_snapshot(server.data_dir)
    assert (after.points, after.content_digest, after.vector_digest) == (
        before.points,
        before.content_digest,
        before.vector_digest,
    )
