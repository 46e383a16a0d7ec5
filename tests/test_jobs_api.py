"""The job routes over real HTTP against a real daemon: the demo job's life, job control, the
refused moves, listing, memory modes, crash recovery, the shutdown drain and max_concurrency.

Tests on the shared daemon work on their own jobs and leave none of them running (see `jobs`).
Every wait polls a condition with a deadline.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.support.daemon import Daemon
from tests.support.http import TERMINAL, Job, assert_error, get_job, submit, watch
from tests.support.instants import instant
from tests.support.waits import wait_for

INVALID = "memcastle::input::invalid"
TRANSITION_INVALID = "memcastle::jobs::transition_invalid"
ACTIONS = ("pause", "resume", "cancel", "force-cancel", "retry")
STATUSES = ("queued", "running", "paused", "completed", "failed", "cancelled")
JOB_KEYS = {
    "id",
    "kind",
    "status",
    "priority",
    "created_at",
    "updated_at",
    "started_at",
    "completed_at",
    "requested_by",
    "progress",
    "attempt",
    "recovery_attempts",
    "max_attempts",
    "checkpoint",
    "result",
    "error",
    "error_code",
    "lease_owner",
    "lease_expires_at",
    "pause_requested",
    "cancel_requested",
}
LEASE_CLEARED = {
    "lease_owner": None,
    "lease_expires_at": None,
    "pause_requested": False,
    "cancel_requested": False,
}
# A step this long never ends on its own during a test: only a control request stops the job.
FOREVER_MS = 60_000
WAIT = 15.0


class Jobs:
    """Demo jobs submitted through one client, with the waits the tests need."""

    def __init__(self, client: httpx.Client) -> None:
        self.client = client
        self.ids: list[str] = []

    def submit(self, **body: Any) -> Job:
        job = submit(self.client, {"type": "demo", **body})
        self.ids.append(job["id"])
        return job

    def get(self, job_id: str) -> Job:
        return get_job(self.client, job_id)

    def control(self, job_id: str, action: str, **headers: str) -> httpx.Response:
        return self.client.post(f"/api/jobs/{job_id}/{action}", headers=headers)

    def act(self, job_id: str, action: str, **headers: str) -> Job:
        response = self.control(job_id, action, **headers)
        assert response.status_code == 200, response.text
        return response.json()

    def wait(
        self, job_id: str, condition: Callable[[Job], bool], what: str, timeout: float = WAIT
    ) -> Job:
        return watch(self.client, job_id, condition, what, timeout=timeout)

    def wait_status(self, job_id: str, status: str, timeout: float = WAIT) -> Job:
        return self.wait(job_id, lambda job: job["status"] == status, f"job {status}", timeout)

    def wait_started(self, job_id: str, *, current: int = 0, timeout: float = WAIT) -> Job:
        """Running, with its handler past its first checkpoint save (or `current` steps)."""
        return self.wait(
            job_id,
            lambda job: (
                job["status"] == "running"
                and "total" in job["progress"]
                and job["progress"]["current"] >= current
            ),
            f"job running with progress >= {current}",
            timeout,
        )

    def stop_all(self) -> None:
        """Force-cancel this test's jobs that are not finished, so none keeps a worker busy."""
        for job_id in self.ids:
            if self.get(job_id)["status"] not in TERMINAL:
                self.control(job_id, "force-cancel")


def assert_refused(jobs: Jobs, job_id: str, action: str, *, volatile: tuple[str, ...] = ()) -> dict:
    """`action` is a 400 transition_invalid and leaves the job as it was (but `volatile`)."""
    before = jobs.get(job_id)
    body = assert_error(jobs.control(job_id, action), 400, TRANSITION_INVALID, explained=False)
    assert job_id in body["error"]
    after = jobs.get(job_id)
    for field in volatile:
        before.pop(field)
        after.pop(field)
    assert after == before, f"a refused {action} changed the job"
    return body


@pytest.fixture
def jobs(client: httpx.Client) -> Iterator[Jobs]:
    submitted = Jobs(client)
    yield submitted
    submitted.stop_all()


# A demo job's life.


