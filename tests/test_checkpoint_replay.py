"""A checkpoint job whose run ended before its end state was written, run again in-process.

The handler's last chunk is saved with the job's end state, not before it; when that write is
lost (the process died after the chunk's transaction committed), the next run replays the chunk,
and the derived drawer ids keep every item stored once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from memcastle_project import runtime
from memcastle_project.config import load_config
from memcastle_project.context import RequestContext
from memcastle_project.errors import StoreFailed
from memcastle_project.store import Store
from palace import checkpoint

ITEMS = checkpoint.CHUNK + 50


@pytest.fixture
def daemon(store: Store) -> Iterator[runtime.Runtime]:
    built = runtime.Runtime.build(load_config(env={}), store)
    runtime.install(built)
    yield built
    runtime.install(None)


def submit(daemon: runtime.Runtime) -> str:
    items = [
        {
            "content": f"lesson {n}: keep the batch whole",
            "destination": "project",
            "wing": "w",
            "tags": [],
        }
        for n in range(ITEMS)
    ]
    job = daemon.jobs.submit(
        RequestContext.build(requested_by="http"),
        {"type": "checkpoint", "payload": {"items": items}},
    )
    return job["id"]


def drawers_of(store: Store, job_id: str) -> list[dict[str, Any]]:
    return store.one("SELECT id FROM drawer WHERE provenance.job_id = $job", {"job": job_id})


def test_the_last_chunk_is_saved_with_the_end_state(daemon: runtime.Runtime) -> None:
    job_id = submit(daemon)
    daemon.executor.execute(job_id)
    row = daemon.executor.repository.get(job_id)
    assert row is not None
    assert row["status"] == "completed"
    assert row["progress"]["current"] == row["progress"]["total"] == ITEMS
    assert row["checkpoint"]["next_index"] == ITEMS
    assert row["result"] == {"items": ITEMS, "duplicates": 0}


def test_a_lost_end_state_replays_the_last_chunk_without_storing_twice(
    daemon: runtime.Runtime, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = submit(daemon)
    repository = daemon.executor.repository
    write = repository.fenced_update

    def lose_the_end_state(job: str, owner: str, changes: dict[str, Any]) -> Any:
        if changes.get("status") == "completed":
            raise StoreFailed("the process died before this write")
        return write(job, owner, changes)

    monkeypatch.setattr(repository, "fenced_update", lose_the_end_state)
    daemon.executor.execute(job_id)
    row = repository.get(job_id)
    assert row is not None
    assert row["status"] == "running"
    # The first chunk was saved; the last one was filed but its save rode on the lost write.
    assert row["checkpoint"]["next_index"] == checkpoint.CHUNK
    assert len(drawers_of(store, job_id)) == ITEMS

    monkeypatch.setattr(repository, "fenced_update", write)
    daemon.executor.start_up()
    daemon.executor.execute(job_id)
    row = repository.get(job_id)
    assert row is not None
    assert row["status"] == "completed"
    assert row["attempt"] == 2
    assert row["result"] == {"items": ITEMS, "duplicates": 0}
    assert len(drawers_of(store, job_id)) == ITEMS
