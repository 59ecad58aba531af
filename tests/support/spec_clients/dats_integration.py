"""
The integration test of the DATS RAG service specification (``shared/spec/003_...``, "Integration Tests",
``tests/test_integration.py``), copied for the contract tests only; the test body below is the specification's,
unchanged. ``client`` is set by the caller to an ``httpx.AsyncClient`` on our server (its base URL, and in
``api_key`` mode a bearer key); the specification's ``@pytest.mark.asyncio`` is left out (no asyncio plugin here:
the caller runs the coroutine).
"""

client = None  # set by the caller: httpx.AsyncClient(base_url=..., headers=...)


# tests/test_integration.py
async def test_embed_then_query():
    # Embed content
    embed_response = await client.post(
        "/api/v1/embed",
        json={
            "content": "def hello(): return 'world'",
            "metadata": {"artifact_id": "test-123", "project_id": "proj-1"},
        },
    )
    assert embed_response.status_code == 200

    # Query for it
    query_response = await client.post(
        "/api/v1/query",
        json={"query": "hello function"},
    )
    assert query_response.status_code == 200
    assert "hello" in query_response.json()["context"]