def test_demo_job_runs_to_completion(jobs: Jobs) -> None:
    submitted = jobs.submit(steps=5, step_ms=150)
    assert set(submitted) == JOB_KEYS
    assert uuid.UUID(submitted["id"])
    assert submitted["kind"] == {"type": "demo", "steps": 5, "step_ms": 150}
    assert submitted["status"] == "queued"
    assert submitted["priority"] == 50
    assert submitted["requested_by"] == "http"
    assert submitted["progress"] == {"current": 0}
    assert (submitted["attempt"], submitted["recovery_attempts"]) == (0, 0)
    assert submitted["max_attempts"] == 3
    assert submitted["checkpoint"] == {}
    for field in ("started_at", "completed_at", "result", "error", "error_code"):
        assert submitted[field] is None, field
    assert {field: submitted[field] for field in LEASE_CLEARED} == LEASE_CLEARED
    assert submitted["created_at"] == submitted["updated_at"]
    instant(submitted["created_at"])

    running = jobs.wait_started(submitted["id"], current=2)
    assert running["attempt"] == 1
    assert running["lease_owner"]
    assert instant(running["lease_expires_at"]) > instant(running["started_at"])
    assert instant(running["started_at"]) >= instant(submitted["created_at"])
    assert running["progress"]["total"] == 5
    assert running["checkpoint"]["next_step"] == running["progress"]["current"]

    done = jobs.wait_status(submitted["id"], "completed")
    assert done["result"] == {
        "steps": 5,
        "written": 5,
        "runs": [{"attempt": 1, "from_step": 0}],
    }
    assert done["progress"] == {"current": 5, "total": 5, "message": "step 5 of 5"}
    assert done["checkpoint"] == {"next_step": 5, "runs": [{"attempt": 1, "from_step": 0}]}
    assert {field: done[field] for field in LEASE_CLEARED} == LEASE_CLEARED
    assert done["started_at"] == running["started_at"]
    assert instant(done["completed_at"]) >= instant(done["started_at"])
    assert (done["attempt"], done["recovery_attempts"]) == (1, 0)
    assert (done["error"], done["error_code"]) == (None, None)
    assert jobs.get(submitted["id"]) == done


def test_submission_defaults_and_requested_by(jobs: Jobs) -> None:
    defaulted = jobs.submit()
    assert defaulted["kind"] == {"type": "demo", "steps": 5, "step_ms": 500}
    jobs.act(defaulted["id"], "force-cancel")

    named = jobs.submit(steps=1, step_ms=0, requested_by="nightly-script")
    assert named["requested_by"] == "nightly-script"
    assert "requested_by" not in named["kind"]
    assert jobs.wait_status(named["id"], "completed")["requested_by"] == "nightly-script"

    failing = jobs.submit(steps=3, step_ms=0, fail_at_step=3)
    assert failing["kind"] == {"type": "demo", "steps": 3, "step_ms": 0, "fail_at_step": 3}
    jobs.wait_status(failing["id"], "failed")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "type"),
        ({"type": "nope"}, "type"),
        ({"type": 5}, "type"),
        ({"type": "demo", "bogus": 1}, "bogus"),
        ({"type": "demo", "path": "/tmp"}, "path"),
        ({"type": "demo", "steps": 0}, "steps"),
        ({"type": "demo", "steps": 100_001}, "steps"),
        ({"type": "demo", "steps": "5"}, "steps"),
        ({"type": "demo", "steps": 2.5}, "steps"),
        ({"type": "demo", "steps": True}, "steps"),
        ({"type": "demo", "step_ms": -1}, "step_ms"),
        ({"type": "demo", "step_ms": 600_001}, "step_ms"),
        ({"type": "demo", "steps": 3, "fail_at_step": 0}, "fail_at_step"),
        ({"type": "demo", "steps": 3, "fail_at_step": 4}, "fail_at_step"),
        ({"type": "demo", "fail_at_step": 6}, "fail_at_step"),
        ({"type": "demo", "requested_by": ""}, "requested_by"),
        ({"type": "demo", "requested_by": "x" * 65}, "requested_by"),
        (["demo"], "body"),
    ],
)
def test_submission_is_validated(client: httpx.Client, body: object, field: str) -> None:
    before = client.get("/api/jobs").json()["total"]
    answer = assert_error(client.post("/api/jobs", json=body), 400, INVALID, explained=False)
    assert answer["error"].startswith(f"`{field}`"), answer
    assert client.get("/api/jobs").json()["total"] == before, "a refused job was stored"


