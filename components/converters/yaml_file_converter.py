"""
Converts YAML files (``.yaml``/``.yml``: specifications, configuration) into one Document each.

The file is read as text (strict UTF-8, or UTF-16 with a byte-order mark), not parsed: keys,
values and comments are all what a reader searches for, and a spec with a syntax error is still
worth finding. Each Document carries ``source_type: yaml``, so the chunker can keep a spec whole
when it fits (``components.preprocessors.source_aware_chunker``).

Usage:

```python
from components.converters.yaml_file_converter import YAMLFileConverter

documents = YAMLFileConverter().run(sources=["service.project-spec.yaml"], meta={"tenant_id": "acme", "tags": ["eng"]})
documents["documents"][0].meta["source_type"]  # 'yaml'
```
"""

from haystack import component

from components.converters.source_converter import SourceConverter


@component
class YAMLFileConverter(SourceConverter):
    """Reads ``.yaml``/``.yml`` sources into one Document each."""

    source_type = "yaml"
