"""
``AnswerAssembler``: the last step of the query pipeline; collects the answer,
citations, confidence and routing into the ``RAGResponse`` contract and validates it
with the pydantic model, so a pipeline can only ever return a well-formed response.

A routed answer is a decline (docs/contract.md "Routed answers"): on ``ROUTE`` the
``answer`` says the documents do not support a grounded answer, names whom to ask
(the route target's contact) and which documents were found. The answerer's draft is
ungrounded by definition (that is why it was routed) and never becomes the ``answer``;
with ``include_ungrounded_draft`` (``SOURCEBOUND_DEBUG_UNGROUNDED_DRAFT``, default off)
it is returned in the separate ``ungrounded_draft`` field for debugging.
"""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.core.models import INSUFFICIENT_INFORMATION_ANSWER, RAGResponse

# A decline names at most this many found documents: enough to say what exists, short enough to read.
MAX_FOUND_DOCUMENTS = 5


def found_documents(documents: list[Document], limit: int = MAX_FOUND_DOCUMENTS) -> list[str]:
    """Names of the distinct context documents, in context order (``document_name``, else ``document_id``)."""
    names: list[str] = []
    for document in documents:
        meta = document.meta or {}
        name = str(meta.get("document_name") or meta.get("document_id") or "").strip()
        if name and name not in names:
            names.append(name)
        if len(names) == limit:
            break
    return names


def decline_text(route_to: dict[str, Any] | None, documents: list[Document]) -> str:
    """
    The answer of a routed response: no grounded answer, whom to ask, what was found.

    :param route_to: The ``RouteTarget`` dict (``owner_email``, ``tag``, ``fallback``).
    :param documents: The context chunks the requester was allowed to see.
    :returns: The decline text; it never contains answer claims.
    """
    parts = [INSUFFICIENT_INFORMATION_ANSWER]
    route_to = route_to or {}
    contact = route_to.get("owner_email")
    tag = route_to.get("tag")
    if contact and tag and not route_to.get("fallback"):
        parts.append(f"Please ask {contact}, the owner of '{tag}'.")
    elif contact:
        parts.append(f"Please ask {contact}.")
    names = found_documents(documents)
    if names:
        parts.append("Documents found that may be related: " + "; ".join(names) + ".")
    else:
        parts.append("No documents you can access matched the question.")
    return " ".join(parts)


@component
class AnswerAssembler:
    """
    Usage:
    ```python
    response = AnswerAssembler().run(answer=..., model_used="llama3.2", generation_time_ms=812.0,
                                     confidence=..., citations=[...], action="CITE", route_to=None,
                                     grounded=True, documents=context, context_tokens_used=900)["response"]
    ```
    """

    # run() changes none of its inputs and keeps none of them: the planned pipeline passes them without a defensive
    # copy (docs/contract.md, "Pipeline runs").
    reads_inputs_only = True

    def __init__(
        self, time_decimals: int = 3, include_ungrounded_draft: bool = False, include_removed_sentences: bool = False
    ) -> None:
        """
        :param time_decimals: Decimals kept in ``generation_time_ms``.
        :param include_ungrounded_draft: Debug only: on ROUTE, return the answerer's draft in
            ``ungrounded_draft`` (never in ``answer``). Off by default.
        :param include_removed_sentences: Debug only: return the sentences the answer verifier removed in
            ``removed_sentences`` (``SOURCEBOUND_DEBUG_REMOVED_SENTENCES``). Off by default.
        """
        if not isinstance(time_decimals, int) or time_decimals < 0:
            raise ValueError(f"time_decimals must be a non-negative integer, got {time_decimals!r}.")
        if not isinstance(include_ungrounded_draft, bool):
            raise ValueError(
                "include_ungrounded_draft must be true or false (SOURCEBOUND_DEBUG_UNGROUNDED_DRAFT), "
                f"got {include_ungrounded_draft!r}."
            )
        self.time_decimals = time_decimals
        if not isinstance(include_removed_sentences, bool):
            raise ValueError(
                "include_removed_sentences must be true or false (SOURCEBOUND_DEBUG_REMOVED_SENTENCES), "
                f"got {include_removed_sentences!r}."
            )
        self.include_ungrounded_draft = include_ungrounded_draft
        self.include_removed_sentences = include_removed_sentences

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(
            self,
            time_decimals=self.time_decimals,
            include_ungrounded_draft=self.include_ungrounded_draft,
            include_removed_sentences=self.include_removed_sentences,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "AnswerAssembler":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    @component.output_types(response=dict[str, Any])
    def run(
        self,
        answer: str,
        model_used: str,
        generation_time_ms: float,
        confidence: dict[str, Any],
        citations: list[dict[str, Any]],
        action: str,
        grounded: bool,
        documents: list[Document],
        context_tokens_used: int,
        route_to: dict[str, Any] | None = None,
        glossary_terms: list[str] | None = None,
        removed_sentences: list[dict[str, Any]] | None = None,
        draft: str | None = None,
    ) -> dict[str, Any]:
        """
        :param answer: The answerer's text (the draft; replaced by a decline on ROUTE).
        :param model_used: The backend's model name.
        :param generation_time_ms: Time the answer backend took.
        :param confidence: The hybrid confidence breakdown.
        :param citations: The valid citations.
        :param action: ``CITE`` or ``ROUTE``.
        :param grounded: Whether the answer is fully grounded.
        :param documents: The context chunks used.
        :param context_tokens_used: Tokens of the rendered context.
        :param route_to: The route target for ``ROUTE``.
        :param glossary_terms: Glossary terms the query expander matched (reported in the response).
        :param removed_sentences: The answer verifier's removed sentences (shown only with
            ``include_removed_sentences``).
        :param draft: The model's text before a verifier removed sentences (the ``ungrounded_draft`` shown on
            ROUTE); ``None``: ``answer`` is the draft.
        :returns: ``response``: the ``RAGResponse`` as a JSON-ready dict.
        """
        shown_draft = None
        if action == "ROUTE":
            shown_draft = (answer if draft is None else draft) if self.include_ungrounded_draft else None
            answer = decline_text(route_to, documents)
        response = RAGResponse(
            answer=answer,
            confidence=confidence,
            citations=citations,
            action=action,
            route_to=route_to,
            model_used=model_used,
            context_chunks_used=len(documents),
            context_tokens_used=context_tokens_used,
            generation_time_ms=round(float(generation_time_ms), self.time_decimals),
            grounded=grounded,
            ungrounded_draft=shown_draft,
            glossary_terms=list(glossary_terms or []),
            removed_sentences=list(removed_sentences or []) if self.include_removed_sentences else None,
        )
        return {"response": response.to_json()}