def test_submission_bounds_are_accepted(jobs: Jobs) -> None:
    largest = jobs.submit(steps=100_000, step_ms=600_000, fail_at_step=100_000)
    assert largest["kind"]["steps"] == 100_000
    jobs.act(largest["id"], "force-cancel")
    smallest = jobs.submit(steps=1, step_ms=0, fail_at_step=1)
    jobs.wait_status(smallest["id"], "failed")


def test_malformed_body_is_400(client: httpx.Client) -> None:
    malformed = client.post(
        "/api/jobs", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert "`body`" in assert_error(malformed, 400, INVALID, explained=False)["error"]


# Pause, resume, cancel, force-cancel, retry.


def test_pause_then_resume_continues_from_the_checkpoint(jobs: Jobs) -> None:
    job_id = jobs.submit(steps=25, step_ms=40)["id"]
    seen = jobs.wait_started(job_id, current=2)

    requested = jobs.act(job_id, "pause")
    assert requested["status"] == "running"
    assert requested["pause_requested"] is True
    assert requested["cancel_requested"] is False
    # A second pause is refused, whether the first is still pending or already honoured (the
    # handler wakes at once, so which one is not deterministic).
    assert_error(jobs.control(job_id, "pause"), 400, TRANSITION_INVALID, explained=False)

    paused = jobs.wait_status(job_id, "paused")
    step = paused["checkpoint"]["next_step"]
    assert seen["progress"]["current"] <= step < 25
    assert paused["checkpoint"] == {"next_step": step, "runs": [{"attempt": 1, "from_step": 0}]}
    assert paused["progress"]["current"] == step
    assert {field: paused[field] for field in LEASE_CLEARED} == LEASE_CLEARED
    assert paused["completed_at"] is None
    assert paused["result"] is None
    for action in ("pause", "retry"):
        assert_refused(jobs, job_id, action)

    resumed = jobs.act(job_id, "resume")
    assert resumed["status"] == "queued"
    assert resumed["checkpoint"] == paused["checkpoint"]
    # Queued or already running again, it cannot be resumed twice.
    assert_error(jobs.control(job_id, "resume"), 400, TRANSITION_INVALID, explained=False)

    done = jobs.wait_status(job_id, "completed")
    assert done["result"] == {
        "steps": 25,
        "written": 25,
        "runs": [{"attempt": 1, "from_step": 0}, {"attempt": 2, "from_step": step}],
    }
    assert (done["attempt"], done["recovery_attempts"]) == (2, 0)
    assert done["started_at"] == seen["started_at"]
    assert {field: done[field] for field in LEASE_CLEARED} == LEASE_CLEARED


def test_cancel_of_a_running_job_stops_it_at_the_next_step(jobs: Jobs) -> None:
    job_id = jobs.submit(steps=50, step_ms=40)["id"]
    seen = jobs.wait_started(job_id, current=1)

    requested = jobs.act(job_id, "cancel")
    assert requested["status"] == "running"
    assert requested["cancel_requested"] is True
    # A second cancel is refused whether the first is still pending or already honoured, and
    # so is a pause after a cancel.
    assert_error(jobs.control(job_id, "cancel"), 400, TRANSITION_INVALID, explained=False)
    assert_error(jobs.control(job_id, "pause"), 400, TRANSITION_INVALID, explained=False)

    cancelled = jobs.wait_status(job_id, "cancelled")
    assert {field: cancelled[field] for field in LEASE_CLEARED} == LEASE_CLEARED
    assert cancelled["completed_at"] is not None
    assert cancelled["result"] is None
    assert cancelled["error"] is None
    assert seen["progress"]["current"] <= cancelled["checkpoint"]["next_step"] < 50


def test_cancel_and_force_cancel_of_a_paused_job(jobs: Jobs) -> None:
    for action in ("cancel", "force-cancel"):
        job_id = jobs.submit(steps=3, step_ms=FOREVER_MS)["id"]
        jobs.wait_started(job_id)
        jobs.act(job_id, "pause")
        paused = jobs.wait_status(job_id, "paused")

        cancelled = jobs.act(job_id, action)
        assert cancelled["status"] == "cancelled", action
        assert cancelled["completed_at"] is not None
        assert cancelled["checkpoint"] == paused["checkpoint"]
        assert {field: cancelled[field] for field in LEASE_CLEARED} == LEASE_CLEARED
        assert jobs.get(job_id) == cancelled


def test_force_cancel_stops_a_running_job_at_once(jobs: Jobs, daemon: Daemon) -> None:
    job_id = jobs.submit(steps=3, step_ms=FOREVER_MS)["id"]
    running = jobs.wait_started(job_id)
    assert running["progress"]["current"] == 0

    began = time.monotonic()
    cancelled = jobs.act(job_id, "force-cancel")
    assert time.monotonic() - began < 2
    assert cancelled["status"] == "cancelled"
    assert {field: cancelled[field] for field in LEASE_CLEARED} == LEASE_CLEARED
    assert cancelled["completed_at"] is not None
    assert cancelled["checkpoint"] == {"next_step": 0, "runs": [{"attempt": 1, "from_step": 0}]}
    assert jobs.get(job_id) == cancelled
    # The handler notices, leaves the job alone and gives its worker back.
    wait_for(
        lambda: (
            f"job abandoned: it is no longer held by this worker (force-cancelled or taken "
            f"over) job_id={job_id}" in daemon.log()
        ),
        timeout=WAIT,
        what="the handler to abandon the force-cancelled job",
    )
    assert jobs.get(job_id) == cancelled
    assert_refused(jobs, job_id, "force-cancel")


def test_failed_job_retries_from_its_checkpoint(jobs: Jobs) -> None:
    job_id = jobs.submit(steps=4, step_ms=20, fail_at_step=2)["id"]
    failed = jobs.wait_status(job_id, "failed")
    assert failed["error"] == "demo step 2 failed, as asked by fail_at_step"
    assert failed["error_code"] == "memcastle::jobs::demo_failed"
    assert failed["result"] is None
    assert failed["completed_at"] is not None
    assert {field: failed[field] for field in LEASE_CLEARED} == LEASE_CLEARED
    assert failed["checkpoint"] == {
        "next_step": 1,
        "runs": [{"attempt": 1, "from_step": 0}],
        "failed_once": True,
    }
    assert failed["progress"]["current"] == 1
    assert failed["attempt"] == 1

    queued = jobs.act(job_id, "retry")
    assert queued["status"] == "queued"
    assert queued["error"] is None
    assert queued["completed_at"] is None
    assert queued["checkpoint"] == failed["checkpoint"]
    assert queued["recovery_attempts"] == 0

    done = jobs.wait_status(job_id, "completed")
    assert done["error"] is None
    assert done["result"] == {
        "steps": 4,
        "written": 4,
        "runs": [{"attempt": 1, "from_step": 0}, {"attempt": 2, "from_step": 1}],
    }
    assert done["attempt"] == 2
    assert done["started_at"] == failed["started_at"]
    assert_refused(jobs, job_id, "retry")


def test_retry_clears_the_error_code(jobs: Jobs) -> None:
    """A retried job carries neither the error nor its code, queued or completed."""
    job_id = jobs.submit(steps=2, step_ms=0, fail_at_step=1)["id"]
    assert jobs.wait_status(job_id, "failed")["error_code"] == "memcastle::jobs::demo_failed"
    queued = jobs.act(job_id, "retry")
    done = jobs.wait_status(job_id, "completed")
    assert (queued["error"], queued["error_code"]) == (None, None)
    assert (done["error"], done["error_code"]) == (None, None)


# Refused moves.


def test_terminal_states_refuse_every_move(jobs: Jobs) -> None:
    completed = jobs.submit(steps=1, step_ms=0)["id"]
    failed = jobs.submit(steps=1, step_ms=0, fail_at_step=1)["id"]
    cancelled = jobs.submit(steps=2, step_ms=FOREVER_MS)["id"]
    jobs.wait_started(cancelled)
    jobs.act(cancelled, "cancel")
    jobs.wait_status(completed, "completed")
    jobs.wait_status(failed, "failed")
    jobs.wait_status(cancelled, "cancelled")

    for job_id, status in ((completed, "completed"), (failed, "failed"), (cancelled, "cancelled")):
        for action in ACTIONS:
            if (status, action) == ("failed", "retry"):
                continue
            body = assert_refused(jobs, job_id, action)
            assert f"it is {status}" in body["error"], body


def test_wrong_moves_of_a_running_job_are_refused(jobs: Jobs) -> None:
    job_id = jobs.submit(steps=2, step_ms=FOREVER_MS)["id"]
    jobs.wait_started(job_id)
    for action in ("resume", "retry"):
        body = assert_refused(jobs, job_id, action, volatile=("lease_expires_at",))
        assert "it is running" in body["error"]
    assert jobs.get(job_id)["status"] == "running"


def test_unknown_and_invalid_job_ids(client: httpx.Client, jobs: Jobs) -> None:
    unknown = str(uuid.uuid4())
    assert_error(
        client.get(f"/api/jobs/{unknown}"), 404, "memcastle::jobs::not_found", explained=False
    )
    body = assert_error(
        client.get("/api/jobs/not-a-uuid"), 400, "memcastle::jobs::id_invalid", explained=False
    )
    assert "`id`" in body["error"]
    assert_error(client.get("/api/jobs/12345"), 400, "memcastle::jobs::id_invalid", explained=False)
    for action in ACTIONS:
        assert_error(
            jobs.control(unknown, action), 404, "memcastle::jobs::not_found", explained=False
        )
        assert_error(
            jobs.control("not-a-uuid", action), 400, "memcastle::jobs::id_invalid", explained=False
        )
    assert_error(
        jobs.control(unknown, "explode"), 404, "memcastle::http::not_found", explained=False
    )

    job_id = jobs.submit(steps=1, step_ms=0)["id"]
    done = jobs.wait_status(job_id, "completed")
    assert jobs.get(job_id.upper()) == done


# Listing.


@pytest.fixture(scope="module")
def listed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Jobs, dict[str, str]]]:
    """A daemon of its own holding four jobs, one in each state but running and queued."""
    running = Daemon(tmp_path_factory.mktemp("jobs-list")).start()
    try:
        with running.client() as opened:
            jobs = Jobs(opened)
            ids = {
                "completed": jobs.submit(steps=1, step_ms=0)["id"],
                "failed": jobs.submit(steps=1, step_ms=0, fail_at_step=1)["id"],
                "cancelled": jobs.submit(steps=2, step_ms=FOREVER_MS)["id"],
                "paused": jobs.submit(steps=2, step_ms=FOREVER_MS)["id"],
            }
            jobs.act(ids["cancelled"], "force-cancel")
            jobs.wait_started(ids["paused"])
            jobs.act(ids["paused"], "pause")
            for status, job_id in ids.items():
                jobs.wait_status(job_id, status)
            yield jobs, ids
    finally:
        running.kill()


