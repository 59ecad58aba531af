"""
``AnswerAssembler``: the last step of the query pipeline; collects the answer,
citations, confidence and routing into the ``RAGResponse`` contract (issue 4 §11)
and validates it with the pydantic model, so a pipeline can only ever return a
well-formed response.
"""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.core.models import RAGResponse


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

    def __init__(self, time_decimals: int = 3) -> None:
        """
        :param time_decimals: Decimals kept in ``generation_time_ms``.
        """
        if not isinstance(time_decimals, int) or time_decimals < 0:
            raise ValueError(f"time_decimals must be a non-negative integer, got {time_decimals!r}.")
        self.time_decimals = time_decimals

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(self, time_decimals=self.time_decimals)

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
    ) -> dict[str, Any]:
        """
        :param answer: The answer text.
        :param model_used: The backend's model name.
        :param generation_time_ms: Time the answer backend took.
        :param confidence: The hybrid confidence breakdown.
        :param citations: The valid citations.
        :param action: ``CITE`` or ``ROUTE``.
        :param grounded: Whether the answer is fully grounded.
        :param documents: The context chunks used.
        :param context_tokens_used: Tokens of the rendered context.
        :param route_to: The route target for ``ROUTE``.
        :returns: ``response``: the ``RAGResponse`` as a JSON-ready dict.
        """
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
        )
        return {"response": response.model_dump(mode="json")}
