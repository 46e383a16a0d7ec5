"""SurrealQL for mined sources and their documents. The only module of `sources` that talks to
the store."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from surrealdb import RecordID

from kernel.store import Store

SOURCE_FIELDS = (
    "record::id(id) AS id, source, account, locator, cursor, last_job, last_run_at, "
    "created_at, updated_at"
)


def _document_id(source_id: str, external_id: str) -> RecordID:
    return RecordID("source_document", [source_id, external_id])


CLAIM_HOLDER = "SELECT VALUE running_job FROM ONLY type::record('source', $id)"


class SourceRepository:
    def __init__(self, store: Store) -> None:
        self.store = store

    def ensure(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """The source row with `record["id"]`, created from `record` when missing."""
        fields = {key: value for key, value in record.items() if key != "id"}
        return self.store.query(
            "INSERT IGNORE INTO source $record;"
            f"SELECT {SOURCE_FIELDS} FROM ONLY type::record('source', $id);",
            {"record": {"id": RecordID("source", record["id"]), **fields}, "id": record["id"]},
        )[-1]

    def advance(self, source_id: str, cursor: Any, job_id: str, now: dt.datetime) -> None:
        """Move the cursor (written after the drawers and documents it covers)."""
        self.store.query(
            "UPDATE type::record('source', $id) SET cursor = $cursor, last_job = $job, "
            "last_run_at = $now, updated_at = $now RETURN NONE",
            {"id": source_id, "cursor": cursor, "job": job_id, "now": now},
        )

    def claim_run(self, source_id: str, job_id: str, now: dt.datetime) -> tuple[bool, str | None]:
        """Name `job_id` the one mining the place, unless another job that is running with a
        current lease holds it; whether it is named, and the job that held the place before
        (a finished run releases it, so a holder that is not `job_id` is a run that ended
        without finishing). The claim lapses with its job's run.

        The claim is read back after its commit: the test server's engine has been seen to let
        two concurrent writers of one record both commit (one increment of two lost in 300),
        and only the job whose write stayed holds the place."""
        claimed, holder = self.store.transaction(
            f"LET $holder = ({CLAIM_HOLDER});"
            "LET $held = $holder != NONE AND $holder != $job AND (SELECT VALUE "
            "status = 'running' AND lease_expires_at > $now "
            "FROM ONLY type::record('job', $holder)) = true;"
            "IF !$held { UPDATE type::record('source', $id) SET running_job = $job "
            "RETURN NONE; };"
            "RETURN [!$held, $holder];",
            {"id": source_id, "job": job_id, "now": now},
        )
        named = bool(claimed) and self.store.one(CLAIM_HOLDER, {"id": source_id}) == job_id
        return named, holder

    def release_run(self, source_id: str, job_id: str) -> None:
        """The run of `job_id` finished: the place is no longer held by it."""
        self.store.query(
            "UPDATE type::record('source', $id) SET running_job = NONE "
            "WHERE running_job = $job RETURN NONE",
            {"id": source_id, "job": job_id},
        )

    def documents(self, source_id: str, external_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The stored documents among `external_ids`, by external id."""
        ids = [_document_id(source_id, external_id) for external_id in external_ids]
        if not ids:
            return {}
        rows = self.store.one(
            "SELECT external_id, revision, raw_hash, chunks FROM $ids", {"ids": ids}
        )
        return {row["external_id"]: row for row in rows}

    def record_documents(self, source_id: str, documents: list[dict[str, Any]]) -> None:
        """Write (create or replace) document rows, in one transaction."""
        if not documents:
            return
        rows = [
            {
                "id": _document_id(source_id, document["external_id"]),
                "source": source_id,
                **document,
            }
            for document in documents
        ]
        self.store.transaction(
            "INSERT INTO source_document $rows ON DUPLICATE KEY UPDATE "
            "revision = $input.revision, raw_hash = $input.raw_hash, title = $input.title, "
            "metadata = $input.metadata, occurred_at = $input.occurred_at, "
            "chunks = $input.chunks, acquired_at = $input.acquired_at, job = $input.job "
            "RETURN NONE;",
            {"rows": rows},
        )

    def list_sources(self) -> list[dict[str, Any]]:
        """Every source mined, oldest first, with its document count."""
        sources, tallies = self.store.query(
            f"SELECT {SOURCE_FIELDS} FROM source ORDER BY created_at;"
            "SELECT source, documents FROM source_documents;"
        )
        counts = {tally["source"]: tally["documents"] for tally in tallies}
        return [{**row, "documents": counts.get(row["id"], 0)} for row in sources]


