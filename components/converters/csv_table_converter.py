"""
Converts CSV files (``.csv``) into groups of rows that each start with the header row.

The bytes are decoded strictly (UTF-8, or UTF-16 with a byte-order mark), the delimiter is
sniffed among ``,``, ``;``, tab and ``|``, and the rows are cut into groups that fit one chunk,
each starting with the first non-empty row (the header), so every chunk is readable alone.
Undecodable bytes, a file over the cell bound (``SOURCEBOUND_MAX_SPREADSHEET_CELLS``) or one
without values is an error naming the file (:mod:`components.converters.office_readers`).

Usage:

```python
from components.converters.csv_table_converter import CSVTableConverter

parts = CSVTableConverter().run(sources=["rates.csv"], meta={"tenant_id": "acme", "tags": ["finance"]})
parts["documents"][0].content  # 'Country | Meals (EUR)\\nNetherlands | 45\\n...'
```
"""

from haystack import component

from components.converters.source_converter import SourceConverter


@component
class CSVTableConverter(SourceConverter):
    """Reads ``.csv`` sources into groups of rows with their header row."""

    source_type = "csv"
