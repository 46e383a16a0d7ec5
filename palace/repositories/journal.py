"""SurrealQL for the journal's reads: an agent's diary and the checkpointed drawers a wake-up
shows."""

from __future__ import annotations

from typing import Any

from kernel.store import Store
from palace.repositories.hierarchy import CURRENT


class JournalRepository:
    def __init__(self, store: Store) -> None:
        self.store = store

    def diary_entries(self, agent: str, wing_id: str | None, limit: int) -> list[dict[str, Any]]:
        """An agent's current diary drawers (in `<wing>/diary`, or every wing's), newest
        first."""
        wing = " AND wing = $wing" if wing_id is not None else ""
        return self.store.query(
            f"LET $rooms = (SELECT VALUE record::id(id) FROM room WHERE name = 'diary'{wing});"
            "SELECT * FROM drawer WHERE source.agent = $agent AND room IN $rooms "
            f"AND {CURRENT} ORDER BY created_at DESC LIMIT $limit;",
            {"agent": agent, "wing": wing_id, "limit": limit},
        )[-1]

    def checkpoint_highlights(self, wing_id: str | None, limit: int) -> list[dict[str, Any]]:
        """Current drawers written by checkpoint jobs (in one wing, or all), newest first."""
        wing = " AND wing = $wing" if wing_id is not None else ""
        return self.store.query(
            "LET $jobs = (SELECT VALUE record::id(id) FROM job WHERE kind.type = 'checkpoint');"
            f"SELECT * FROM drawer WHERE provenance.job_id IN $jobs{wing} AND {CURRENT} "
            "ORDER BY created_at DESC LIMIT $limit;",
            {"wing": wing_id, "limit": limit},
        )[-1]
