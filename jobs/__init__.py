"""Durable jobs: records in SurrealDB, executed by Celery (see docs/jobs.md, "How jobs run")."""
