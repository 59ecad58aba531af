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
from components.runtime.rag_settings import check_rag_settings, p95_search_budget_ms
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
    :param purge_after_s: The longest an invalidated or replaced chunk's text stays in the store's files; the
        pruning task compacts the store once its oldest deletion is this old (docs/contract.md, "Deletion").
    :param bootstrap_corpus: Index the sample corpus when the store is empty at start-up.
    :param sample_corpus_dir: Where the bundled corpus (``manifest.yml``, ``directory.yml``) lives.
    :param limits: Request size limits.
    :param keep_unanswered_questions: Keep the text of declined, routed and thumbs-down questions for the
        knowledge gaps (off by default; docs/contract.md, "Feedback and knowledge gaps").
    :param unanswered_questions_retention_days: How long kept questions stay (0: until erased).
    :param stale_after_days: A document not re-indexed for this many days is stale (0: never by age).
    :param stale_source_dirs: Folders whose ``file://`` sources are re-hashed to find changed sources.
    :param metrics_max_tenants: Distinct ``tenant`` label values of the quality metrics; later tenants count as
        ``other`` (bounded cardinality).
    :param metrics_max_tags: Distinct ``tag`` label values of the quality metrics; later tags count as ``other``.
    :param default_tenant: Trusted mode: the tenant of a specification route's request that names none
        (``SOURCEBOUND_DEFAULT_TENANT``; docs/api.md, "Specification routes").
    :param default_tags: Trusted mode: the tags of such a request, and of the documents it writes
        (``SOURCEBOUND_DEFAULT_TAGS``).
    :param publish_events: Publish ``embedding.completed`` / ``embedding.invalidated`` to the events exchange
        through the outbox in the data dir (``SOURCEBOUND_EVENTS_PUBLISH``; docs/events.md, "Published events").
    :param search_budget_ms: The search latency budget (``RAG_P95_SEARCH_MS``): slower searches are counted
        (``rag_search_over_budget_total``) and logged; ``None``: no budget.
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
    purge_after_s: int = 86400
    bootstrap_corpus: bool = True
    sample_corpus_dir: Path = DEFAULT_SAMPLE_CORPUS
    limits: Limits = field(default_factory=Limits)
    keep_unanswered_questions: bool = False
    unanswered_questions_retention_days: int = 30
    stale_after_days: int = 180
    stale_source_dirs: tuple[Path, ...] = (DEFAULT_SAMPLE_CORPUS,)
    metrics_max_tenants: int = 20
    metrics_max_tags: int = 50
    default_tenant: str | None = None
    default_tags: tuple[str, ...] = ()
    search_budget_ms: float | None = None
    publish_events: bool = False
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
        check_rag_settings()  # the specifications' RAG_* settings: honoured or refused at start-up
        data_dir = Path(os.environ.get("SOURCEBOUND_DATA_DIR", "").strip() or "./data").resolve()
        keys_file = os.environ.get("SOURCEBOUND_API_KEYS_FILE", "").strip()
        sample_corpus_dir = Path(os.environ.get("SOURCEBOUND_SAMPLE_CORPUS_DIR", "").strip() or DEFAULT_SAMPLE_CORPUS)
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
            purge_after_s=env_int("SOURCEBOUND_PURGE_AFTER_SECONDS", 86400, 0),
            bootstrap_corpus=env_bool("SOURCEBOUND_BOOTSTRAP_CORPUS", True),
            sample_corpus_dir=sample_corpus_dir,
            limits=Limits.from_env(),
            keep_unanswered_questions=env_bool("SOURCEBOUND_KEEP_UNANSWERED_QUESTIONS", False),
            unanswered_questions_retention_days=env_int("SOURCEBOUND_UNANSWERED_QUESTIONS_RETENTION_DAYS", 30, 0),
            stale_after_days=env_int("SOURCEBOUND_STALE_AFTER_DAYS", 180, 0),
            stale_source_dirs=_stale_source_dirs(sample_corpus_dir),
            metrics_max_tenants=env_int("SOURCEBOUND_METRICS_MAX_TENANTS", 20, 0),
            metrics_max_tags=env_int("SOURCEBOUND_METRICS_MAX_TAGS", 50, 0),
            default_tenant=os.environ.get("SOURCEBOUND_DEFAULT_TENANT", "").strip() or None,
            default_tags=tuple(
                dict.fromkeys(
                    tag.strip() for tag in os.environ.get("SOURCEBOUND_DEFAULT_TAGS", "").split(",") if tag.strip()
                )
            ),
            search_budget_ms=p95_search_budget_ms(),
            publish_events=env_bool("SOURCEBOUND_EVENTS_PUBLISH", False),
            oidc=OidcSettings.from_env() if "oidc" in auth_methods(auth_mode) else None,
            allowed_hosts=allowed_hosts,
        )

    @property
    def records_path(self) -> Path:
        """The SQLite file holding the query log and the index event log."""
        return self.data_dir / "records.sqlite"


def _stale_source_dirs(sample_corpus_dir: Path) -> tuple[Path, ...]:
    """
    ``SOURCEBOUND_STALE_SOURCE_DIRS`` (folders separated by commas), resolved; unset: the sample corpus folder.

    :raises ConfigError: A listed folder that does not exist.
    """
    value = os.environ.get("SOURCEBOUND_STALE_SOURCE_DIRS")
    if value is None:
        return (sample_corpus_dir.resolve(),)
    folders = []
    for part in (part.strip() for part in value.split(",")):
        if not part:
            continue
        folder = Path(part).resolve()
        if not folder.is_dir():
            raise ConfigError(f"SOURCEBOUND_STALE_SOURCE_DIRS names {part!r}, which is not a folder.")
        folders.append(folder)
    return tuple(folders)


def service_version() -> str:
    """The installed ``sourcebound`` version (``0.0.0`` when run from an uninstalled tree)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sourcebound")
    except PackageNotFoundError:
        return "0.0.0"
