"""The RAG service's exception hierarchy (specification v2 "Error Handling")."""

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

    def test_errors_are_distinct(self):
        classes = [getattr(errors, name) for name in errors.__all__ if name != "RAGServiceError"]
        for first in classes:
            for second in classes:
                if first is not second:
                    assert not issubclass(first, second)
