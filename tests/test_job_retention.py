"""Finished jobs are kept for `jobs.retention_days`, then removed with their records: by the
service against the real engine, by `POST /api/jobs/prune` and `memcastle job prune` on a real
daemon, and by the daemon itself when it starts (jobs.md)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from jobs.repository import JobRepository
from jobs.services import JobService
from kernel.config import load_config
from kernel.context import RequestContext
from kernel.errors import InputInvalid, MemCastleError
from kernel.store import Store
from tests.support.cli import cli
from tests.support.daemon import Daemon
from tests.support.http import assert_error, submit, wait_job
from tests.support.waits import wait_for

NOW = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)


def job_row(number: int, status: str, ended_days_ago: int | None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": f"00000000-0000-4000-8000-{number:012d}",
        "kind": {"type": "demo"},
        "status": status,
        "priority": 50,
        "created_at": NOW - dt.timedelta(days=90),
        "updated_at": NOW,
        "progress": {"current": 0},
        "attempt": 1,
        "recovery_attempts": 0,
        "max_attempts": 3,
        "checkpoint": {},
        "pause_requested": False,
        "cancel_requested": False,
        "requested_by": "test",
    }
    if ended_days_ago is not None:
        row["completed_at"] = NOW - dt.timedelta(days=ended_days_ago)
    return row


@pytest.fixture
def jobs(store: Store) -> JobService:
    repository = JobRepository(store)
    for number, (status, ended) in enumerate(
        [
            ("completed", 40),
            ("failed", 31),
            ("cancelled", 45),
            ("completed", 29),
            ("queued", None),
            ("paused", None),
            ("running", None),
        ]
    ):
        repository.create(job_row(number, status, ended))
        repository.write_demo_step(f"step-{number}", job_row(number, status, ended)["id"], 1, 1)
    return JobService(repository, executor=None, clock=lambda: NOW, retention_days=30)  # type: ignore[arg-type]


def statuses(store: Store) -> list[str]:
    return sorted(store.one("SELECT VALUE status FROM job"))


def test_prune_removes_finished_jobs_older_than_the_retention_with_their_records(
    jobs: JobService, store: Store, ctx: RequestContext
) -> None:
    answer = jobs.prune(ctx)
    assert answer == {"removed": 3, "finished_before": NOW - dt.timedelta(days=30)}
    assert statuses(store) == ["completed", "paused", "queued", "running"]
    assert len(store.one("SELECT * FROM demo_step")) == 4
    assert jobs.counts()["completed"] == 1
    assert jobs.prune(ctx, {"older_than_days": 0})["removed"] == 1
    assert statuses(store) == ["paused", "queued", "running"]


@pytest.mark.parametrize("days", [-1, 36501, 6469693229, 1.5, "30", True, None])
def test_a_bad_age_is_refused_naming_the_field_and_nothing_is_removed(
    jobs: JobService, store: Store, ctx: RequestContext, days: object
) -> None:
    with pytest.raises(InputInvalid) as refused:
        jobs.prune(ctx, {"older_than_days": days})
    assert refused.value.field == "older_than_days"
    with pytest.raises(InputInvalid) as unknown:
        jobs.prune(ctx, {"older_than": 3})
    assert unknown.value.field == "older_than"
    assert len(statuses(store)) == 7


def test_pruning_is_a_write_refused_in_read_only_mode(jobs: JobService, store: Store) -> None:
    with pytest.raises(MemCastleError) as refused:
        jobs.prune(RequestContext.build(mode="read_only"))
    assert refused.value.code == "memcastle::mode::forbidden"
    assert len(statuses(store)) == 7


def test_the_route_and_the_command_remove_finished_jobs_and_keep_the_others(
    fresh_daemon: Daemon,
) -> None:
    fresh_daemon.start()
    with fresh_daemon.client() as client:
        done = [submit(client, {"type": "demo", "steps": 1, "step_ms": 1})["id"] for _ in range(3)]
        for job_id in done:
            wait_job(client, job_id)
        waiting = submit(client, {"type": "demo", "steps": 50, "step_ms": 100})["id"]
        assert client.post(f"/api/jobs/{waiting}/pause").status_code == 200
        wait_job(client, waiting, "paused")
        kept = client.post("/api/jobs/prune", json={})
        assert kept.status_code == 200, kept.text
        assert kept.json()["removed"] == 0, "none is older than 30 days"
        assert_error(
            client.post("/api/jobs/prune", json={"older_than_days": -1}),
            400,
            "memcastle::input::invalid",
        )
        assert_error(
            client.post("/api/jobs/prune", json={}, headers={"X-MemCastle-Mode": "read_only"}),
            403,
            "memcastle::mode::forbidden",
        )
        pruned = cli(fresh_daemon, "job", "prune", "--older-than", "0")
        assert pruned.returncode == 0, pruned.stderr
        assert json.loads(pruned.stdout)["removed"] == 3
        listed = client.get("/api/jobs").json()
        assert [job["id"] for job in listed["jobs"]] == [waiting]
        assert client.get(f"/api/jobs/{done[0]}").status_code == 404


def test_the_daemon_removes_jobs_past_the_retention_when_it_starts(tmp_path: Path) -> None:
    first = Daemon(tmp_path).start()
    with first.client() as client:
        old = wait_job(client, submit(client, {"type": "demo", "steps": 1, "step_ms": 1})["id"])
        recent = wait_job(client, submit(client, {"type": "demo", "steps": 1, "step_ms": 1})["id"])
    first.stop()
    store = Store.from_config(load_config(env={"MEMCASTLE_PALACE_PATH": str(first.palace)}))
    store.open()
    try:
        store.query(
            "UPDATE type::record('job', $id) SET completed_at = time::now() - 31d",
            {"id": old["id"]},
        )
    finally:
        store.close()
    second = Daemon(tmp_path).start()
    try:
        with second.client() as client:
            assert client.get(f"/api/jobs/{recent['id']}").status_code == 200
            wait_for(
                lambda: client.get(f"/api/jobs/{old['id']}").status_code == 404 or None,
                timeout=30,
                what="the old job to be removed",
            )
    finally:
        second.stop()
