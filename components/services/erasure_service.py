"""
Delete means gone (docs/contract.md "Deletion"): what deleting a tenant or a user removes, in one
place for the REST API (``/delete_tenant/run``), the CLI (``sourcebound delete``) and whatever else deletes.

* tenant: its chunks, its query-log rows and index events (one ``delete_tenant`` tombstone with
  counts stays), its feedback and kept questions, its tag owners, its API keys, and (given the data dir) its
  conversations, glossary, sentence vectors, and the git mirrors and sync state of its sources;
* user: the user's private documents (``user`` and ``project`` scope owned by the user), the
  user's query-log rows, feedback and kept questions, the user keys bound to the user, (given the directory) the
  user's tag ownerships and email, and (given the data dir) the user's conversations (a ``delete_user`` tombstone
  with counts stays).

Every store an erasure touches leaves nothing of it in its files when the call returns: the Qdrant Edge shard is
compacted (``QdrantEdgeDocumentStore.purge_deleted``), SQLite files zero freed pages and empty their write-ahead
log. Other deletions (invalidation, re-indexing) are purged by :func:`purge_due`, on a schedule.

Each returns a report of what it removed (``{"chunks": n, "query_log_rows": n, ...}``).

Usage:

```python
from components.services.erasure_service import erase_tenant

report = erase_tenant(store, "acme", records=records, directory=directory, keys_file=keys_file)
report  # {'chunks': 134, 'tag_owners': 4, 'api_keys': 2, 'feedback': 3, 'kept_questions': 2, 'query_log_rows': 12, ...}
```
"""

import logging
import shutil
from pathlib import Path
from typing import Any

from components.core.document_identity import tenant_filter
from components.core.errors import SourceboundError
from components.services import document_lifecycle
from components.services.source_jobs import declared_sources
from components.stores import key_store
from components.stores.conversation_store import CONVERSATIONS_FILE, erase_conversations
from components.stores.event_outbox import erase_outbox_tenant
from components.stores.feedback_store import FeedbackStore
from components.stores.glossary_store import GLOSSARY_FILE, GlossaryStore
from components.stores.kept_question_store import KeptQuestionStore
from components.stores.record_store import RecordStore
from components.stores.sentence_vector_cache import erase_sentence_vectors
from components.stores.state import database_url
from components.stores.sync_state import SYNC_STATE_FILE, SyncState

logger = logging.getLogger(__name__)

SOURCES_DIR = "sources"  # the git mirrors in the data dir: ``sources/<name>.git``


def erase_tenant(
    store: Any,
    tenant_id: str,
    *,
    records: RecordStore,
    directory: Any | None,
    keys_file: Path | None,
    key_id: str | None = None,
    data_dir: Path | None = None,
) -> dict[str, int]:
    """
    Remove everything of a tenant.

    :param store: The document store.
    :param tenant_id: The tenant.
    :param records: The records database (query log, index events).
    :param directory: The tag directory (``TagDirectory``), or ``None`` when the deployment has none.
    :param keys_file: The API keys file, or ``None``.
    :param key_id: The key that asked (kept in the tombstone).
    :param data_dir: The data dir holding ``conversations.sqlite`` and ``glossary.sqlite``, or ``None``.
    :returns: Counts of what was removed: ``chunks``, ``query_log_rows``, ``index_events``, ``tag_owners``,
        ``api_keys``, ``feedback``, ``kept_questions`` (and with ``data_dir`` ``conversations``, ``glossary``,
        ``sentence_vectors``, ``source_mirrors``, ``sync_rows``).
    :raises LifecycleError: If ``tenant_id`` is blank.
    """
    # Which sources fed the tenant is known only while its chunks exist (a CLI sync or crawl runs no job).
    fed = _sources_with_chunks(store, Path(data_dir), tenant_id) if data_dir is not None else set()
    report = {"chunks": document_lifecycle.delete_tenant(store, tenant_id)}
    report["tag_owners"] = directory.remove_tenant(tenant_id) if directory is not None else 0
    report["api_keys"] = key_store.revoke_where(keys_file, tenant_id) if keys_file is not None else 0
    if data_dir is not None:
        report["conversations"] = erase_conversations(Path(data_dir) / CONVERSATIONS_FILE, tenant_id)
        report["glossary"] = int(GlossaryStore(Path(data_dir) / GLOSSARY_FILE).remove(tenant_id))
        report["sentence_vectors"] = erase_sentence_vectors(data_dir, tenant_id)
        published = erase_outbox_tenant(data_dir, tenant_id)
        if published is not None:  # only where events are published (docs/events.md, "Published events")
            report["published_events"] = published
        report.update(_erase_tenant_sources(Path(data_dir), tenant_id, fed))
    report["feedback"] = FeedbackStore(records.database).erase_tenant(tenant_id)
    report["kept_questions"] = KeptQuestionStore(records.database).erase_tenant(tenant_id)
    report.update(records.erase_tenant(tenant_id, key_id=key_id, counts=report))
    return report


