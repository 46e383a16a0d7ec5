"""Durable jobs: records in SurrealDB, executed by Celery (see ARCHITECTURE.md, "Jobs")."""
