"""
``TagRouter``: decides CITE or ROUTE and, for ROUTE, whom to route to (docs/contract.md,
"Confidence and routing" and "Routed answers are declines").

Action:

* ``ROUTE`` when no context chunk survived retrieval ("no context");
* ``ROUTE`` when ``overall < confidence_threshold`` (``RAG_CONFIDENCE_THRESHOLD``, 60);
* ``ROUTE`` when the answer carries no valid citation at all: an uncited answer
  (including "I don't have enough information ...") is never presented as cited;
* ``CITE`` otherwise.

Route target: the primary tag is the most common tag of the context chunks among
the tags the requester holds (ties: alphabetical), looked up in the SQLite
:class:`components.stores.tag_directory.TagDirectory` under the requester's ``tenant_id``
(tags are per tenant: another tenant's owner of a same-named tag is never used). With an owner and their email it
routes there (``fallback: false``); otherwise (no context, no tag, no owner, owner
unknown, or the tag has no owner in the requester's tenant) to the configured admin email with
``fallback: true``. A fallback keeps
the primary tag when there is one and uses ``"system"`` when there is none.

``grounded`` is true only when the action is CITE and every answer sentence
carries at least one valid citation.

``primary_tag`` is that primary tag for every answer, cited or routed (``None`` without one): the tag a
question is filed under in the knowledge gaps, so a thumbs-down on a cited answer reaches the owner the
router would name (docs/contract.md, "Feedback and knowledge gaps"). The YAML leaves it unconnected; the
query service reads it.
"""

import asyncio
import logging
from collections import Counter
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.core.span_tags import tag_span
from components.stores.tag_directory import TagDirectory

logger = logging.getLogger(__name__)

NO_TAG = "system"


def primary_tag(documents: list[Document], user_tags: list[str]) -> str | None:
    """The most common context tag among ``user_tags``; ties broken alphabetically; ``None`` if none."""
    held = set(user_tags or [])
    counts: Counter[str] = Counter()
    for document in documents:
        tags = (document.meta or {}).get("tags") or []
        tags = [tags] if isinstance(tags, str) else tags
        counts.update(tag for tag in set(tags) if tag in held)
    if not counts:
        return None
    return min(counts, key=lambda tag: (-counts[tag], tag))