def test_list_is_newest_first_with_total_and_paging(listed: tuple[Jobs, dict[str, str]]) -> None:
    jobs, ids = listed
    newest_first = [ids["paused"], ids["cancelled"], ids["failed"], ids["completed"]]

    page = jobs.client.get("/api/jobs").json()
    assert set(page) == {"jobs", "total", "limit", "offset"}
    assert (page["total"], page["limit"], page["offset"]) == (4, 50, 0)
    assert [job["id"] for job in page["jobs"]] == newest_first
    assert page["jobs"][0] == jobs.get(ids["paused"])
    assert all(set(job) == JOB_KEYS for job in page["jobs"])

    first = jobs.client.get("/api/jobs", params={"limit": 2}).json()
    assert [job["id"] for job in first["jobs"]] == newest_first[:2]
    assert (first["total"], first["limit"], first["offset"]) == (4, 2, 0)
    second = jobs.client.get("/api/jobs", params={"limit": 2, "offset": 2}).json()
    assert [job["id"] for job in second["jobs"]] == newest_first[2:]
    assert (second["total"], second["offset"]) == (4, 2)
    beyond = jobs.client.get("/api/jobs", params={"offset": 4}).json()
    assert (beyond["jobs"], beyond["total"]) == ([], 4)


def test_list_filters_by_status_and_kind(listed: tuple[Jobs, dict[str, str]]) -> None:
    jobs, ids = listed
    for status in STATUSES:
        page = jobs.client.get("/api/jobs", params={"status": status}).json()
        expected = [ids[status]] if status in ids else []
        assert [job["id"] for job in page["jobs"]] == expected, status
        assert page["total"] == len(expected)
    demos = jobs.client.get("/api/jobs", params={"kind": "demo"}).json()
    assert demos["total"] == 4
    both = jobs.client.get("/api/jobs", params={"kind": "demo", "status": "paused"}).json()
    assert [job["id"] for job in both["jobs"]] == [ids["paused"]]
    assert jobs.client.get("/api/jobs", params={"status": "", "kind": ""}).json()["total"] == 4

    counts = jobs.client.get("/api/status").json()["jobs"]
    assert counts == {
        "queued": 0,
        "running": 0,
        "paused": 1,
        "completed": 1,
        "failed": 1,
        "cancelled": 1,
    }


