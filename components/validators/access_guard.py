"""
``AccessGuard``: the post-retrieval check of every document against the access
rule (docs/contract.md, "Access rule"; defence in depth).

It takes the request's identity straight from the pipeline inputs, not from the
filter builder's output, so a bug in the filter, the store's filter translation
or a retriever's ``filter_policy`` cannot leak a chunk: any document that breaks
the rule is dropped and logged as an error.
"""

import logging
from typing import Any

from haystack import Document, component

from components.core.access_rule import RequestOptionDefaults
from components.core.span_tags import documents_in_out, tag_span

logger = logging.getLogger(__name__)


@component
class AccessGuard(RequestOptionDefaults):
    """
    Drops (and logs as errors) retrieved documents the requester may not see.
    Init parameters ``default_verified_only`` / ``default_exclude_tainted`` and (de)serialisation come from
    :class:`components.core.access_rule.RequestOptionDefaults`.

    Usage:
    ```python
    guard = AccessGuard()
    visible = guard.run(documents=docs, tenant_id="acme", user_tags=["hr"])["documents"]
    ```
    """

    # run() changes none of its inputs and keeps none of them: the planned pipeline passes them without a defensive
    # copy (docs/contract.md, "Pipeline runs").
    reads_inputs_only = True

    @component.output_types(documents=list[Document], violations=int)
    def run(
        self,
        documents: list[Document],
        tenant_id: str,
        user_tags: list[str],
        user_id: str | None = None,
        project_id: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """
        :param documents: Retrieved documents, in rank order.
        :param tenant_id: The requester's tenant.
        :param user_tags: The requester's tags.
        :param user_id: The requester's user id.
        :param project_id: The requester's project id.
        :param filters: The request's options (``verified_only``, ``exclude_tainted``).
        :returns: ``documents``: the visible ones, order kept; ``violations``: how many were dropped.
        """
        rule = self.request_rule(tenant_id, user_tags, user_id, project_id, filters)
        visible: list[Document] = []
        violations = 0
        for document in documents:
            reason = rule.violation(document)
            if reason is None:
                visible.append(document)
                continue
            violations += 1
            logger.error(
                "Access violation: retrieval returned document %s (tenant %r) to tenant %r: %s; dropped.",
                document.id,
                (document.meta or {}).get("tenant_id"),
                rule.tenant_id,
                reason,
            )
        tag_span(
            documents_in_out(documents, visible),
            {"sourcebound.tenant_id": rule.tenant_id, "sourcebound.access.violations": violations},
        )
        return {"documents": visible, "violations": violations}
