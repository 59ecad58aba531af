"""
Delete means gone (docs/contract.md "Deletion"): what deleting a tenant or a user removes, in one
place for the REST API (``/delete_tenant/run``), the CLI (``sourcebound delete``) and whatever else deletes.

* tenant: its chunks, its query-log rows and index events (one ``delete_tenant`` tombstone with
  counts stays), its tag owners, its API keys, and (given the data dir) its conversations and glossary;
* user: the user's private documents (``user`` and ``project`` scope owned by the user), the
  user's query-log rows, the user keys bound to the user and (given the data dir) the user's
  conversations (a ``delete_user`` tombstone with counts stays).

Each returns a report of what it removed (``{"chunks": n, "query_log_rows": n, ...}``).

Usage:

```python
from components.services.erasure_service import erase_tenant

report = erase_tenant(store, "acme", records=records, directory=directory, keys_file=keys_file)
report  # {'chunks': 134, 'query_log_rows': 12, 'index_events': 3, 'tag_owners': 4, 'api_keys': 2}
```
"""

from pathlib import Path
from typing import Any

from components.services import document_lifecycle
from components.stores import key_store
from components.stores.conversation_store import CONVERSATIONS_FILE, erase_conversations
from components.stores.glossary_store import GLOSSARY_FILE, GlossaryStore
from components.stores.record_store import RecordStore
from components.stores.sentence_vector_cache import erase_sentence_vectors


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
        ``api_keys`` (and with ``data_dir`` ``conversations``, ``glossary``, ``sentence_vectors``).
    :raises LifecycleError: If ``tenant_id`` is blank.
    """
    report = {"chunks": document_lifecycle.delete_tenant(store, tenant_id)}
    report["tag_owners"] = directory.remove_tenant(tenant_id) if directory is not None else 0
    report["api_keys"] = key_store.revoke_where(keys_file, tenant_id) if keys_file is not None else 0
    if data_dir is not None:
        report["conversations"] = erase_conversations(Path(data_dir) / CONVERSATIONS_FILE, tenant_id)
        report["glossary"] = int(GlossaryStore(Path(data_dir) / GLOSSARY_FILE).remove(tenant_id))
        report["sentence_vectors"] = erase_sentence_vectors(data_dir, tenant_id)
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
) -> dict[str, int]:
    """
    Remove a user's private documents, query-log rows, user keys and (with ``data_dir``) conversations, in one
    tenant or (``None``) in all.

    :returns: Counts: ``chunks``, ``query_log_rows``, ``api_keys`` (and with ``data_dir`` ``conversations``,
        ``sentence_vectors``).
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
    if data_dir is not None:
        report["conversations"] = erase_conversations(Path(data_dir) / CONVERSATIONS_FILE, tenant_id, user_id)
    report.update(records.erase_user(user_id, tenant_id, counts=report))
    return report
