"""SurrealQL for stored vectors (schema 0006). The only module of `palace.embeddings` that talks
to the store.

One row per drawer and profile, `embedding:[drawer id, profile name]`: its windows' vectors and
the profile's provenance. A vector is written only while its drawer exists (checked in the same
transaction), and the database deletes a drawer's vectors with the drawer, so none is left
without its drawer.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from surrealdb import Null, RecordID

from kernel.store import Store

_PUT = """
FOR $row IN $rows {
    IF record::exists(type::record('drawer', $row.drawer)) {
        UPSERT type::record('embedding', [$row.drawer, $row.profile]) CONTENT $row RETURN NONE;
    };
};
RETURN (SELECT VALUE drawer FROM $written);
"""


def _row(
    drawer_id: str,
    profile: str,
    vectors: np.ndarray,
    provenance: Mapping[str, Any],
    now: dt.datetime,
) -> dict[str, Any]:
    return {
        "drawer": drawer_id,
        "profile": profile,
        "vectors": np.asarray(vectors, dtype=np.float32).tolist(),
        # NULL, not NONE: a model the profile does not name is stored as null, not dropped.
        "provenance": {key: Null if value is None else value for key, value in provenance.items()},
        "created_at": now,
    }


class EmbeddingRepository:
    def __init__(self, store: Store) -> None:
        self.store = store

    def put(
        self,
        entries: Sequence[tuple[str, np.ndarray]],
        profile: str,
        provenance: Mapping[str, Any],
        now: dt.datetime,
    ) -> set[str]:
        """Store (or replace) each drawer's vectors, one transaction for all of them; returns
        the drawers written, which leaves out those that no longer exist."""
        if not entries:
            return set()
        rows = [_row(drawer, profile, vectors, provenance, now) for drawer, vectors in entries]
        written = self.store.transaction(
            _PUT,
            {
                "rows": rows,
                "written": [RecordID("embedding", [drawer, profile]) for drawer, _ in entries],
            },
        )
        return set(written or [])

    def get(self, drawer_id: str, profile: str) -> dict[str, Any] | None:
        return self.store.one(
            "SELECT * FROM ONLY type::record('embedding', [$drawer, $profile])",
            {"drawer": drawer_id, "profile": profile},
        )

    def embedded(self, profile: str) -> set[str]:
        """The drawers with a vector in `profile`, read from `embedding_key` (the same rows
        without their vectors: reading 20,000 vectors to learn their ids took 1.6 s)."""
        return set(
            self.store.one(
                "SELECT VALUE drawer FROM embedding_key WHERE profile = $profile",
                {"profile": profile},
            )
        )

    def drawer_ids(self, wing_id: str | None) -> list[str]:
        """Every drawer, current and superseded, of one wing or of the palace."""
        if wing_id is None:
            return self.store.one("SELECT VALUE record::id(id) FROM drawer")
        return self.store.one(
            "SELECT VALUE record::id(id) FROM drawer WHERE wing = $wing", {"wing": wing_id}
        )

    def oldest_first(self, drawer_ids: Iterable[str]) -> list[str]:
        """The drawers that still exist, oldest `created_at` first (then by id)."""
        rows = self.store.one(
            "SELECT record::id(id) AS id, created_at FROM $ids",
            {"ids": [RecordID("drawer", drawer_id) for drawer_id in drawer_ids]},
        )
        return [row["id"] for row in sorted(rows, key=lambda row: (row["created_at"], row["id"]))]

    def contents(self, drawer_ids: Sequence[str]) -> dict[str, str]:
        rows = self.store.one(
            "SELECT record::id(id) AS id, content FROM $ids",
            {"ids": [RecordID("drawer", drawer_id) for drawer_id in drawer_ids]},
        )
        return {row["id"]: row["content"] for row in rows}

    def drawer_exists(self, drawer_id: str) -> bool:
        return bool(
            self.store.one(
                "SELECT VALUE record::id(id) FROM $ids", {"ids": [RecordID("drawer", drawer_id)]}
            )
        )