def test_list_parameters_are_validated(listed: tuple[Jobs, dict[str, str]]) -> None:
    jobs, _ = listed
    get = jobs.client.get
    assert get("/api/jobs", params={"limit": 0}).json()["limit"] == 50
    assert get("/api/jobs", params={"limit": 200}).json()["limit"] == 200
    # Every read limit is capped at 200 (api.md), like the drawer listings.
    assert get("/api/jobs", params={"limit": 201}).json()["limit"] == 200
    assert get("/api/jobs", params={"limit": 999}).json()["limit"] == 200
    for params, field in (
        ({"limit": -1}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"offset": -1}, "offset"),
        ({"offset": "x"}, "offset"),
        ({"status": "bogus"}, "status"),
        ({"status": "Completed"}, "status"),
        ({"kind": "bogus"}, "kind"),
    ):
        body = assert_error(get("/api/jobs", params=params), 400, INVALID, explained=False)
        assert body["error"].startswith(f"`{field}`"), body


# Memory modes.


def test_job_reads_are_mode_gated(client: httpx.Client, jobs: Jobs) -> None:
    job_id = jobs.submit(steps=1, step_ms=0)["id"]
    jobs.wait_status(job_id, "completed")
    for url in ("/api/jobs", f"/api/jobs/{job_id}"):
        denied = client.get(url, headers={"X-MemCastle-Mode": "disabled"})
        assert_error(denied, 403, "memcastle::mode::forbidden", explained=False)
        assert client.get(url, headers={"X-MemCastle-Mode": "read_only"}).status_code == 200
        assert client.get(url, headers={"X-MemCastle-Mode": "full"}).status_code == 200
        body = assert_error(
            client.get(url, headers={"X-MemCastle-Mode": "bogus"}), 400, INVALID, explained=False
        )
        assert "x-memcastle-mode" in body["error"].lower()


