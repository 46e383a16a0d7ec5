"""How the graph's records are named and read by id, for every repository of the graph.

Rows come back plain (`kernel.store.plain`): a record id is its key, so an edge's `in`
and `out` are entity ids and a relationship's `id` is its UUID. Every write a job can replay
goes to a derived id and is create-if-absent (`INSERT ... IGNORE`), so a replay writes nothing
twice and never moves an instant.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from surrealdb import RecordID

from kernel.store import Store

# The derivation strings are persisted: changing one needs a data migration.
NAMESPACE = "memcastle-graph"


def derived_id(*parts: str) -> str:
    """A version-8 UUID from SHA-256 over the parts, for records a replay must find again."""
    text = "\x00".join((NAMESPACE, *parts))
    digest = bytearray(hashlib.sha256(text.encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x80
    digest[8] = (digest[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(digest)))


def entity_record(entity_id: str) -> RecordID:
    return RecordID("entity", entity_id)


def relationship_record(relationship_id: str) -> RecordID:
    return RecordID("relates_to", relationship_id)


def edge_rows(table: str, rows: Iterable[Mapping[str, Any]], ends: str) -> list[dict[str, Any]]:
    """Rows for `INSERT RELATION`: ids, `in` and `out` as record ids (`ends` names the tables
    of `in` and `out`, `drawer>entity` or `entity>entity`)."""
    source, target = ends.split(">")
    return [
        {
            **row,
            "id": RecordID(table, row["id"]),
            "in": RecordID(source, row["in"]),
            "out": RecordID(target, row["out"]),
        }
        for row in rows
    ]


def rows_by_id(
    store: Store, table: str, ids: Iterable[str], fields: str = "*"
) -> dict[str, dict[str, Any]]:
    """The rows of `table` with these ids, by id (those that exist): one round trip, none for
    no id."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    rows = store.one(f"SELECT {fields} FROM $ids", {"ids": [RecordID(table, i) for i in wanted]})
    return {row["id"]: row for row in rows}


def count(rows: list[dict[str, Any]]) -> int:
    """The answer of `SELECT count() ... GROUP ALL`: no row when nothing matched."""
    return rows[0]["count"] if rows else 0
