"""
``RAGClient``, copied from the DATS RAG service specification (``shared/spec/003_...``, "Phase 2: Add HTTP
Client", ``dats_common/clients/rag.py``), for the contract tests only; the code below is the specification's,
unchanged. Tests give it our server's base URL and, in ``api_key`` mode, set the bearer key on ``client.headers``.
"""

# ruff: noqa: UP006, UP035, UP045, I001, F401 - the specification's own imports and typing, kept verbatim
# dats_common/clients/rag.py
import httpx
from typing import Optional, Dict, Any, List


class RAGClient:
    """Client for RAG Service."""

    def __init__(
        self,
        base_url: str = "http://rag-service:8000/api/v1",
        timeout: float = 30.0,
    ):
        self.base_url = base_url
        self.client = httpx.AsyncClient(timeout=timeout)

    async def query(
        self,
        query: str,
        project_id: Optional[str] = None,
        domain: Optional[str] = None,
        max_tokens: int = 2000,
        search_mode: str = "hybrid",
    ) -> Dict[str, Any]:
        """Query for relevant context."""
        response = await self.client.post(
            f"{self.base_url}/query",
            json={
                "query": query,
                "project_id": project_id,
                "domain": domain,
                "max_tokens": max_tokens,
                "search_mode": search_mode,
            },
        )
        response.raise_for_status()
        return response.json()

    async def embed(
        self,
        content: str,
        metadata: Dict[str, Any],
    ) -> Dict[str, Any]:
        """Index content for retrieval."""
        response = await self.client.post(
            f"{self.base_url}/embed",
            json={
                "content": content,
                "metadata": metadata,
            },
        )
        response.raise_for_status()
        return response.json()

    async def invalidate(
        self,
        artifact_id: str,
    ) -> Dict[str, Any]:
        """Invalidate embeddings for an artifact."""
        response = await self.client.delete(
            f"{self.base_url}/embeddings/{artifact_id}",
        )
        response.raise_for_status()
        return response.json()

    async def close(self):
        await self.client.aclose()
