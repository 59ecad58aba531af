"""bench.corpus: the benchmark corpus cache is keyed by what the generator produces, not by when it ran."""

import pytest

from bench import corpus


@pytest.mark.unit
class TestCacheKey:
    def test_same_output_same_key(self):
        # The enricher stamps every chunk with the wall clock; a later run must still find the cached corpus.
        assert corpus.cache_key(1000) == corpus.cache_key(1000)

    def test_size_changes_the_key(self):
        assert corpus.cache_key(1000) != corpus.cache_key(2000)
