"""SurrealQL for job rows (and the demo job's steps). The only module of `jobs` that talks to
the store.

Every state change is a compare-and-set: the write names the state it was computed from, and a
row that changed in between is left alone (the caller gets None). A `None` in a change removes the
field, which reads back as absent.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from jobs.states import Status
from kernel.store import Statement, Store

# How many of the most urgent queued jobs a claim tries before reading the queue again.
CLAIM_CANDIDATES = 8
FINISHED = tuple(status.value for status in Status if status.terminal)
# What a running job's own writes read back: its state, not its input, which can be large (a
# checkpoint job of 1,000 items carries them all; reading them back at every save cost more
# than the save).
STATE_FIELDS = (
    "id, kind.type, status, attempt, recovery_attempts, max_attempts, lease_owner, "
    "pause_requested, cancel_requested, error_code"
)

# The most urgent queued jobs, `$n` of them.
CANDIDATES = (
    f"SELECT {STATE_FIELDS}, started_at, claim_rank, created_at FROM job WHERE status = 'queued' "
    "ORDER BY claim_rank, created_at LIMIT $n"
)


def _without_id(record: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in record.items() if key != "id"}


def _as_stored(value: Any) -> Any:
    """`value` as the store keeps it: a field set to None is absent."""
    if isinstance(value, dict):
        return {key: _as_stored(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_as_stored(item) for item in value]
    return value


def _filters(status: str | None, kind: str | None, kind_field: str) -> tuple[str, dict[str, Any]]:
    """A WHERE clause for `job` (`kind_field` "kind.type") or `job_count` ("kind")."""
    clauses, variables = [], {}
    if status is not None:
        clauses.append("status = $status")
        variables["status"] = status
    if kind is not None:
        clauses.append(f"{kind_field} = $kind")
        variables["kind"] = kind
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), variables


class JobRepository:
    def __init__(self, store: Store) -> None:
        self.store = store

    def create(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """Returns the record as stored, without reading it back: a checkpoint job's payload
        came back whole and was decoded for nothing (`claim_rank`, which the database computes,
        is the one field missing, and never shown)."""
        self.store.query(
            "CREATE ONLY type::record('job', $id) CONTENT $record RETURN NONE",
            {"id": record["id"], "record": _without_id(record)},
        )
        return _as_stored(record)

    def get(self, job_id: str) -> dict[str, Any] | None:
        return self.store.one("SELECT * FROM ONLY type::record('job', $id)", {"id": job_id})

    def page(
        self, *, status: str | None, kind: str | None, limit: int, offset: int
    ) -> tuple[list[dict[str, Any]], int]:
        """A page of jobs, newest first, and how many match in all."""
        where, variables = _filters(status, kind, "kind.type")
        tally_where, _ = _filters(status, kind, "kind")
        rows, tallies = self.store.query(
            f"SELECT * FROM job{where} ORDER BY created_at DESC LIMIT $limit START $offset;"
            f"SELECT n FROM job_count{tally_where};",
            {**variables, "limit": limit, "offset": offset},
        )
        return rows, sum(tally["n"] for tally in tallies)

    def count_by_status(self) -> dict[str, int]:
        """From the `job_count` rows the database keeps (see schema 0010)."""
        counts: dict[str, int] = {}
        for tally in self.store.one("SELECT status, n FROM job_count WHERE n > 0"):
            counts[tally["status"]] = counts.get(tally["status"], 0) + tally["n"]
        return counts

    def ids_with_status(self, status: str) -> list[str]:
        return self.store.one(
            "SELECT VALUE record::id(id) FROM job WHERE status = $status "
            "ORDER BY claim_rank, created_at",
            {"status": status},
        )

    def queued_since(self, before: dt.datetime, limit: int) -> list[str]:
        """The most urgent queued jobs last changed before `before`."""
        return self.store.one(
            "SELECT VALUE record::id(id) FROM job WHERE status = 'queued' AND updated_at < $before "
            "ORDER BY claim_rank, created_at LIMIT $limit",
            {"before": before, "limit": limit},
        )

    def prune(self, before: dt.datetime, limit: int) -> int:
        """Remove at most `limit` finished jobs that ended before `before`, with the rows they
        wrote for themselves (demo steps), in one transaction; how many were removed."""
        removed = self.store.transaction(
            "LET $ids = (SELECT VALUE id FROM job WHERE status IN $finished "
            "AND completed_at < $before LIMIT $limit);"
            "DELETE demo_step WHERE job IN $ids.map(|$id| record::id($id)) RETURN NONE;"
            "DELETE $ids RETURN NONE;"
            "RETURN array::len($ids);",
            {"finished": list(FINISHED), "before": before, "limit": limit},
        )
        return int(removed)

    def rows_with_status(self, status: str) -> list[dict[str, Any]]:
        return self.store.one("SELECT * FROM job WHERE status = $status", {"status": status})

    def claim_candidates(self) -> list[dict[str, Any]]:
        """The most urgent queued jobs, with what claiming one reads (the claim returns the
        whole row): reading whole rows, payloads included, took 3.5 ms a claim with 20
        checkpoints queued."""
        return self.store.one(CANDIDATES, {"n": CLAIM_CANDIDATES})

    def claim_first(
        self, changes: Mapping[str, Any]
    ) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """Read the most urgent queued job and, in the same round trip, write `changes` to it
        if it was never claimed (queued, no attempt, no requests, no lease: the state `changes`
        were computed from), which most claims find. Returns the claimed row (None when the job
        was in another state, or none was queued) and the job as read, in a list.
        Reading the queue, then claiming, took a round trip each: 0.2-0.3 ms more a claim.
        Only the first job is read: reading `CLAIM_CANDIDATES` took 1.38 ms against 0.82 with
        400 checkpoint jobs queued; a claim that misses reads them with `claim_candidates`."""
        _, claimed, candidates = self.store.query(
            f"LET $queued = ({CANDIDATES});"
            "UPDATE $queued.id MERGE $changes WHERE status = 'queued' "
            "AND (attempt ?? 0) = 0 AND started_at = NONE AND (pause_requested ?? false) = false "
            "AND (cancel_requested ?? false) = false AND lease_owner = NONE RETURN AFTER;"
            "RETURN $queued;",
            {"n": 1, "changes": dict(changes)},
        )
        return (claimed[0] if claimed else None), candidates

    def compare_and_set(
        self,
        seen: Mapping[str, Any],
        changes: Mapping[str, Any],
        *,
        expired_by: dt.datetime | None = None,
    ) -> dict[str, Any] | None:
        """Write `changes` only if the row's state is still the one in `seen`.

        The state is what the transition function reads: status, both requests and the lease
        holder. Heartbeats and checkpoints change none of them, so they never contend. With
        `expired_by`, the lease must also still be expired then (the holder did not renew it).
        """
        lease = (
            " AND (lease_expires_at = NONE OR lease_expires_at <= $expired_by)"
            if expired_by is not None
            else ""
        )
        return self.store.one(
            "UPDATE ONLY type::record('job', $id) MERGE $changes WHERE status = $status "
            "AND (pause_requested ?? false) = $pause AND (cancel_requested ?? false) = $cancel "
            f"AND lease_owner = $owner{lease} RETURN AFTER",
            {
                "expired_by": expired_by,
                "id": seen["id"],
                "changes": dict(changes),
                "status": seen["status"],
                "pause": bool(seen.get("pause_requested")),
                "cancel": bool(seen.get("cancel_requested")),
                "owner": seen.get("lease_owner"),
            },
        )

    def fenced_update(
        self, job_id: str, owner: str, changes: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """Write as the lease holder; None when the job is no longer running under `owner`.

        Returns the job's state (`STATE_FIELDS`), not the whole record."""
        return self.store.one(
            "UPDATE ONLY type::record('job', $id) MERGE $changes "
            f"WHERE status = 'running' AND lease_owner = $owner RETURN {STATE_FIELDS}",
            {"id": job_id, "owner": owner, "changes": dict(changes)},
        )

    def end_statement(self, job_id: str, owner: str, changes: Mapping[str, Any]) -> Statement:
        """`fenced_update` of a job's end state, for the transaction of its last unit's writes
        to carry: a write of its own cost 0.8-1.2 ms more (its own commit, synced to disk).
        Its instants are the daemon's clock, as every other instant of a job is (a remote
        store's clock may differ), taken when the statement is made, just before the unit's
        writes run."""
        return Statement(
            "UPDATE ONLY type::record('job', $job_id) MERGE $job_changes "
            f"WHERE status = 'running' AND lease_owner = $job_owner RETURN {STATE_FIELDS};",
            {"job_id": job_id, "job_owner": owner, "job_changes": dict(changes)},
        )

    def renew_leases(
        self, owner: str, job_ids: Iterable[str], expires_at: dt.datetime
    ) -> list[dict[str, Any]]:
        """Extend the leases `owner` still holds; returns those rows (with their requests)."""
        ids = list(job_ids)
        if not ids:
            return []
        return self.store.one(
            "UPDATE job SET lease_expires_at = $expires WHERE record::id(id) IN $ids "
            "AND status = 'running' AND lease_owner = $owner "
            "RETURN record::id(id) AS id, pause_requested, cancel_requested",
            {"ids": ids, "owner": owner, "expires": expires_at},
        )

    def queued_like(self, kind: Mapping[str, Any]) -> dict[str, Any] | None:
        """The oldest queued job of exactly this kind and input, if any."""
        rows = self.store.one(
            "SELECT * FROM job WHERE status = 'queued' AND kind = $kind "
            "ORDER BY created_at LIMIT 1",
            {"kind": kind},
        )
        return rows[0] if rows else None

    def any_with(self, kind: str, status: str) -> bool:
        """Whether a job of `kind` is in `status`, from the `job_count` rows."""
        tallies = self.store.one(
            "SELECT n FROM job_count WHERE status = $status AND kind = $kind",
            {"status": status, "kind": kind},
        )
        return sum(tally["n"] for tally in tallies) > 0

    def write_demo_step(self, step_id: str, job_id: str, step: int, attempt: int) -> None:
        """Create-if-absent: a step replayed after a crash finds its row and writes nothing."""
        self.store.query(
            "INSERT IGNORE INTO demo_step {id: $id, job: $job, step: $step, attempt: $attempt, "
            "written_at: time::now()}",
            {"id": step_id, "job": job_id, "step": step, "attempt": attempt},
        )

    def demo_steps_written(self, job_id: str) -> int:
        written = self.store.one(
            "SELECT count() AS n FROM demo_step WHERE job = $job GROUP ALL", {"job": job_id}
        )
        return written[0]["n"] if written else 0
