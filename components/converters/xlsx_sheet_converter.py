"""
Converts Excel workbooks (``.xlsx``) into groups of rows per sheet, keeping the sheet as ``section``.

Each sheet is read with openpyxl in read-only mode (formulas give their last computed value) and
cut into groups of rows that each start with the sheet's header row (its first non-empty row), so
every chunk is readable alone and cites its sheet. Empty rows are skipped; a workbook over the
cell bound (``SOURCEBOUND_MAX_SPREADSHEET_CELLS``, empty cells included), a corrupt, encrypted or
mislabelled file, or one without values is an error naming the file
(:mod:`components.converters.office_readers`).

Usage:

```python
from components.converters.xlsx_sheet_converter import XLSXSheetConverter

parts = XLSXSheetConverter().run(sources=["rates.xlsx"], meta={"tenant_id": "acme", "tags": ["finance"]})
parts["documents"][0].meta["section"]  # 'Per diem'
parts["documents"][0].content  # 'Country | Meals (EUR)\\nNetherlands | 45\\n...'
```
"""

from haystack import component

from components.converters.source_converter import SourceConverter


@component
class XLSXSheetConverter(SourceConverter):
    """Reads ``.xlsx`` sources into groups of rows with their header row, with meta ``section`` (the sheet)."""

    source_type = "xlsx"
