"""A checkpoint job whose run died part way, run again in-process.

The last chunk's drawers and the job's end state are written in one transaction: a run that
dies before it commits has stored neither, and the next run files that chunk again. A run that
dies after a chunk's transaction, before its checkpoint is saved, replays that chunk, and the
derived drawer ids keep every item stored once. A last chunk whose outcome changed under it (a
name taken meanwhile) is filed again, and the job's end state counts what was filed.
"""

from __future__ import annotations

from typing import Any

import pytest

from jobs.repository import JobRepository
from kernel.context import RequestContext
from kernel.errors import StoreFailed
from kernel.store import Store
from memcastle_project.composition import Services
from palace import checkpoint
from palace.filing import Filing

ITEMS = checkpoint.CHUNK + 50


def submit(services: Services) -> str:
    items = [
        {
            "content": f"lesson {n}: keep the batch whole",
            "destination": "project",
            "wing": "w",
            "tags": [],
        }
        for n in range(ITEMS)
    ]
    job = services.jobs.submit(
        RequestContext.build(requested_by="http"),
        {"type": "checkpoint", "payload": {"items": items}},
    )
    return job["id"]


def drawers_of(store: Store, job_id: str) -> list[dict[str, Any]]:
    return store.one("SELECT id FROM drawer WHERE provenance.job_id = $job", {"job": job_id})


class Died(BaseException):
    """The process stopped here: nothing after it runs, not even the job's end state."""


def recover_and_run(services: Services, job_id: str) -> dict[str, Any]:
    """What the next daemon does: re-queue the running job, then run it."""
    services.executor.start_up()
    services.executor.execute(job_id)
    row = services.jobs.record(job_id)
    assert row is not None
    return row


def test_the_last_chunk_is_written_with_the_end_state(
    services: Services, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = submit(services)
    transactions: list[str] = []
    transaction = store.transaction

    def recorded(sql: str, variables: Any = None) -> Any:
        transactions.append(sql)
        return transaction(sql, variables)

    monkeypatch.setattr(store, "transaction", recorded)
    services.executor.execute(job_id)
    row = services.jobs.record(job_id)
    assert row is not None
    assert row["status"] == "completed"
    assert row["progress"]["current"] == row["progress"]["total"] == ITEMS
    assert row["checkpoint"]["next_index"] == ITEMS
    assert row["result"] == {"items": ITEMS, "duplicates": 0}
    assert row["started_at"] < row["completed_at"] == row["updated_at"]
    assert row.get("lease_owner") is None
    assert [("INSERT INTO drawer" in sql, "'job'" in sql) for sql in transactions] == [
        (True, False),
        (True, True),
    ]


def test_a_run_that_dies_in_its_last_transaction_stored_nothing_of_it(
    services: Services, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = submit(services)
    transaction = store.transaction

    def die_before_the_commit(sql: str, variables: Any = None) -> Any:
        if "'job'" not in sql:
            return transaction(sql, variables)
        # The transaction's statements run, then fail before the commit: all are undone.
        with pytest.raises(StoreFailed):
            transaction(f"{sql}THROW 'the process died';", variables)
        raise Died

    monkeypatch.setattr(store, "transaction", die_before_the_commit)
    with pytest.raises(Died):
        services.executor.execute(job_id)
    row = services.jobs.record(job_id)
    assert row is not None
    assert row["status"] == "running"
    assert row["checkpoint"]["next_index"] == checkpoint.CHUNK
    assert len(drawers_of(store, job_id)) == checkpoint.CHUNK

    monkeypatch.setattr(store, "transaction", transaction)
    row = recover_and_run(services, job_id)
    assert (row["status"], row["attempt"]) == ("completed", 2)
    assert row["result"] == {"items": ITEMS, "duplicates": 0}
    assert len(drawers_of(store, job_id)) == ITEMS


def test_a_chunk_stored_before_its_checkpoint_is_not_stored_twice(
    services: Services, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = submit(services)
    # The executor's repository is the composition root's own: its class is patched.
    write = JobRepository.fenced_update

    def die_before_the_checkpoint(
        repository: JobRepository, job: str, owner: str, changes: dict[str, Any]
    ) -> Any:
        if changes.get("checkpoint", {}).get("next_index") == checkpoint.CHUNK:
            raise Died
        return write(repository, job, owner, changes)

    monkeypatch.setattr(JobRepository, "fenced_update", die_before_the_checkpoint)
    with pytest.raises(Died):
        services.executor.execute(job_id)
    row = services.jobs.record(job_id)
    assert row is not None
    assert row["status"] == "running"
    assert row["checkpoint"] == {}
    assert len(drawers_of(store, job_id)) == checkpoint.CHUNK

    monkeypatch.setattr(JobRepository, "fenced_update", write)
    row = recover_and_run(services, job_id)
    assert (row["status"], row["attempt"]) == ("completed", 2)
    assert row["result"] == {"items": ITEMS, "duplicates": 0}
    assert len(drawers_of(store, job_id)) == ITEMS


def test_a_name_taken_while_the_last_chunk_is_filed_fails_that_item(
    services: Services, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    item = {"destination": "project", "wing": "w", "tags": []}
    job = services.jobs.submit(
        RequestContext.build(requested_by="http"),
        {
            "type": "checkpoint",
            "payload": {
                "items": [{**item, "content": "our plan", "name": "plan"}, {**item, "content": "x"}]
            },
        },
    )
    prepare = services.filing.prepare_batch

    def another_request_meanwhile(ctx: RequestContext, entries: list) -> Any:
        monkeypatch.setattr(services.filing, "prepare_batch", prepare)
        batch = prepare(ctx, entries)
        services.filing.file(ctx, "w", "entries", Filing(content="their plan", name="plan"))
        return batch

    monkeypatch.setattr(services.filing, "prepare_batch", another_request_meanwhile)
    services.executor.execute(job["id"])

    row = services.jobs.record(job["id"])
    assert row is not None
    assert row["status"] == "completed"
    assert row["result"]["items"] == 2
    assert row["result"]["duplicates"] == 0
    assert [failure["index"] for failure in row["result"]["failed"]] == [0]
    assert len(drawers_of(store, job["id"])) == 1