def test_demo_submission_is_never_mode_gated(client: httpx.Client, jobs: Jobs) -> None:
    for mode in ("disabled", "read_only"):
        response = client.post(
            "/api/jobs",
            json={"type": "demo", "steps": 1, "step_ms": 0},
            headers={"X-MemCastle-Mode": mode},
        )
        assert response.status_code == 201, response.text
        jobs.ids.append(response.json()["id"])
        jobs.wait_status(response.json()["id"], "completed")
    before = client.get("/api/jobs").json()["total"]
    refused = client.post(
        "/api/jobs", json={"type": "demo", "steps": 1}, headers={"X-MemCastle-Mode": "bogus"}
    )
    assert (
        "x-memcastle-mode" in assert_error(refused, 400, INVALID, explained=False)["error"].lower()
    )
    assert client.get("/api/jobs").json()["total"] == before


def test_job_control_ignores_the_mode_header(jobs: Jobs) -> None:
    job_id = jobs.submit(steps=3, step_ms=FOREVER_MS)["id"]
    jobs.wait_started(job_id)
    assert jobs.act(job_id, "pause", **{"X-MemCastle-Mode": "disabled"})["pause_requested"]
    jobs.wait_status(job_id, "paused")
    assert jobs.act(job_id, "resume", **{"X-MemCastle-Mode": "bogus"})["status"] == "queued"
    jobs.wait_started(job_id)
    assert jobs.act(job_id, "cancel", **{"X-MemCastle-Mode": "read_only"})["cancel_requested"]
    jobs.wait_status(job_id, "cancelled")

    forced = jobs.submit(steps=3, step_ms=FOREVER_MS)["id"]
    jobs.wait_started(forced)
    cancelled = jobs.act(forced, "force-cancel", **{"X-MemCastle-Mode": "disabled"})
    assert cancelled["status"] == "cancelled"

    failing = jobs.submit(steps=1, step_ms=0, fail_at_step=1)["id"]
    jobs.wait_status(failing, "failed")
    assert jobs.act(failing, "retry", **{"X-MemCastle-Mode": "disabled"})["status"] == "queued"
    jobs.wait_status(failing, "completed")

    refused = jobs.control(forced, "retry", **{"X-MemCastle-Mode": "bogus"})
    assert_error(refused, 400, TRANSITION_INVALID, explained=False)


