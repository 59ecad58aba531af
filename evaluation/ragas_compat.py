"""
Imports ragas 0.4.3 in our environment.

``import ragas`` 0.4.3 fails with ``No module named
'langchain_community.chat_models.vertexai'``: ragas imports ``ChatVertexAI`` from a
module that langchain-community 0.4 removed (a known upstream bug). We never use
Vertex AI, so a placeholder module with a ``ChatVertexAI`` class is registered before
ragas is imported; the real module wins whenever it exists. ragas' usage tracking is
switched off (``RAGAS_DO_NOT_TRACK``), as ``components.runtime.offline`` also does.

Usage:

```python
from evaluation.ragas_compat import import_ragas

ragas = import_ragas()
from ragas.metrics import IDBasedContextRecall
```
"""

import importlib
import importlib.util
import os
import sys
import types
import warnings

VERTEXAI_MODULE = "langchain_community.chat_models.vertexai"


class RagasUnavailableError(ImportError):
    """ragas cannot be imported even with the shim; the message says what to install."""


def _module_exists(name: str) -> bool:
    try:
        with warnings.catch_warnings():
            # Finding the module imports langchain_community, which warns that it is being sunset.
            warnings.simplefilter("ignore", DeprecationWarning)
            return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def install_vertexai_placeholder() -> bool:
    """
    Register a placeholder for ``langchain_community.chat_models.vertexai`` if it is missing.

    :returns: True when the placeholder was installed, False when the real module (or an
        earlier placeholder) is already importable.
    """
    if VERTEXAI_MODULE in sys.modules or _module_exists(VERTEXAI_MODULE):
        return False
    placeholder = types.ModuleType(VERTEXAI_MODULE)
    placeholder.__doc__ = "Placeholder registered by evaluation.ragas_compat; Vertex AI is not supported."

    class ChatVertexAI:  # noqa: D401 - a stand-in that fails loudly if anyone uses it
        """Stand-in so that ``import ragas`` works; Vertex AI is not available here."""

        def __init__(self, *args, **kwargs):
            raise RagasUnavailableError(
                "ChatVertexAI is a placeholder from evaluation.ragas_compat; Vertex AI is not supported."
            )

    placeholder.ChatVertexAI = ChatVertexAI
    sys.modules[VERTEXAI_MODULE] = placeholder
    return True


def import_ragas() -> types.ModuleType:
    """
    Import ragas with the workaround in place and tracking disabled.

    :returns: The ``ragas`` module.
    :raises RagasUnavailableError: If ragas is not installed or still fails to import.
    """
    os.environ["RAGAS_DO_NOT_TRACK"] = "true"
    install_vertexai_placeholder()
    try:
        return importlib.import_module("ragas")
    except ImportError as error:
        raise RagasUnavailableError(
            f"ragas does not import ({error}); install the pinned set with `make install`."
        ) from error
