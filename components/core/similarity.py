"""Vector similarity shared by the components that score documents or sentences against a query."""

import numpy as np


def cosine_similarity(query: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """Cosine similarity of one query vector to each row of ``vectors`` (0 for zero vectors)."""
    query_norm = np.linalg.norm(query)
    norms = np.linalg.norm(vectors, axis=1) * query_norm
    dots = vectors @ query
    with np.errstate(divide="ignore", invalid="ignore"):
        similarities = np.where(norms > 0, dots / np.where(norms > 0, norms, 1.0), 0.0)
    return similarities
