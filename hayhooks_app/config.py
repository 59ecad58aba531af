"""
The application's settings, read once from the environment.

Everything the HTTP layer needs is here; what the pipelines need (``RAG_*``,
``OLLAMA_BASE_URL``, ``CHAT_MODEL``, ``SOURCEBOUND_DATA_DIR``) is read by the
YAML files through ``${NAME:-default}`` references (see
``components.services.pipeline_loader``), so the YAML stays the single source of truth
for pipeline behaviour.

Usage:

```python
from hayhooks_app.config import Settings

settings = Settings.from_env()
print(settings.data_dir, settings.auth_mode)
```
"""

import os
from dataclasses import dataclass, field
from pathlib import Path

# ConfigError is the settings' error wherever they are read (components.runtime.environment parses them).
from components.runtime.environment import ConfigError as ConfigError
from components.runtime.environment import env_bool, env_choice, env_int
from components.services.corpus_manifest import SAMPLE_CORPUS_DIR
from hayhooks_app.browser_guard import ALLOWED_HOSTS_ENV, AllowedHosts
from hayhooks_app.oidc.settings import OidcSettings

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SAMPLE_CORPUS = SAMPLE_CORPUS_DIR

AUTH_MODES = ("trusted", "api_key", "oidc", "oidc,api_key")
AUTH_METHODS = ("oidc", "api_key")  # the bearer credentials; "trusted" takes the identity from the body
QUERY_LOG_TEXT_MODES = ("full", "hash")

# The Hayhooks wrappers this application deploys: name -> what it serves.
EXPECTED_PIPELINES = ("delete_tenant", "enrich", "flags", "index", "invalidate", "rag", "search")


def parse_auth_mode(value: str | None) -> str:
    """
    The normalised ``SOURCEBOUND_AUTH_MODE``: ``trusted``, ``api_key``, ``oidc`` or ``oidc,api_key``.

    :raises ConfigError: Naming the variable and the choices.
    """
    parts = [part.strip() for part in (value or "").split(",") if part.strip()] or ["trusted"]
    if parts == ["trusted"]:
        return "trusted"
    if not set(parts) <= set(AUTH_METHODS):
        raise ConfigError(
            f"SOURCEBOUND_AUTH_MODE must be one of {', '.join(AUTH_MODES)}; got {value!r} (trusted does not "
            "combine: it takes the identity from the body)."
        )
    return ",".join(method for method in AUTH_METHODS if method in parts)


def auth_methods(mode: str) -> frozenset[str]:
    """The bearer credentials a mode accepts (none for ``trusted``)."""
    return frozenset() if mode == "trusted" else frozenset(mode.split(","))


@dataclass(frozen=True)
class Limits:
    """
    Request size limits of the HTTP layer; each one turns into a 4xx whose message names the limit.

    Query length, ``k``, history and tag-count bounds are the query side's (``components.core.models``).
    """

    max_documents_per_request: int = 100
    max_document_chars: int = 2_000_000
    max_document_ids: int = 1000
    max_request_bytes: int = 16 * 1024 * 1024
    max_upload_bytes: int = 20 * 1024 * 1024
    max_upload_files: int = 50

    @classmethod
    def from_env(cls) -> "Limits":
        return cls(
            max_documents_per_request=env_int(
                "SOURCEBOUND_MAX_DOCUMENTS_PER_REQUEST", cls.max_documents_per_request, 1
            ),
            max_document_chars=env_int("SOURCEBOUND_MAX_DOCUMENT_CHARS", cls.max_document_chars, 1),
            max_document_ids=env_int("SOURCEBOUND_MAX_DOCUMENT_IDS", cls.max_document_ids, 1),
            max_request_bytes=env_int("SOURCEBOUND_MAX_REQUEST_BYTES", cls.max_request_bytes, 1024),
            max_upload_bytes=env_int("SOURCEBOUND_MAX_UPLOAD_BYTES", cls.max_upload_bytes, 1024),
            max_upload_files=env_int("SOURCEBOUND_MAX_UPLOAD_FILES", cls.max_upload_files, 1),
        )


