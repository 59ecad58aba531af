"""
Converts HTML pages (``.html``) into one Document per section, with the stdlib ``html.parser``.

Scripts, styles, navigation, footers, asides and forms are dropped; block
elements become paragraphs; ``<h1>``/``<h2>`` (``section_max_level``) start a
section whose heading is meta ``section``. From the page it also takes
``document_name`` (``<title>``), ``language`` (``<html lang>``) and
``source_uri`` (``<link rel="canonical">`` or ``og:url``), under the caller's
meta. ``DocumentIdentifier`` later canonicalises ``source_uri`` (lower-case
host, no fragment, no tracking parameters, one trailing-slash form; see
``components.core.url_canonicalizer``) and applies the domain allowlist, so URL
variants of one page collapse to one ``document_id``.

Usage:

```python
from components.converters.html_section_converter import HTMLSectionConverter

documents = HTMLSectionConverter().run(sources=["page.html"], meta={"tenant_id": "acme", "tags": ["help"]})["documents"]
```
"""

from haystack import component

from components.converters.source_converter import SectionSourceConverter


@component
class HTMLSectionConverter(SectionSourceConverter):
    """Reads ``.html`` sources into one Document per heading section, with meta ``section``."""

    source_type = "html"
