"""
Converts Markdown files (``.md``) into one Document per section.

Markdown is split at ``#`` and ``##`` headings first (``section_max_level``), so
no chunk spans two sections and every chunk knows its ``section`` (the heading
text). ``#`` lines inside fenced code and YAML front matter are not headings; a
heading without a body joins the next section. ``document_name`` defaults to
the first ``#`` heading, else the file name; the caller's meta wins.

Usage:

```python
from components.converters.markdown_section_converter import MarkdownSectionConverter

documents = MarkdownSectionConverter().run(sources=["guide.md"], meta={"tenant_id": "acme", "tags": ["eng"]})["documents"]
documents[0].meta["section"]  # 'Installation'
```
"""

from haystack import component

from components.converters.source_converter import SectionSourceConverter


@component
class MarkdownSectionConverter(SectionSourceConverter):
    """Reads ``.md`` sources into one Document per heading section, with meta ``section``."""

    source_type = "md"