@component
class TagRouter:
    """
    Usage:
    ```python
    router = TagRouter(directory_path="data/tags.sqlite", admin_email="admin@acme.example")
    out = router.run(confidence={"overall": 45, ...}, documents=chunks, tenant_id="acme", user_tags=["hr"],
                     citations=citations, all_sentences_cited=True)
    out["action"], out["route_to"], out["grounded"]
    ```
    """

    # run() changes none of its inputs and keeps none of them: the planned pipeline passes them without a defensive
    # copy (docs/contract.md, "Pipeline runs").
    reads_inputs_only = True

    def __init__(
        self,
        directory_path: str,
        admin_email: str = "admin@company.com",
        confidence_threshold: int = 60,
    ) -> None:
        """
        :param directory_path: The SQLite tag directory (``$SOURCEBOUND_DATA_DIR/tags.sqlite`` in YAML).
        :param admin_email: Fallback route target.
        :param confidence_threshold: Minimum ``overall`` confidence for CITE (``RAG_CONFIDENCE_THRESHOLD``).
        """
        if not directory_path:
            raise ValueError("directory_path must name the SQLite tag directory.")
        if not isinstance(admin_email, str) or "@" not in admin_email:
            raise ValueError(f"admin_email must be an email address, got {admin_email!r}.")
        if not isinstance(confidence_threshold, (int, float)) or not 0 <= confidence_threshold <= 100:
            raise ValueError(f"confidence_threshold must be within 0-100, got {confidence_threshold!r}.")
        self.directory_path = str(directory_path)
        self.admin_email = admin_email
        self.confidence_threshold = confidence_threshold
        self._directory = TagDirectory(self.directory_path)

    @property
    def directory(self) -> TagDirectory:
        """The tag directory this router reads (the CLI and the API's bootstrap write to the same file)."""
        return self._directory

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(
            self,
            directory_path=self.directory_path,
            admin_email=self.admin_email,
            confidence_threshold=self.confidence_threshold,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TagRouter":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    def _fallback(self, tag: str | None, reason: str) -> dict[str, Any]:
        return {
            "tag": tag or NO_TAG,
            "owner_user_id": None,
            "owner_email": self.admin_email,
            "reason": f"{reason} - routing to admin",
            "fallback": True,
        }

    def _owner(self, tenant_id: str, tag: str) -> tuple[Any, str | None]:
        """The tag's owner in ``tenant_id`` (with an email), or ``None`` and why not."""
        if not tenant_id:
            return None, f"no tenant for tag '{tag}'"
        owner = self._directory.lookup(tenant_id, tag)
        if owner is None or owner.owner_user_id is None:
            return None, f"no owner for tag '{tag}'"
        if owner.owner_email is None:
            return None, f"owner user not found for tag '{tag}'"
        return owner, None

    def owner_of(self, tenant_id: str, tag: str | None) -> dict[str, Any]:
        """
        Whom a question filed under ``tag`` goes to, by the rule :meth:`route_target` applies (the knowledge gaps
        name the same owner as the router): ``{"tag", "owner_user_id", "owner_email", "fallback"}``.
        """
        owner = self._owner(tenant_id, tag)[0] if tag and tag != NO_TAG else None
        return {
            "tag": tag or NO_TAG,
            "owner_user_id": owner.owner_user_id if owner is not None else None,
            "owner_email": owner.owner_email if owner is not None else self.admin_email,
            "fallback": owner is None,
        }

    def route_target(
        self, documents: list[Document], tenant_id: str, user_tags: list[str], reason: str
    ) -> dict[str, Any]:
        """The RouteTarget dict for a routed answer; the owner is looked up in ``tenant_id`` only."""
        if not documents:
            return self._fallback(None, reason)
        tag = primary_tag(documents, user_tags)
        if tag is None:
            return self._fallback(None, f"{reason}; no tags in context")
        owner, problem = self._owner(tenant_id, tag)
        if problem is not None:
            return self._fallback(tag, f"{reason}; {problem}")
        return {
            "tag": tag,
            "owner_user_id": owner.owner_user_id,
            "owner_email": owner.owner_email,
            "reason": f"{reason}, routing to {tag} owner",
            "fallback": False,
        }

    def decide(
        self, confidence: dict[str, Any], documents: list[Document], citations: list[dict[str, Any]]
    ) -> str | None:
        """``None`` for CITE, else the reason to route."""
        overall = confidence.get("overall", 0)
        if not documents:
            return "No relevant context found"
        if overall < self.confidence_threshold:
            return f"Low confidence: {overall}%"
        if not citations:
            return f"Answer cites no context (confidence {overall}%)"
        return None

    @component.output_types(action=str, route_to=dict[str, Any] | None, grounded=bool, primary_tag=str | None)
    def run(
        self,
        confidence: dict[str, Any],
        documents: list[Document],
        tenant_id: str,
        user_tags: list[str],
        citations: list[dict[str, Any]],
        all_sentences_cited: bool,
    ) -> dict[str, Any]:
        """
        :param confidence: The hybrid confidence (``overall`` is used).
        :param documents: The context chunks used.
        :param tenant_id: The requester's tenant: the route target is that tenant's tag owner.
        :param user_tags: The requester's tags.
        :param citations: The valid citations of the answer.
        :param all_sentences_cited: Whether every answer sentence carries a valid citation.
        :returns: ``action`` (``CITE``/``ROUTE``), ``route_to`` (``None`` for CITE), ``grounded`` and
            ``primary_tag`` (the requester's most common context tag, ``None`` without one).
        """
        reason = self.decide(confidence, documents, citations)
        tag_span(
            {
                "sourcebound.action": "CITE" if reason is None else "ROUTE",
                "sourcebound.confidence": confidence.get("overall"),
                "sourcebound.citations": len(citations),
                "sourcebound.route_reason": reason,
            }
        )
        tag = primary_tag(documents, user_tags)
        if reason is None:
            return {"action": "CITE", "route_to": None, "grounded": bool(all_sentences_cited), "primary_tag": tag}
        return {
            "action": "ROUTE",
            "route_to": self.route_target(documents, tenant_id, user_tags, reason),
            "grounded": False,
            "primary_tag": tag,
        }

    @component.output_types(action=str, route_to=dict[str, Any] | None, grounded=bool, primary_tag=str | None)
    async def run_async(
        self,
        confidence: dict[str, Any],
        documents: list[Document],
        tenant_id: str,
        user_tags: list[str],
        citations: list[dict[str, Any]],
        all_sentences_cited: bool,
    ) -> dict[str, Any]:
        """Like :meth:`run`; the SQLite lookup runs in a worker thread."""
        return await asyncio.to_thread(
            self.run, confidence, documents, tenant_id, user_tags, citations, all_sentences_cited
        )