# `registry`, `archive_digest` and `signed_by` are set for a source installed from a registry.
PACKAGE_FIELDS = (
    "record::id(id) AS name, state, origin, digest, manifest, consent, installed_at, updated_at, "
    "registry, archive_digest, signed_by"
)


class PackageRepository:
    """The `source_package` rows: which sources are installed, in which state, as agreed."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, name: str) -> dict[str, Any] | None:
        rows = self.store.one(
            f"SELECT {PACKAGE_FIELDS} FROM type::record('source_package', $name)", {"name": name}
        )
        return rows[0] if rows else None

    def list(self) -> list[dict[str, Any]]:
        return self.store.one(f"SELECT {PACKAGE_FIELDS} FROM source_package ORDER BY name")

    def put(self, row: Mapping[str, Any]) -> None:
        """Create or replace the row of `row["name"]`."""
        fields = {key: value for key, value in row.items() if key != "name"}
        self.store.query(
            "UPSERT type::record('source_package', $name) CONTENT $fields RETURN NONE",
            {"name": row["name"], "fields": fields},
        )

    def set_state(self, name: str, state: str, now: dt.datetime) -> None:
        self.store.query(
            "UPDATE type::record('source_package', $name) SET state = $state, updated_at = $now "
            "RETURN NONE",
            {"name": name, "state": state, "now": now},
        )

    def delete(self, name: str) -> None:
        self.store.query("DELETE type::record('source_package', $name)", {"name": name})


class TriggerRepository:
    """What running the triggers taught the daemon (`trigger_state`) and the webhook
    deliveries it accepted (`trigger_delivery`); see schema 0009."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def states(self) -> dict[str, dict[str, Any]]:
        rows = self.store.one("SELECT record::id(id) AS name, state FROM trigger_state")
        return {row["name"]: row["state"] for row in rows}

    def state(self, name: str) -> dict[str, Any]:
        rows = self.store.one(
            "SELECT state FROM type::record('trigger_state', $name)", {"name": name}
        )
        return rows[0]["state"] if rows else {}

    def put_state(
        self,
        name: str,
        state: Mapping[str, Any],
        now: dt.datetime,
        *,
        deliveries: Sequence[str] = (),
        job: str | None = None,
    ) -> None:
        """Save a trigger's state; with `deliveries` (their keys), give those webhook
        deliveries' rows their `job` in the same round trip."""
        sql = (
            "UPSERT type::record('trigger_state', $name) CONTENT "
            "{state: $state, updated_at: $now} RETURN NONE;"
        )
        variables: dict[str, Any] = {"name": name, "state": dict(state), "now": now}
        if deliveries:
            sql += "UPDATE $deliveries SET job = $job RETURN NONE;"
            variables.update(deliveries=_delivery_ids(name, deliveries), job=job)
        self.store.query(sql, variables)

    def delete_state(self, name: str) -> None:
        self.store.query("DELETE type::record('trigger_state', $name)", {"name": name})

    def record_deliveries(
        self, trigger: str, received: Sequence[tuple[str, str]], received_at: dt.datetime
    ) -> dict[str, dict[str, Any]]:
        """Write a row for each delivery `(key, body_sha256)` whose key is new, in one round
        trip: the rows that existed already (repeated deliveries), by key."""
        rows = [
            {
                "id": RecordID("trigger_delivery", [trigger, key]),
                "trigger": trigger,
                "key": key,
                "received_at": received_at,
                "body_sha256": digest,
                "job": None,
            }
            for key, digest in received
        ]
        existing, _ = self.store.query(
            "SELECT key, received_at, job FROM $ids;"
            "INSERT IGNORE INTO trigger_delivery $rows RETURN NONE;",
            {"ids": [row["id"] for row in rows], "rows": rows},
        )
        return {row["key"]: row for row in existing}

    def forget_delivery_keys(self, trigger: str, keys: Sequence[str]) -> None:
        """Drop deliveries that were refused after all, so that the sender may send them
        again."""
        self.store.query("DELETE $ids RETURN NONE", {"ids": _delivery_ids(trigger, keys)})

    def deliveries_without_job(self) -> list[dict[str, Any]]:
        return self.store.one(
            "SELECT trigger, key, received_at FROM trigger_delivery WHERE job = NONE OR job = NULL "
            "ORDER BY received_at"
        )

    def forget_deliveries(self, before: dt.datetime) -> None:
        self.store.query(
            "DELETE trigger_delivery WHERE received_at < $before RETURN NONE", {"before": before}
        )


def _delivery_ids(trigger: str, keys: Sequence[str]) -> list[RecordID]:
    return [RecordID("trigger_delivery", [trigger, key]) for key in keys]