def erase_user(
    store: Any,
    user_id: str,
    tenant_id: str | None = None,
    *,
    records: RecordStore,
    keys_file: Path | None,
    data_dir: Path | None = None,
    directory: Any | None = None,
) -> dict[str, int]:
    """
    Remove a user's private documents, query-log rows, user keys, (with ``directory``) tag ownerships and email,
    and (with ``data_dir``) conversations, in one tenant or (``None``) in all.

    :param directory: The tag directory (``TagDirectory``): the user's tags keep no owner, and the user's id and
        email go once the user owns no tag in any tenant.
    :returns: Counts: ``chunks``, ``query_log_rows``, ``api_keys``, ``feedback``, ``kept_questions`` (with
        ``directory`` ``tag_owners`` and ``users``; with ``data_dir`` ``conversations``, ``sentence_vectors``).
    :raises LifecycleError: If ``user_id`` is blank.
    """
    # The user's documents are known only before they are deleted: their sentence vectors go with them.
    owned = (
        {
            (chunk.meta["tenant_id"], chunk.meta["document_id"])
            for chunk in store.filter_documents(document_lifecycle.user_documents_filter(user_id, tenant_id))
        }
        if data_dir is not None
        else set()
    )
    report = {"chunks": document_lifecycle.delete_user(store, user_id, tenant_id)}
    if data_dir is not None:
        report["sentence_vectors"] = sum(
            erase_sentence_vectors(data_dir, tenant, [document for owner, document in owned if owner == tenant])
            for tenant in {owner for owner, _ in owned}
        )
    keys = 0
    if keys_file is not None:  # the shared database or the keys file (none: no keys)
        tenants = {record.tenant_id for record in key_store.list_keys(keys_file) if record.user_id == user_id}
        for tenant in sorted(tenants if tenant_id is None else tenants & {tenant_id}):
            keys += key_store.revoke_where(keys_file, tenant, user_id=user_id)
    report["api_keys"] = keys
    if directory is not None:
        report.update(directory.erase_user(user_id, tenant_id))
    if data_dir is not None:
        report["conversations"] = erase_conversations(Path(data_dir) / CONVERSATIONS_FILE, tenant_id, user_id)
    report["feedback"] = FeedbackStore(records.database).erase_user(user_id, tenant_id)
    report["kept_questions"] = KeptQuestionStore(records.database).erase_user(user_id, tenant_id)
    report.update(records.erase_user(user_id, tenant_id, counts=report))
    return report


def _open_sync_state(data_dir: Path) -> SyncState | None:
    """The sync state, or ``None`` when there is none to read (no shared database, no ``sources.sqlite``)."""
    if database_url() is not None or (data_dir / SYNC_STATE_FILE).exists():
        return SyncState(data_dir / SYNC_STATE_FILE)
    return None


def _sources_with_chunks(store: Any, data_dir: Path, tenant_id: str) -> set[str]:
    """The sources the sync state knows that indexed chunks into ``tenant_id`` (their chunks' ``source_name``)."""
    state = _open_sync_state(data_dir)
    if state is None:
        return set()
    try:
        known = state.known_sources()
    finally:
        state.close()
    count = getattr(store, "count_documents_by_filter", None)
    if count is None:  # a store without filtered counts: the declared sources and the jobs still name them
        return set()
    fed = set()
    for name in sorted(known):
        conditions = [tenant_filter(tenant_id), {"field": "meta.source_name", "operator": "==", "value": name}]
        if count({"operator": "AND", "conditions": conditions}) > 0:
            fed.add(name)
    return fed


def _erase_tenant_sources(data_dir: Path, tenant_id: str, fed: set[str]) -> dict[str, int]:
    """
    Remove the git mirrors and the sync state (commits, file lists, crawled pages, deliveries, jobs) of the tenant's
    sources: those the sources file declares for it, those its sync jobs name and those whose chunks it held
    (``fed``; a source the sources file declares for another tenant is kept).
    """
    names: set[str] = set(fed)
    declared: set[str] = set()
    try:
        found = declared_sources()
    except SourceboundError as error:  # an invalid sources file must not stop an erasure
        logger.warning("Reading SOURCEBOUND_SOURCES for the tenant's sources failed (%s); using the sync state.", error)
        found = None
    if found is not None:
        declared = {name for name, source in found[0].items() if source.tenant_id == tenant_id}
        names -= {name for name, source in found[0].items() if source.tenant_id != tenant_id}
        names |= declared
    rows = 0
    state = _open_sync_state(data_dir)
    if state is not None:
        try:
            names |= state.tenant_sources(tenant_id)
            rows = state.erase_sources(names)
        finally:
            state.close()
    mirrors = 0
    for name in sorted(names):
        mirror = data_dir / SOURCES_DIR / f"{name}.git"
        if Path(name).name != name or name.startswith("."):
            continue  # never a path outside the mirrors folder
        if mirror.is_dir():
            shutil.rmtree(mirror)
            mirrors += 1
    if declared:
        logger.warning(
            "Tenant %s was deleted, but SOURCEBOUND_SOURCES still declares its sources %s: their next sync indexes "
            "them again. Remove them from the sources file.",
            tenant_id,
            ", ".join(sorted(declared)),
        )
    return {"source_mirrors": mirrors, "sync_rows": rows}


def purge_due(store: Any, max_age_s: float) -> dict[str, Any] | None:
    """
    Purge the store's deleted points once the first of them is ``max_age_s`` old (docs/contract.md "Deletion":
    an invalidated or replaced document's text leaves the files within that bound). Erasures purge at once.

    :param store: The document store; one without ``purge_deleted`` (a Qdrant server) has nothing to do here.
    :param max_age_s: The most seconds a deleted point's data may stay in the store's files.
    :returns: The compaction's report, or ``None`` when nothing was due.
    """
    purge = getattr(store, "purge_deleted", None)
    if purge is None:
        return None
    return purge(older_than_s=max_age_s)
