"""
Converts PDF files into one Document per page with pypdf, keeping ``page_number``.

Chunks never span pages, so each chunk's ``page_number`` (1-based) is exact.
Pages without text are skipped; a PDF that cannot be parsed, is encrypted, or
has no extractable text at all (scanned images) is an error naming the file.

Usage:

```python
from components.converters.pdf_page_converter import PDFPageConverter

pages = PDFPageConverter().run(sources=["handbook.pdf"], meta={"tenant_id": "acme", "tags": ["hr"]})["documents"]
pages[0].meta["page_number"]  # 1
```
"""

from haystack import component

from components.converters.source_converter import SourceConverter


@component
class PDFPageConverter(SourceConverter):
    """Reads ``.pdf`` sources into one Document per page with text, with meta ``page_number``."""

    source_type = "pdf"
