"""
Converts PowerPoint files (``.pptx``) into one Document per slide, keeping ``page_number``.

The text of each slide is what Haystack's ``PPTXToDocument`` extracts (text frames, in shape
order); the slide number (1-based) becomes ``page_number``, so chunks never span slides and a
citation names its slide. Slides without text are skipped; a corrupt, encrypted or mislabelled
file, or one without any text, is an error naming the file
(:mod:`components.converters.office_readers`).

Usage:

```python
from components.converters.pptx_slide_converter import PPTXSlideConverter

slides = PPTXSlideConverter().run(sources=["roadmap.pptx"], meta={"tenant_id": "acme", "tags": ["eng"]})
slides["documents"][0].meta["page_number"]  # 1
```
"""

from haystack import component

from components.converters.source_converter import SourceConverter


@component
class PPTXSlideConverter(SourceConverter):
    """Reads ``.pptx`` sources into one Document per slide with text, with meta ``page_number``."""

    source_type = "pptx"
