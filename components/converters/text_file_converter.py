"""
Converts plain-text files (``.txt``) into Documents.

Bytes are decoded strictly (UTF-8, or UTF-16 with a byte-order mark): undecodable
bytes, binary data and empty files are errors naming the file, never silently
replaced characters. Each Document carries ``source_type: txt``, ``source_hash``
(SHA-256 of the bytes), ``document_name`` (the file name) and
``source_updated_at`` (the file's modification time), under the caller's meta.

Usage:

```python
from components.converters.text_file_converter import TextFileConverter

documents = TextFileConverter().run(sources=["notes.txt"], meta={"tenant_id": "acme", "tags": ["hr"]})["documents"]
```
"""

from haystack import component

from components.converters.source_converter import SourceConverter


@component
class TextFileConverter(SourceConverter):
    """Reads ``.txt`` sources into one Document each."""

    source_type = "txt"