def test_status_reports_job_counts(client: httpx.Client, jobs: Jobs) -> None:
    before = client.get("/api/status").json()["jobs"]
    assert set(before) == set(STATUSES)
    job_id = jobs.submit(steps=1, step_ms=0, fail_at_step=1)["id"]
    jobs.wait_status(job_id, "failed")
    after = client.get("/api/status", headers={"X-MemCastle-Mode": "disabled"}).json()
    assert after["mode"] == "disabled"
    assert after["jobs"]["failed"] == before["failed"] + 1


# Several jobs, crashes and restarts: daemons of the test's own.


def test_max_concurrency_runs_one_job_at_a_time(fresh_daemon: Daemon) -> None:
    fresh_daemon.env["MEMCASTLE_JOBS_MAX_CONCURRENCY"] = "1"
    fresh_daemon.start()
    with fresh_daemon.client() as client:
        jobs = Jobs(client)
        first = jobs.submit(steps=2, step_ms=FOREVER_MS)["id"]
        jobs.wait_started(first)
        waiting = jobs.submit(steps=2, step_ms=10)["id"]
        to_cancel = jobs.submit(steps=2, step_ms=10)["id"]
        to_force = jobs.submit(steps=2, step_ms=10)["id"]

        # Queued jobs refuse what only a running, paused or failed job allows ...
        for action in ("pause", "resume", "retry"):
            body = assert_refused(jobs, waiting, action)
            assert "it is queued" in body["error"]
        # ... and are cancelled at once, by either cancel.
        for job_id, action in ((to_cancel, "cancel"), (to_force, "force-cancel")):
            cancelled = jobs.act(job_id, action)
            assert cancelled["status"] == "cancelled", action
            assert cancelled["started_at"] is None
            assert cancelled["completed_at"] is not None
            assert cancelled["attempt"] == 0
            assert cancelled["checkpoint"] == {}

        assert jobs.get(waiting)["status"] == "queued"
        assert client.get("/api/status").json()["jobs"] == {
            "queued": 1,
            "running": 1,
            "paused": 0,
            "completed": 0,
            "failed": 0,
            "cancelled": 2,
        }
        running = client.get("/api/jobs", params={"status": "running"}).json()
        assert [job["id"] for job in running["jobs"]] == [first]

        ended = jobs.act(first, "force-cancel")
        done = jobs.wait_status(waiting, "completed")
        # The waiting job started only once the first had ended.
        assert instant(done["started_at"]) >= instant(ended["completed_at"])
        assert done["result"]["runs"] == [{"attempt": 1, "from_step": 0}]
        for job_id in (to_cancel, to_force):
            never_ran = jobs.get(job_id)
            assert (never_ran["status"], never_ran["attempt"]) == ("cancelled", 0)
            assert never_ran["started_at"] is None


