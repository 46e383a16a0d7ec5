"""Versioned SurrealQL migrations, applied in order at start-up (see `store.Store.migrate`)."""
