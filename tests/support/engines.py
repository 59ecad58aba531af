"""
The two store engines a test server can run on, for suites parameterised over both.

* ``edge``: the default pipelines (``pipelines/*.yml``) on the embedded Qdrant Edge store
  (``<data_dir>/qdrant``).
* ``server-profile``: the generated Qdrant-server profile (``pipelines/profiles/server``) with
  ``SOURCEBOUND_QDRANT_LOCATION`` pointing at ``<data_dir>/qdrant-local``: qdrant-haystack's store on
  qdrant-client's local mode, the test engine of that profile (docs/configuration.md). It is a
  brute-force engine: keep corpora small.

Usage:

```python
@pytest.fixture(scope="module", params=ENGINES)
def server(request, tmp_path_factory):
    data_dir = tmp_path_factory.mktemp(request.param) / "data"
    with ApiServer(data_dir, env=engine_env(request.param, data_dir)) as running:
        yield running
```
"""

from pathlib import Path

from support.api_server import REPO

ENGINES = ("edge", "server-profile")
SERVER_PROFILE_DIR = REPO / "pipelines" / "profiles" / "server"
LOCAL_FOLDER = "qdrant-local"
COLLECTION = "sourcebound"  # the profile's QDRANT_COLLECTION default


def engine_env(engine: str, data_dir: Path) -> dict[str, str]:
    """The server environment that selects ``engine`` for a server whose data dir is ``data_dir``."""
    if engine == "edge":
        return {}
    if engine == "server-profile":
        return {
            "SOURCEBOUND_PIPELINES_DIR": str(SERVER_PROFILE_DIR),
            "SOURCEBOUND_QDRANT_LOCATION": str(Path(data_dir) / LOCAL_FOLDER),
        }
    raise ValueError(f"unknown engine {engine!r}; use one of {ENGINES}")


def engine_of(data_dir: Path) -> str:
    """Which engine a server's data dir holds."""
    return "server-profile" if (Path(data_dir) / LOCAL_FOLDER).is_dir() else "edge"


def open_local_copy(folder: Path):
    """A server-profile store on a copied local-mode folder (the server holding the original may still run)."""
    from components.document_stores.qdrant_server import TenantQdrantDocumentStore

    return TenantQdrantDocumentStore(
        local_location=str(folder),
        index=COLLECTION,
        embedding_dim=384,
        use_sparse_embeddings=True,
        sparse_idf=True,
        progress_bar=False,
    )


def access_violations(log_path: Path) -> list[str]:
    """The access guard's violation lines in a server log: what the store returned that the rule forbids."""
    text = Path(log_path).read_text(encoding="utf-8", errors="replace") if Path(log_path).is_file() else ""
    return [line for line in text.splitlines() if "Access violation" in line]
