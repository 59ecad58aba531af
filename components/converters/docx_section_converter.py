"""
Converts Word files (``.docx``) into one Document per section and per group of table rows.

The text is Haystack's ``DOCXToDocument`` paragraph text (text boxes included), walked so that
``Heading 1``/``Heading 2`` paragraphs (``section_max_level``) start sections: every chunk knows
its ``section`` (the heading text). A heading without a body joins the next section. Tables are
cut into groups of rows that each start with the header row. ``document_name`` defaults to the
``Title`` paragraph or the file's title property, else the file name; the caller's meta wins.
A corrupt, encrypted, mislabelled or zip-bomb file, or one without text, is an error naming the
file (:mod:`components.converters.office_readers`).

Usage:

```python
from components.converters.docx_section_converter import DOCXSectionConverter

meta = {"tenant_id": "acme", "tags": ["hr"]}
documents = DOCXSectionConverter().run(sources=["handbook.docx"], meta=meta)["documents"]
documents[0].meta["section"]  # 'Travel'
```
"""

from haystack import component

from components.converters.source_converter import SectionSourceConverter


@component
class DOCXSectionConverter(SectionSourceConverter):
    """Reads ``.docx`` sources into one Document per heading section (meta ``section``) and table row group."""

    source_type = "docx"
