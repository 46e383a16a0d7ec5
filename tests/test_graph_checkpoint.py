"""Checkpoint facts replayed in-process: a job whose end state was lost runs its last chunk
again, and the facts of that chunk are applied again without writing anything twice or moving
an instant (their records live under ids derived from each item's drawer)."""

from __future__ import annotations

from typing import Any

import pytest

from jobs.repository import JobRepository
from kernel.context import RequestContext
from kernel.errors import StoreFailed
from kernel.store import Store
from memcastle_project.composition import Services
from palace import checkpoint

# The facts sit in the second (last) chunk, the one replayed.
FILLER = checkpoint.CHUNK + 5


def submit(services: Services, facts: list[dict[str, Any]], label: str) -> str:
    items: list[dict[str, Any]] = [
        {"content": f"{label} filler {n}", "destination": "project", "wing": "w", "tags": []}
        for n in range(FILLER)
    ]
    items += [
        {
            "content": f"{label} fact {n}",
            "destination": "project",
            "wing": "w",
            "tags": [],
            "fact": fact,
        }
        for n, fact in enumerate(facts)
    ]
    job = services.jobs.submit(
        RequestContext.build(requested_by="http"),
        {"type": "checkpoint", "payload": {"items": items}},
    )
    return job["id"]


def graph_rows(store: Store) -> dict[str, list[dict[str, Any]]]:
    return {
        table: store.one(f"SELECT * FROM {table} ORDER BY id")
        for table in ("entity", "relates_to", "fact_link")
    }


def test_a_replayed_chunk_applies_its_facts_once(
    services: Services, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A first job asserts what the second corrects.
    first = submit(
        services,
        [
            {"op": "add", "subject": "api", "predicate": "hosted_on", "object": "fly"},
            {"op": "add", "subject": "db", "predicate": "hosted_on", "object": "rds"},
            {"op": "add", "subject": "cdn", "predicate": "hosted_on", "object": "bunny"},
        ],
        "first",
    )
    services.executor.execute(first)
    by_object = {
        services.entities.entity(row["out"])["name"]: row["id"]
        for row in store.one("SELECT * FROM relates_to")
    }
    second = submit(
        services,
        [
            {"op": "supersede", "relationship_id": by_object["fly"], "to": "hetzner"},
            {"op": "invalidate", "relationship_id": by_object["rds"], "reason": "gone"},
            {
                "op": "link",
                "relationship_id": by_object["bunny"],
                "other_id": by_object["rds"],
                "kind": "refines",
                "reason": "same vendor review",
            },
            {"op": "add", "subject": "api", "predicate": "written_in", "object": "python"},
        ],
        "second",
    )
    # The executor's repository is the composition root's own: its class is patched.
    write = JobRepository.fenced_update

    def lose_the_end_state(
        repository: JobRepository, job: str, owner: str, changes: dict[str, Any]
    ) -> Any:
        if changes.get("status") == "completed":
            raise StoreFailed("the process died before this write")
        return write(repository, job, owner, changes)

    monkeypatch.setattr(JobRepository, "fenced_update", lose_the_end_state)
    services.executor.execute(second)
    row = services.jobs.record(second)
    assert row is not None and row["status"] == "running"
    applied = graph_rows(store)
    assert len(applied["relates_to"]) == 5
    assert len(applied["fact_link"]) == 3

    monkeypatch.setattr(JobRepository, "fenced_update", write)
    services.executor.start_up()
    services.executor.execute(second)
    row = services.jobs.record(second)
    assert row is not None and row["status"] == "completed"
    assert row["attempt"] == 2
    assert row["result"] == {"items": FILLER + 4, "duplicates": 0}
    assert graph_rows(store) == applied, "the replay wrote or moved something"
