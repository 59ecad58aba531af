"""
The fields the access rule reads on a chunk, listed once (docs/contract.md, "Access rule").

Everything that needs them (the rule, the store's access index, the server profile's payload indexes, the
request schemas that reserve them, the indexing service) imports these lists; none keeps its own copy.
Pure data: importable anywhere, even before Haystack loads.
"""

# The identity a chunk is written with and a request is matched against.
ACCESS_FIELDS: tuple[str, ...] = ("tenant_id", "tags", "scope", "user_id", "project_id")

# The flags the request's narrowing options read (``verified_only``, ``exclude_tainted``).
ACCESS_FLAG_FIELDS: tuple[str, ...] = ("tainted", "verified")

# A document's identity: the access fields plus its id (unique within a tenant).
IDENTITY_FIELDS: tuple[str, ...] = (*ACCESS_FIELDS, "document_id")
