import pytest
from haystack.dataclasses import ByteStream

from components.converters.html_section_converter import HTMLSectionConverter
from components.core.document_identity import IndexingValidationError

PAGE = (
    b"<html lang='en'><head><title>Timesheets</title>"
    b"<link rel='canonical' href='https://Help.Example.com/t/?utm_source=x'></head>"
    b"<body><h1>Timesheets</h1><p>Submit weekly.</p><h2>Approval</h2><p>Managers approve.</p></body></html>"
)


@pytest.mark.unit
class TestHTMLSectionConverter:
    def test_init(self):
        assert HTMLSectionConverter().section_max_level == 2

    def test_to_dict(self):
        assert HTMLSectionConverter().to_dict() == {
            "type": "components.converters.html_section_converter.HTMLSectionConverter",
            "init_parameters": {"section_max_level": 2},
        }

    def test_from_dict(self):
        assert (
            HTMLSectionConverter.from_dict(HTMLSectionConverter(section_max_level=1).to_dict()).section_max_level == 1
        )

    def test_run_sections_and_page_meta(self):
        documents = HTMLSectionConverter().run(sources=[ByteStream(PAGE, meta={"file_path": "t.html"})])["documents"]
        assert [doc.meta["section"] for doc in documents] == ["Timesheets", "Approval"]
        meta = documents[0].meta
        assert meta["document_name"] == "Timesheets" and meta["language"] == "en"
        # Canonicalised later by DocumentIdentifier; the converter reports the page's own link.
        assert meta["source_uri"] == "https://Help.Example.com/t/?utm_source=x"
        assert documents[1].content == "Approval\n\nManagers approve."

    def test_run_caller_source_uri_wins(self):
        stream = ByteStream(PAGE, meta={"file_path": "t.html", "source_uri": "https://mirror.example.org/t"})
        documents = HTMLSectionConverter().run(sources=[stream])["documents"]
        assert documents[0].meta["source_uri"] == "https://mirror.example.org/t"

    def test_run_rejects_page_without_text(self):
        stream = ByteStream(b"<html><script>x()</script></html>", meta={"file_path": "s.html"})
        with pytest.raises(IndexingValidationError, match="s.html: the HTML page has no readable text"):
            HTMLSectionConverter().run(sources=[stream])
