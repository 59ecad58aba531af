"""
The service's state outside the vector store: one small store class per kind of record, over the state layer.

| module | class | what it keeps | data dir file (embedded) |
|---|---|---|---|
| ``state`` | ``StateDatabase`` | one SQLite file per store, or the shared database, and migrations | ``*.sqlite`` |
| ``key_store`` | ``ApiKeyStore`` | hashed API keys of ``api_key`` mode | ``api_keys.json`` |
| ``tag_directory`` | ``TagDirectory`` | tag owners and users | ``tags.sqlite`` |
| ``glossary_store`` | ``GlossaryStore`` | per-tenant glossaries | ``glossary.sqlite`` |
| ``conversation_store`` | ``ConversationStore`` | conversations, turns, summaries | ``conversations.sqlite`` |
| ``record_store`` | ``RecordStore`` | query log, index events, the event consumer's tables | ``records.sqlite`` |
| ``sentence_vector_cache`` | ``SentenceVectorCache`` | indexed chunks' sentence vectors | ``sentence_vectors.sqlite`` |
| ``sync_state`` | ``SyncState`` | sources' commits, webhook deliveries, sync jobs | ``sources.sqlite`` |

With ``SOURCEBOUND_DATABASE_URL`` every store but the sentence vectors keeps its tables in the shared database.

Stores know tables and files, not requests: the rules they apply come from ``components.core`` and the
decisions around them (who may read what, what a deletion removes) from ``components.services``. Importing
this package has no side effects: nothing connects until a store is used.
"""