def test_kill_9_recovers_the_running_job_from_its_checkpoint(fresh_daemon: Daemon) -> None:
    fresh_daemon.start()
    with fresh_daemon.client() as client:
        jobs = Jobs(client)
        held = jobs.submit(steps=3, step_ms=FOREVER_MS)["id"]
        jobs.wait_started(held)
        jobs.act(held, "pause")
        jobs.wait_status(held, "paused")
        job_id = jobs.submit(steps=20, step_ms=100)["id"]
        seen = jobs.wait_started(job_id, current=3)
    fresh_daemon.kill()

    log_before = len(fresh_daemon.log())
    fresh_daemon.start()
    with fresh_daemon.client() as client:
        jobs = Jobs(client)
        after = jobs.get(job_id)
        assert after["recovery_attempts"] == 1, after
        assert after["status"] in ("queued", "running", "completed")
        done = jobs.wait_status(job_id, "completed")
        first_run, second_run = done["result"]["runs"]
        assert first_run == {"attempt": 1, "from_step": 0}
        assert second_run["attempt"] == 2
        assert seen["progress"]["current"] <= second_run["from_step"] < 20
        assert done["result"]["steps"] == done["result"]["written"] == 20
        assert (done["attempt"], done["recovery_attempts"]) == (2, 1)
        assert done["error"] is None
        restarted_log = fresh_daemon.log()[log_before:]
        assert f"job recovered job_id={job_id} status=queued" in restarted_log

        # A paused job is not running: a crash leaves it paused and it is never auto-resumed.
        paused = jobs.get(held)
        assert paused["status"] == "paused"
        assert paused["recovery_attempts"] == 0
        assert paused["checkpoint"]["runs"] == [{"attempt": 1, "from_step": 0}]
        assert f"job_id={held}" not in restarted_log


def test_sigterm_drains_running_jobs_back_to_the_queue(fresh_daemon: Daemon) -> None:
    fresh_daemon.start()
    with fresh_daemon.client() as client:
        jobs = Jobs(client)
        interrupted = jobs.submit(steps=30, step_ms=50)["id"]
        user_paused = jobs.submit(steps=1000, step_ms=50)["id"]
        jobs.wait_started(user_paused, current=1)
        jobs.act(user_paused, "pause")
        paused = jobs.wait_status(user_paused, "paused")
        seen = jobs.wait_started(interrupted, current=2)

    began = time.monotonic()
    assert fresh_daemon.stop() == 0
    assert time.monotonic() - began < 5, "the drain waited for the job instead of interrupting it"
    first_log = fresh_daemon.log()
    assert f"job interrupted job_id={interrupted}" in first_log
    assert "jobs still running after the drain" not in first_log

    fresh_daemon.start()
    with fresh_daemon.client() as client:
        jobs = Jobs(client)
        after = jobs.get(interrupted)
        assert after["status"] in ("queued", "running", "completed"), after
        # An interrupt is not a crash: it spends none of the recovery budget.
        assert after["recovery_attempts"] == 0
        done = jobs.wait_status(interrupted, "completed")
        first_run, second_run = done["result"]["runs"]
        assert first_run == {"attempt": 1, "from_step": 0}
        assert second_run["attempt"] == 2
        assert 0 < seen["progress"]["current"] <= second_run["from_step"] < 30
        assert done["result"]["steps"] == done["result"]["written"] == 30
        assert (done["attempt"], done["recovery_attempts"]) == (2, 0)
        assert "job recovered" not in fresh_daemon.log()[len(first_log) :]

        # The user's pause outlives the restart; resuming continues from its checkpoint.
        still = jobs.get(user_paused)
        assert still["status"] == "paused"
        assert still["checkpoint"] == paused["checkpoint"]
        assert still["recovery_attempts"] == 0
        jobs.act(user_paused, "resume")
        resumed = jobs.wait(
            user_paused,
            lambda job: len(job["checkpoint"].get("runs", [])) == 2,
            "the resumed job to start its second run",
        )
        assert resumed["checkpoint"]["runs"][1] == {
            "attempt": 2,
            "from_step": paused["checkpoint"]["next_step"],
        }
        assert jobs.act(user_paused, "force-cancel")["status"] == "cancelled"
