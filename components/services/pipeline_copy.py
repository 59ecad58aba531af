"""
A faster, equivalent copy of component inputs for Haystack's ``Pipeline.run``.

Why: before every component runs, Haystack 3.4 deep-copies its inputs with
``haystack.core.pipeline.utils._deepcopy_with_exceptions``. That function walks lists
element by element and asks of every element ``isinstance(element, Component)``; ``Component``
is a runtime-checkable ``typing.Protocol``, and on Python 3.11 that check costs ~7-25 µs even
for a float. A 384-float query embedding therefore costs 3-10 ms *per receiving component*, and
the search pipeline hands it to four of them: ``bench`` measured the copies at ~48 % of the
CPU time of a ``/search/run`` request (24 of 50 ms on the shared 2-core machine), more than the
query embedding itself.

What: :func:`install_fast_input_copy` puts a front in place of that function (in the modules
that imported it) which returns exactly what it would, faster:

* ``int``, ``float``, ``str``, ``bool``, ``None`` and ``bytes`` are returned as they are
  (``copy.deepcopy`` returns these immutable objects themselves, too);
* a ``list`` of only such values is copied with ``list.copy()`` (a new list holding the same
  immutable elements: what the element-wise deep copy builds); any other ``list`` (exactly that
  class) and a ``dict`` (exactly that class: a component's inputs, a filter) are rebuilt element by
  element through this front, as Haystack's function rebuilds them, without its per-call imports and
  protocol checks on the container itself;
* a ``haystack.Document`` (exactly that class) is rebuilt the way ``copy.deepcopy`` rebuilds it
  (``Document.__new__`` and its ``__dict__`` from deep copies of the attributes, with one shared
  memo so aliasing and cycles are kept): lists and dicts of such values (the embedding, the meta
  dict and its tag lists) are walked directly, anything else goes to ``copy.deepcopy``;
* everything else goes to Haystack's own function unchanged (Components, Tools and Toolsets
  still pass through uncopied; containers recurse through this front).

So components still get private copies: mutating an input never changes another component's
input. The install is idempotent and checks the Haystack internals it relies on; if they
moved, it logs a warning and changes nothing.

Usage:

```python
from components.services.pipeline_copy import install_fast_input_copy

install_fast_input_copy()      # once per process, before serving (hayhooks_app does it)
```
"""

import importlib
import logging
from copy import deepcopy
from typing import Any

from haystack import Document

logger = logging.getLogger(__name__)

_ATOMIC = frozenset({int, float, str, bool, type(None), bytes})
_UTILS = "haystack.core.pipeline.utils"
# Modules that imported the function by name (Haystack 3.4); utils itself recurses through its global.
_IMPORTERS = ("haystack.core.pipeline.base", "haystack.core.pipeline.pipeline", "haystack.core.pipeline.async_pipeline")
_FUNCTION = "_deepcopy_with_exceptions"

_original: Any = None


def _only_atomic(items: Any) -> bool:
    """Whether every element (or key) is immutable; the types are collected in C: 384 floats cost a few µs."""
    return _ATOMIC.issuperset(map(type, items))


def _copy_value(value: Any, memo: dict[int, Any]) -> Any:
    """``copy.deepcopy(value, memo)``, with lists and dicts walked here (the memo keeps aliasing and cycles)."""
    kind = type(value)
    if kind in _ATOMIC:
        return value
    copied = memo.get(id(value))
    if copied is not None:
        return copied
    if kind is list and _only_atomic(value):
        copied = memo[id(value)] = value.copy()
        return copied
    if kind is dict and _only_atomic(value):  # a meta dict: str keys, mostly scalar values
        copied = memo[id(value)] = {}
        for key, item in value.items():
            copied[key] = item if type(item) in _ATOMIC else _copy_value(item, memo)
        return copied
    return deepcopy(value, memo)


def _copy_document(document: Document) -> Document:
    memo: dict[int, Any] = {}
    clone = Document.__new__(Document)
    clone.__dict__.update({key: _copy_value(value, memo) for key, value in document.__dict__.items()})
    return clone


def fast_deepcopy_with_exceptions(obj: Any) -> Any:
    """
    Haystack's ``_deepcopy_with_exceptions`` with fast paths that return equal results (see the module doc).

    :param obj: A component input value.
    :returns: Its deep copy (Components, Tools and Toolsets: the object itself).
    """
    kind = type(obj)
    if kind in _ATOMIC:
        return obj
    if kind is dict:  # a component's inputs, a filter: Haystack copies a dict value by value, into a plain dict
        return {key: fast_deepcopy_with_exceptions(value) for key, value in obj.items()}
    if kind is list:
        if _only_atomic(obj):
            return obj.copy()
        return [fast_deepcopy_with_exceptions(value) for value in obj]  # Haystack's, element by element
    if kind is Document and hasattr(obj, "__dict__"):
        return _copy_document(obj)
    return _original(obj)


def install_fast_input_copy() -> bool:
    """
    Route Haystack's pipeline input copies through :func:`fast_deepcopy_with_exceptions`.

    :returns: ``True`` when installed (now or before), ``False`` when Haystack's internals differ (nothing changed).
    """
    global _original
    if _original is not None:
        return True
    try:
        utils = importlib.import_module(_UTILS)
        original = getattr(utils, _FUNCTION)
    except (ImportError, AttributeError):
        logger.warning("Haystack has no %s.%s; pipeline input copies are left as they are.", _UTILS, _FUNCTION)
        return False
    targets = [utils]
    for name in _IMPORTERS:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if getattr(module, _FUNCTION, None) is original:
            targets.append(module)
    _original = original
    for module in targets:
        setattr(module, _FUNCTION, fast_deepcopy_with_exceptions)
    logger.debug("Fast pipeline input copies installed in %s.", ", ".join(module.__name__ for module in targets))
    return True


def uninstall_fast_input_copy() -> None:
    """Put Haystack's own function back (for tests and before/after measurements)."""
    global _original
    if _original is None:
        return
    for name in (_UTILS, *_IMPORTERS):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if getattr(module, _FUNCTION, None) is fast_deepcopy_with_exceptions:
            setattr(module, _FUNCTION, _original)
    _original = None
