"""Components that validate documents and identities (document identity at indexing, the access guard at query time)."""
