"""SurrealQL for the palace, one module per service: the only modules of the palace (outside
`palace.search` and `palace.embeddings`, which have their own) that talk to the store.

Rows come back as plain dicts whose `id` is the record key (a UUID string)."""
