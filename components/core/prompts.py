"""
The contract's prompt templates (docs/contract.md, "Prompts"), as the defaults of the
components that use them.

The pipelines set them again in YAML (``pipelines/query*.yml``) so they can be edited
without code. Templates use Python ``str.format`` fields:
``{context}``, ``{chat_history}``, ``{query}``, ``{answer}``,
``{context_summary}`` and, for a context chunk, ``{source_id}``, ``{document_name}``,
``{page_number}``, ``{section}``, ``{content}``.
"""

from string import Formatter
from typing import Any

from components.core.text_analysis import chunk_fields

RAG_SYSTEM_PROMPT = """You are a helpful assistant that answers questions based ONLY on the provided context.

STRICT RULES:
1. ONLY use information from the provided CONTEXT sections below
2. If the context doesn't contain enough information, respond with: "I don't have enough information in the available documents to answer this question."
3. NEVER use external knowledge or make assumptions beyond the context
4. Cite sources using the exact SourceId provided (e.g., [SourceId: abc123:0])
5. Be concise but thorough
6. If partially answerable, answer what you can and note what's missing

CONTEXT (each section has a SourceId for citation):
{context}

PREVIOUS CONVERSATION:
{chat_history}
"""

# Each context chunk, with a deterministic SourceId ({document_id}:{chunk_index}).
CONTEXT_CHUNK_TEMPLATE = """[SourceId: {source_id}]
[Document: {document_name}]
[Page: {page_number}] [Section: {section}]
---
{content}
---"""

USER_PROMPT_TEMPLATE = "{query}"

CONFIDENCE_PROMPT = """Evaluate how well this answer is supported by the provided context.

CONTEXT SUMMARY:
{context_summary}

QUESTION: {query}

ANSWER: {answer}

Rate the support level from 0-100:
- 90-100: Answer is fully and directly supported by context
- 70-89: Answer is mostly supported, minor inferences made
- 50-69: Answer is partially supported, some gaps filled
- 30-49: Answer has weak support, significant assumptions
- 0-29: Answer is not supported by context

Respond with ONLY a number between 0 and 100."""

QUERY_CLASSIFIER_PROMPT = """Classify this query for retrieval optimization.

QUERY: {query}

Categories:
- FACTUAL: Seeking specific facts from documents
- PROCEDURAL: Asking how to do something
- CLARIFICATION: Follow-up on previous answer (use chat history)
- GREETING: Social interaction (still attempt retrieval, expect low relevance)

Respond with exactly one category."""


def template_fields(template: str) -> set[str]:
    """The ``{field}`` names a ``str.format`` template uses."""
    return {name for _, name, _, _ in Formatter().parse(template) if name}


def validate_template(template: str, allowed: set[str], required: set[str], parameter: str) -> None:
    """
    Check a prompt template early, at init, so a YAML typo fails at load time.

    :raises ValueError: If the template does not parse, uses an unknown field, or misses a required one.
    """
    if not isinstance(template, str) or not template:
        raise ValueError(f"{parameter} must be a non-empty string template.")
    try:
        fields = template_fields(template)
    except ValueError as error:
        raise ValueError(
            f"{parameter} is not a valid str.format template ({error}); write literal braces as {{{{ }}}}."
        ) from error
    unknown = fields - allowed
    if unknown:
        raise ValueError(f"{parameter} uses unknown fields {sorted(unknown)}; allowed: {sorted(allowed)}.")
    missing = required - fields
    if missing:
        raise ValueError(f"{parameter} must contain the fields {sorted(missing)}.")


# The fields a context-chunk template may use (``source_id`` and ``content`` are required).
CHUNK_FIELDS = {"source_id", "document_name", "page_number", "section", "content"}


def validate_chunk_template(chunk_template: str) -> None:
    """Check a context-chunk template (see :func:`validate_template`)."""
    validate_template(chunk_template, CHUNK_FIELDS, {"source_id", "content"}, "chunk_template")


def validate_rag_templates(system_prompt: str, user_prompt: str, chunk_template: str) -> None:
    """
    Check the three templates of the answer prompt, which the prompt builder renders and the token budgeter counts.

    :raises ValueError: As :func:`validate_template`, naming the parameter.
    """
    validate_template(system_prompt, {"context", "chat_history"}, {"context"}, "system_prompt")
    validate_template(user_prompt, {"query"}, {"query"}, "user_prompt")
    validate_chunk_template(chunk_template)


def rag_template_parameters(owner: Any) -> dict[str, str]:
    """The prompt-template init parameters of ``owner`` (prompt builder or token budgeter), for ``to_dict``."""
    return {
        "system_prompt": owner.system_prompt,
        "user_prompt": owner.user_prompt,
        "chunk_template": owner.chunk_template,
        "chunk_separator": owner.chunk_separator,
    }


def format_chunk(document, chunk_template: str = CONTEXT_CHUNK_TEMPLATE, none_value: str = "N/A") -> str:
    """One context chunk in the contract's SourceId format (docs/contract.md, "Prompts")."""
    return chunk_template.format(**chunk_fields(document, none_value))


def render_context(
    documents, chunk_template: str = CONTEXT_CHUNK_TEMPLATE, separator: str = "\n\n", none_value: str = "N/A"
) -> str:
    """All context chunks, in order, joined by ``separator``."""
    return separator.join(format_chunk(document, chunk_template, none_value) for document in documents)


def render_history(messages) -> str:
    """Chat history as the prompts take it (docs/contract.md, "Prompts"): one ``role: content`` line per message."""
    return "\n".join(f"{message['role']}: {message['content']}" for message in messages)
