"""
``SourceIdPromptBuilder``: builds the chat messages for the answer backend with
every context chunk labelled by its deterministic SourceId (docs/contract.md, "Prompts").

Each chunk is rendered with ``chunk_template``, by default the contract's::

    [SourceId: {document_id}:{chunk_index}]
    [Document: {document_name}]
    [Page: {page_number or 'N/A'}] [Section: {section or 'N/A'}]
    ---
    {chunk_text}
    ---

The chunks fill ``{context}`` of the system prompt (the contract's
``RAG_SYSTEM_PROMPT``: answer only from the context, cite the exact SourceId, or
say "I don't have enough information ..."), the kept history fills
``{chat_history}``, and the query is the user message. All three templates are
init parameters, set in the pipeline YAML.
"""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage

from components.core.prompts import (
    CONTEXT_CHUNK_TEMPLATE,
    RAG_SYSTEM_PROMPT,
    USER_PROMPT_TEMPLATE,
    rag_template_parameters,
    render_context,
    render_history,
    validate_rag_templates,
)


@component
class SourceIdPromptBuilder:
    """
    Usage:
    ```python
    builder = SourceIdPromptBuilder()
    out = builder.run(query="How many vacation days?", documents=chunks)
    out["messages"]  # [system (rules + context with SourceIds + history), user (query)]
    out["context"]   # the rendered context alone
    ```
    """

    # run() changes none of its inputs and keeps none of them: the planned pipeline passes them without a defensive
    # copy (docs/contract.md, "Pipeline runs").
    reads_inputs_only = True

    def __init__(
        self,
        system_prompt: str = RAG_SYSTEM_PROMPT,
        user_prompt: str = USER_PROMPT_TEMPLATE,
        chunk_template: str = CONTEXT_CHUNK_TEMPLATE,
        chunk_separator: str = "\n\n",
        none_value: str = "N/A",
        empty_context: str = "(no context was retrieved)",
        empty_history: str = "(none)",
    ) -> None:
        """
        :param system_prompt: System prompt template with ``{context}`` and optionally ``{chat_history}``.
        :param user_prompt: User message template with ``{query}``.
        :param chunk_template: Template of one context chunk (``{source_id}``, ``{document_name}``, ``{page_number}``,
            ``{section}``, ``{content}``).
        :param chunk_separator: Text between chunks.
        :param none_value: Shown for a missing page or section.
        :param empty_context: Fills ``{context}`` when no chunk survived retrieval.
        :param empty_history: Fills ``{chat_history}`` when there is no history.
        """
        validate_rag_templates(system_prompt, user_prompt, chunk_template)
        self.system_prompt = system_prompt
        self.user_prompt = user_prompt
        self.chunk_template = chunk_template
        self.chunk_separator = chunk_separator
        self.none_value = none_value
        self.empty_context = empty_context
        self.empty_history = empty_history

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component."""
        return default_to_dict(
            self,
            **rag_template_parameters(self),
            none_value=self.none_value,
            empty_context=self.empty_context,
            empty_history=self.empty_history,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SourceIdPromptBuilder":
        """Deserialize the component."""
        return default_from_dict(cls, data)

    def build_context(self, documents: list[Document]) -> str:
        """The context block: every chunk in the SourceId format, in order."""
        return render_context(documents, self.chunk_template, self.chunk_separator, self.none_value)

    @component.output_types(messages=list[ChatMessage], prompt=str, context=str)
    def run(
        self, query: str, documents: list[Document], chat_history: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """
        :param query: The user's question.
        :param documents: The budgeted context chunks, in rank order.
        :param chat_history: The budgeted history ``{"role", "content"}``, oldest first.
        :returns: ``messages`` (system + user), ``prompt`` (the system message text), ``context`` (chunks only).
        """
        context = self.build_context(documents)
        history = render_history(chat_history or [])
        system = self.system_prompt.format(
            context=context or self.empty_context, chat_history=history or self.empty_history
        )
        messages = [ChatMessage.from_system(system), ChatMessage.from_user(self.user_prompt.format(query=query))]
        return {"messages": messages, "prompt": system, "context": context}
