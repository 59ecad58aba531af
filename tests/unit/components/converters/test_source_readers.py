"""The readers every converter and the service's validation share."""

import pytest
from support.indexing_support import make_pdf

from components.converters.source_readers import (
    SourceReadError,
    decode_text,
    markdown_title,
    parse_html,
    read_pdf_pages,
    read_source,
    split_markdown_sections,
)


@pytest.mark.unit
class TestDecodeText:
    def test_utf8_and_boms(self):
        assert decode_text("héllo".encode()) == "héllo"
        assert decode_text(b"\xef\xbb\xbfhi") == "hi"
        assert decode_text("hi".encode("utf-16")) == "hi"

    def test_undecodable_bytes_name_the_offset(self):
        with pytest.raises(SourceReadError, match=r"undecodable bytes.*0xff at offset 3"):
            decode_text(b"abc\xff\xfe")

    def test_binary_data_is_rejected(self):
        with pytest.raises(SourceReadError, match="NUL"):
            decode_text(b"a\x00b")


@pytest.mark.unit
class TestMarkdownSections:
    def test_splits_at_level_one_and_two_only(self):
        sections = split_markdown_sections(
            "# Guide\n\nIntro.\n\n## Install\n\nRun it.\n\n### Details\n\nMore.\n\n## Use\n\nUse it."
        )
        assert [section.heading for section in sections] == ["Guide", "Install", "Use"]
        assert sections[1].text.startswith("## Install") and "### Details" in sections[1].text

    def test_fences_front_matter_and_setext(self):
        text = "---\ntitle: x\n---\nPreface.\n\nSetext title\n============\n\nBody.\n\n```\n## not a heading\n```\n"
        sections = split_markdown_sections(text)
        assert [section.heading for section in sections] == [None, "Setext title"]
        assert "title: x" not in sections[0].text
        assert "## not a heading" in sections[1].text

    def test_heading_without_body_joins_next_section(self):
        sections = split_markdown_sections("# **Title**\n## Part [one](http://x)\n\nText.")
        assert len(sections) == 1
        assert sections[0].heading == "Part one" and sections[0].text.startswith("# **Title**")
        assert markdown_title(sections) == "Title"


@pytest.mark.unit
class TestParseHtml:
    def test_sections_title_language_canonical(self):
        content = parse_html(
            "<html lang='EN'><head><title>T  1</title><link rel='canonical' href='https://x.com/a'><style>p{}</style>"
            "</head><body><nav>menu</nav><h1>Top</h1><p>Intro &amp; more\ntext.</p><h2>Part</h2><p>A <b>b</b>.</p>"
            "<h3>Deep</h3><ul><li>one</li></ul><pre>code\n  kept</pre><script>x()</script><footer>FOOTER</footer></body></html>"
        )
        assert (content.title, content.language, content.canonical_url) == ("T 1", "en", "https://x.com/a")
        assert [section.heading for section in content.sections] == ["Top", "Part"]
        assert content.sections[0].text == "Top\n\nIntro & more text."
        part = content.sections[1].text
        assert "A b." in part and "Deep" in part and "- one" in part and "code\n  kept" in part
        assert "menu" not in part and "x()" not in part and "FOOTER" not in part


@pytest.mark.unit
class TestPdf:
    def test_pages_in_order(self, tmp_path):
        pdf = make_pdf(tmp_path / "a.pdf", ["First page text.", "Second page text."])
        pages = read_pdf_pages(pdf.read_bytes())
        assert len(pages) == 2 and "First" in pages[0] and "Second" in pages[1]

    @pytest.mark.parametrize("data", [b"not a pdf", b"%PDF-1.4\n garbage"])
    def test_unparsable(self, data):
        with pytest.raises(SourceReadError, match="PDF cannot be parsed"):
            read_pdf_pages(data)

    def test_pdf_without_text(self, tmp_path):
        pdf = make_pdf(tmp_path / "empty.pdf", [""])
        with pytest.raises(SourceReadError, match="no extractable text"):
            read_pdf_pages(pdf.read_bytes())


@pytest.mark.unit
class TestReadSource:
    def test_each_type(self, tmp_path):
        assert read_source(b"plain", "txt").parts == [("plain", {})]
        md = read_source(b"# T\n\nx\n\n## S\n\ny", "md")
        assert md.meta["document_name"] == "T" and [meta["section"] for _, meta in md.parts] == ["T", "S"]
        html = read_source(b"<link rel=canonical href='/p'><p>x</p>", "html", base_uri="https://x.com/a/b")
        assert html.meta["source_uri"] == "https://x.com/p"
        pdf = read_source(make_pdf(tmp_path / "a.pdf", ["one", "", "three"]).read_bytes(), "pdf")
        assert [meta["page_number"] for _, meta in pdf.parts] == [1, 3]

    @pytest.mark.parametrize("source_type", ["txt", "md", "html"])
    def test_whitespace_only_is_empty(self, source_type):
        with pytest.raises(SourceReadError, match="empty|no readable text"):
            read_source(b" \n\t ", source_type)
