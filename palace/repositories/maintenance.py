"""SurrealQL for the `audit` and `repair` jobs (`palace.maintenance`)."""

from __future__ import annotations

from typing import Any

from kernel.store import Store


class MaintenanceRepository:
    """What an audit reads and a repair looks for: drawers and jobs that do not fit together."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def orphan_drawer_ids(self) -> list[str]:
        """Drawers whose room no longer exists."""
        return self.store.one(
            "SELECT VALUE record::id(id) FROM drawer "
            "WHERE !record::exists(type::record('room', room))"
        )

    def orphan_drawers(self) -> list[dict[str, Any]]:
        """The same drawers, with what a repair needs to remove and announce them."""
        return self.store.one(
            "SELECT id, wing, room, created_at FROM drawer "
            "WHERE !record::exists(type::record('room', room))"
        )

    def dangling_job_refs(self) -> list[str]:
        """Drawers filed by a job whose record no longer exists."""
        return self.store.one(
            "SELECT VALUE record::id(id) FROM drawer WHERE provenance.job_id != NONE "
            "AND !record::exists(type::record('job', provenance.job_id))"
        )

    def exhausted_and_running_jobs(self, own_id: str) -> tuple[list[str], int]:
        """The jobs that failed for having crashed too often, and how many jobs but `own_id`
        are running."""
        exhausted, running = self.store.query(
            "SELECT VALUE record::id(id) FROM job WHERE status = 'failed' "
            "AND error_code = 'memcastle::jobs::recovery_exhausted';"
            "SELECT count() AS n FROM job WHERE status = 'running' AND record::id(id) != $own_key "
            "GROUP ALL;",
            {"own_key": own_id},
        )
        return exhausted, running[0]["n"] if running else 0

    def drawers_and_embedded(
        self, scope: str | None, profile: str | None
    ) -> tuple[list[str], list[str]]:
        """The drawers of wing `scope` (all with None), and the drawers with a vector in
        `profile` (in any with None)."""
        drawers, embedded = self.store.query(
            "LET $wing = (SELECT VALUE record::id(id) FROM wing WHERE name = $scope)[0];"
            "SELECT VALUE record::id(id) FROM drawer WHERE $scope = NONE OR wing = $wing;"
            "SELECT VALUE drawer FROM embedding_key WHERE $profile = NONE OR profile = $profile;",
            {"scope": scope, "profile": profile},
        )[1:]
        return drawers, embedded