@dataclass(frozen=True)
class Settings:
    """
    Application settings.

    :param data_dir: Holds the store (``qdrant/``), the tag directory, ``records.sqlite`` and the keys file.
    :param host: Bind address (``HAYHOOKS_HOST``).
    :param port: Bind port (``HAYHOOKS_PORT``).
    :param auth_mode: ``trusted`` (identity from the body), ``api_key`` (from a Bearer key), ``oidc`` (from a
        Bearer JWT of the configured provider) or ``oidc,api_key`` (either).
    :param api_keys_file: JSON file of hashed API keys (``SOURCEBOUND_API_KEYS_FILE``).
    :param oidc: The ``SOURCEBOUND_OIDC_*`` settings (only in a mode with ``oidc``).
    :param indexing_pipeline: Pipeline name or YAML path for indexing.
    :param search_pipeline: Pipeline name or YAML path for retrieval only.
    :param rag_pipeline: Pipeline name or YAML path for answers (``query`` or ``query_ollama``).
    :param enrich_pipeline: Pipeline name or YAML path for enrichment (context without an answer).
    :param query_log_text: ``full`` stores query text in the query log, ``hash`` stores only a keyed hash.
    :param records_retention_days: Records older than this are pruned (0 keeps them forever).
    :param records_prune_interval_s: How often pruning runs while serving.
    :param bootstrap_corpus: Index the sample corpus when the store is empty at start-up.
    :param sample_corpus_dir: Where the bundled corpus (``manifest.yml``, ``directory.yml``) lives.
    :param limits: Request size limits.
    :param allowed_hosts: The host names served besides loopback and the bind address
        (``SOURCEBOUND_ALLOWED_HOSTS``; docs/operations.md, "Hosts and browsers").
    """

    data_dir: Path
    host: str = "127.0.0.1"
    port: int = 1416
    auth_mode: str = "trusted"
    api_keys_file: Path | None = None
    indexing_pipeline: str = "indexing"
    search_pipeline: str = "search"
    rag_pipeline: str = "query"
    enrich_pipeline: str = "enrich"
    query_log_text: str = "full"
    records_retention_days: int = 30
    records_prune_interval_s: int = 3600
    bootstrap_corpus: bool = True
    sample_corpus_dir: Path = DEFAULT_SAMPLE_CORPUS
    limits: Limits = field(default_factory=Limits)
    oidc: OidcSettings | None = None
    allowed_hosts: AllowedHosts | None = None

    def __post_init__(self) -> None:
        if ("oidc" in auth_methods(self.auth_mode)) != (self.oidc is not None):
            raise ConfigError(f"auth mode {self.auth_mode!r} and the OIDC settings disagree: oidc modes need them.")
        if self.allowed_hosts is None:  # loopback names and the bind address
            object.__setattr__(self, "allowed_hosts", AllowedHosts.from_setting(None, self.host))

    @classmethod
    def from_env(cls) -> "Settings":
        """Read every setting from the environment; raise ``ConfigError`` naming a bad variable."""
        data_dir = Path(os.environ.get("SOURCEBOUND_DATA_DIR", "").strip() or "./data").resolve()
        keys_file = os.environ.get("SOURCEBOUND_API_KEYS_FILE", "").strip()
        host = os.environ.get("HAYHOOKS_HOST", "").strip() or "127.0.0.1"
        try:
            allowed_hosts = AllowedHosts.from_setting(os.environ.get(ALLOWED_HOSTS_ENV), host)
        except ValueError as error:
            raise ConfigError(str(error)) from error
        auth_mode = parse_auth_mode(os.environ.get("SOURCEBOUND_AUTH_MODE"))
        return cls(
            data_dir=data_dir,
            host=host,
            port=env_int("HAYHOOKS_PORT", 1416, 1),
            auth_mode=auth_mode,
            api_keys_file=Path(keys_file).resolve() if keys_file else data_dir / "api_keys.json",
            indexing_pipeline=os.environ.get("SOURCEBOUND_INDEXING_PIPELINE", "").strip() or "indexing",
            search_pipeline=os.environ.get("SOURCEBOUND_SEARCH_PIPELINE", "").strip() or "search",
            rag_pipeline=os.environ.get("SOURCEBOUND_RAG_PIPELINE", "").strip() or "query",
            enrich_pipeline=os.environ.get("SOURCEBOUND_ENRICH_PIPELINE", "").strip() or "enrich",
            query_log_text=env_choice("SOURCEBOUND_QUERY_LOG_TEXT", "full", QUERY_LOG_TEXT_MODES),
            records_retention_days=env_int("SOURCEBOUND_RECORDS_RETENTION_DAYS", 30, 0),
            records_prune_interval_s=env_int("SOURCEBOUND_RECORDS_PRUNE_INTERVAL_SECONDS", 3600, 1),
            bootstrap_corpus=env_bool("SOURCEBOUND_BOOTSTRAP_CORPUS", True),
            sample_corpus_dir=Path(
                os.environ.get("SOURCEBOUND_SAMPLE_CORPUS_DIR", "").strip() or DEFAULT_SAMPLE_CORPUS
            ),
            limits=Limits.from_env(),
            oidc=OidcSettings.from_env() if "oidc" in auth_methods(auth_mode) else None,
            allowed_hosts=allowed_hosts,
        )

    @property
    def records_path(self) -> Path:
        """The SQLite file holding the query log and the index event log."""
        return self.data_dir / "records.sqlite"


def service_version() -> str:
    """The installed ``sourcebound`` version (``0.0.0`` when run from an uninstalled tree)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sourcebound")
    except PackageNotFoundError:
        return "0.0.0"
