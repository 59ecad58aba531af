"""
What every sourcebound PipelineWrapper shares.

* ``ServiceWrapper``: ``setup()`` takes the process's ``ServiceContainer`` and the wrapper's
  pipeline from it (loaded from YAML once per process, not once per wrapper).
* ``takes(RequestModel)``: turns a strict pydantic request model into the ``run_api`` signature
  Hayhooks builds its request schema from (one source of truth for fields, bounds and
  descriptions), validates the parsed body into the model, maps domain errors to HTTP
  errors, and passes ``(request, headers)`` to the method.

Usage (in ``pipelines/search/pipeline_wrapper.py``):

```python
class PipelineWrapper(ServiceWrapper):
    pipeline_kind = "search"

    @takes(SearchRequestBody, returns=SearchResponse)
    def run_api(self, request: SearchRequestBody, headers: Headers | None) -> dict:
        '''Search the index.'''
        ...
```
"""

import inspect
from collections.abc import Callable
from functools import wraps
from typing import Annotated, Any

from hayhooks import BasePipelineWrapper
from pydantic import BaseModel
from starlette.datastructures import Headers

from components.core.requester import Identity
from hayhooks_app.container import ServiceContainer, get_container
from hayhooks_app.errors import raise_api_errors
from hayhooks_app.identity import WriteAuthority, authorize_write, resolve_identity, write_authority
from hayhooks_app.schemas import FIELD_DESCRIPTIONS


class ServiceWrapper(BasePipelineWrapper):
    """
    A PipelineWrapper over the shared service container.

    :cvar pipeline_kind: Which shared pipeline this wrapper exposes (``indexing``, ``search`` or ``rag``).
    """

    pipeline_kind = "indexing"
    # Hayhooks' own MCP/A2A servers would call wrappers without the request headers (no api_key identity);
    # agents get MCP tools from hayhooks_app.mcp_server, which passes them.
    skip_mcp = True
    skip_a2a = True

    def setup(self) -> None:
        self.container: ServiceContainer = get_container()
        self.pipeline = self.container.pipeline(self.pipeline_kind)

    def identify(self, headers: Headers | None, request: BaseModel) -> Identity:
        """The identity of a read request (see ``identity.resolve_identity``)."""
        return resolve_identity(
            self.container.settings.auth_mode,
            self.container.credentials,
            headers,
            tenant_id=getattr(request, "tenant_id", None),
            user_tags=getattr(request, "user_tags", None),
            user_id=getattr(request, "user_id", None),
            project_id=getattr(request, "project_id", None),
        )

    def writer(self, headers: Headers | None, request: BaseModel, tenant_ids: set[str]) -> WriteAuthority:
        """
        The writer of a change to the index (``identity.write_authority``): the key id and the write rule the
        services apply (docs/contract.md, "Write rule"); the body's caller fields narrow it.
        """
        return write_authority(
            self.container.settings.auth_mode,
            self.container.credentials,
            headers,
            tenant_ids=tenant_ids,
            user_tags=getattr(request, "user_tags", None),
            user_id=getattr(request, "user_id", None),
            project_id=getattr(request, "project_id", None),
        )

    def authorize_write(
        self,
        headers: Headers | None,
        tenant_ids: set[str],
        tags: set[str] | None = None,
        permission: str = "write",
        user_ids: set[str] | None = None,
        public: bool = False,
    ) -> str | None:
        """Check a change to the index (see ``identity.authorize_write``); returns the key id for the records."""
        return authorize_write(
            self.container.settings.auth_mode,
            self.container.credentials,
            headers,
            tenant_ids=tenant_ids,
            tags=tags,
            permission=permission,
            user_ids=user_ids,
            public=public,
        )


def _field_annotation(field) -> Any:
    annotation = field.annotation
    if field.metadata:
        return Annotated[(annotation, *field.metadata)]
    return annotation


def takes(model: type[BaseModel], returns: Any = dict) -> Callable:
    """
    Give a wrapper method the request schema of ``model``.

    The decorated method is called as ``method(self, request, headers)`` with ``request`` a
    validated ``model`` instance; its docstring's first line becomes the endpoint description and
    the model's field descriptions the parameter descriptions.

    :param model: The strict request model.
    :param returns: The result type Hayhooks wraps as ``{"result": ...}`` (a pydantic model documents it).
    """

    def decorate(method: Callable) -> Callable:
        @wraps(method)
        def run(self, headers: Headers | None = None, **fields: Any) -> Any:
            def call():
                # Hayhooks already parsed the body leniently; re-validate into the strict model
                # (the middleware checked the raw JSON strictly, so this only converts types).
                request = model.model_validate(fields, strict=False)
                return method(self, request, headers)

            return raise_api_errors(call)()

        parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        docs = []
        for name, field in model.model_fields.items():
            default = inspect.Parameter.empty if field.is_required() else field.get_default(call_default_factory=True)
            parameters.append(
                inspect.Parameter(
                    name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=_field_annotation(field)
                )
            )
            description = field.description or FIELD_DESCRIPTIONS.get(name)
            if description:
                docs.append(f":param {name}: {description}")
        parameters.append(
            inspect.Parameter("headers", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Headers | None)
        )
        run.__signature__ = inspect.Signature(parameters, return_annotation=returns)
        summary = inspect.getdoc(method) or ""
        run.__doc__ = "\n\n".join(part for part in (summary, "\n".join(docs)) if part)
        run.__annotations__ = {name: p.annotation for name, p in run.__signature__.parameters.items() if name != "self"}
        run.__annotations__["return"] = returns
        return run

    return decorate
