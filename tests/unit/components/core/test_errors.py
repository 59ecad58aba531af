"""The RAG service's exception hierarchy (docs/contract.md, "Errors")."""

import pytest

from components.core import errors


@pytest.mark.unit
class TestErrorHierarchy:
    @pytest.mark.parametrize(
        "name",
        [
            "LLMConnectionError",
            "LLMTimeoutError",
            "ModelNotAllowedError",
            "ModelUnavailableError",
            "ContextError",
            "TokenBudgetExceededError",
        ],
    )
    def test_every_error_is_a_rag_service_error(self, name):
        error_class = getattr(errors, name)
        assert issubclass(error_class, errors.RAGServiceError)
        assert issubclass(errors.RAGServiceError, Exception)
        with pytest.raises(errors.RAGServiceError, match="names the fix"):
            raise error_class("names the fix")

    def test_every_error_has_the_one_base(self):
        from components.core.document_identity import IndexingValidationError
        from components.document_stores.qdrant_edge.errors import QdrantEdgeStoreError
        from components.services.document_lifecycle import LifecycleError
        from components.services.pipeline_loader import PipelineConfigError
        from hayhooks_app.config import ConfigError

        for error_class in (
            errors.RAGServiceError,
            IndexingValidationError,
            LifecycleError,
            QdrantEdgeStoreError,
            PipelineConfigError,
            ConfigError,
        ):
            assert issubclass(error_class, errors.SourceboundError), error_class
        # Callers that catch the builtin class keep working.
        assert issubclass(IndexingValidationError, ValueError) and issubclass(LifecycleError, ValueError)

    def test_errors_are_distinct(self):
        classes = [
            getattr(errors, name) for name in errors.__all__ if name not in {"SourceboundError", "RAGServiceError"}
        ]
        for first in classes:
            for second in classes:
                if first is not second:
                    assert not issubclass(first, second)
