"""
``AccessFilterBuilder``: the server-side access filter of every retrieval (docs/contract.md, "Access rule").

It turns the request's identity (``tenant_id``, ``user_tags``, ``user_id``,
``project_id``) and its narrowing options (``verified_only``, ``exclude_tainted``
and the query ``scope``) into the one Haystack filter dict that retrievers receive.
The rule itself lives in :mod:`components.core.access_rule` (docs/contract.md "Access rule").

The request's own ``filters`` can never widen it: only the narrowing options
are read, and any other key is rejected. The filter is handed to retrievers whose
``filter_policy`` is ``replace``, and nothing is merged with Haystack's
``filter_policy`` machinery.
"""

import logging
from typing import Any

from haystack import component

from components.core.access_rule import RequestOptionDefaults
from components.core.span_tags import tag_span

logger = logging.getLogger(__name__)


@component
class AccessFilterBuilder(RequestOptionDefaults):
    """
    Builds the access filter ANDed into every retrieval.
    Init parameters ``default_verified_only`` / ``default_exclude_tainted`` and (de)serialisation come from
    :class:`components.core.access_rule.RequestOptionDefaults`.

    Usage:
    ```python
    builder = AccessFilterBuilder()
    filters = builder.run(tenant_id="acme", user_tags=["hr"], user_id="u1")["filters"]
    # {"operator": "OR", "conditions": [{AND: tenant_id == acme, tags in [hr], scope rule, tainted != True},
    #                                   {AND: scope == public, tainted != True}]}
    ```
    """

    @component.output_types(filters=dict[str, Any], access=dict[str, Any])
    def run(
        self,
        tenant_id: str,
        user_tags: list[str],
        user_id: str | None = None,
        project_id: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """
        :param tenant_id: The requester's tenant.
        :param user_tags: The requester's tags (at least one).
        :param user_id: The requester's user id (enables user-scoped chunks).
        :param project_id: The requester's project id (enables project-scoped chunks).
        :param filters: The request's options, ``{"verified_only": bool, "exclude_tainted": bool}`` only.
        :returns: ``filters``: the Haystack filter for the retriever; ``access``: the effective rule as a dict.
        :raises ValueError: On a missing tenant or tags, or an option other than the two booleans.
        """
        rule = self.request_rule(tenant_id, user_tags, user_id, project_id, filters)
        tag_span({"sourcebound.tenant_id": rule.tenant_id, "sourcebound.user_tags": len(user_tags)})
        return {"filters": rule.to_filters(), "access": rule.as_dict()}
