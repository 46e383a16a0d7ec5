"""The daemon's HTTP API as the end-to-end tests check it: the body every refusal carries, jobs
submitted and waited for, and the drawers and rooms they read back.

Every helper asserts the status it expects, so a test that reads an answer has already checked
that there was one; every wait polls with a deadline and says how the job was last seen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from tests.support.waits import wait_for

Job = dict[str, Any]
Drawer = dict[str, Any]
Json = dict[str, Any]

ERROR_KEYS = {"error", "code", "help"}
TERMINAL = ("completed", "failed", "cancelled")
# How long a job is waited for unless the caller says otherwise.
JOB_WAIT = 30.0


def assert_error(
    response: httpx.Response, status: int, code: str, *, explained: bool = True
) -> dict[str, Any]:
    """A refusal: the status, a body of exactly `error`, `code` and `help`, and the code.

    `explained` also requires the message and the help to be non-empty; the modules that never
    checked them pass False, so what each test asserts stays what it was.
    """
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == ERROR_KEYS, body
    assert body["code"] == code, body
    if explained:
        assert body["error"] and body["help"]
    return body


def submit(client: httpx.Client, body: dict[str, Any], **headers: str) -> Job:
    """`POST /api/jobs`, which must queue the job (201)."""
    response = client.post("/api/jobs", json=body, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()


def get_job(client: httpx.Client, job_id: str) -> Job:
    response = client.get(f"/api/jobs/{job_id}")
    assert response.status_code == 200, response.text
    return response.json()


def watch(
    client: httpx.Client,
    job_id: str,
    condition: Callable[[Job], bool],
    what: str,
    *,
    timeout: float = JOB_WAIT,
    interval: float = 0.02,
) -> Job:
    """Poll the job until `condition` holds. A big batch is polled less often (`interval`):
    every read of it serializes its whole payload in the daemon that runs it."""
    seen: list[Job] = []

    def check() -> Job | None:
        job = get_job(client, job_id)
        seen[:] = [job]
        return job if condition(job) else None

    try:
        return wait_for(check, timeout=timeout, what=what, interval=interval)
    except TimeoutError as exc:
        raise AssertionError(f"{exc}; the job was last seen as {seen}") from None


def wait_job(
    client: httpx.Client,
    job_id: str,
    status: str = "completed",
    *,
    timeout: float = JOB_WAIT,
    interval: float = 0.02,
) -> Job:
    """Wait for the job to end, or to be `status`; it must be `status`."""
    job = watch(
        client,
        job_id,
        lambda job: job["status"] in TERMINAL or job["status"] == status,
        f"job {job_id} to be {status}",
        timeout=timeout,
        interval=interval,
    )
    assert job["status"] == status, job
    return job


def total(client: httpx.Client, kind: str) -> int:
    """How many jobs of `kind` the daemon lists."""
    response = client.get("/api/jobs", params={"kind": kind, "limit": 1})
    assert response.status_code == 200, response.text
    return response.json()["total"]


def drawer(client: httpx.Client, drawer_id: str) -> Drawer:
    response = client.get(f"/api/drawers/{drawer_id}")
    assert response.status_code == 200, response.text
    return response.json()


def without_created(answer: Drawer) -> Drawer:
    """A write's answer without its `created` flag: what a read of the drawer shows."""
    return {key: value for key, value in answer.items() if key != "created"}


def room_count(client: httpx.Client, wing: str, room: str) -> int:
    """The room's drawer count, as the room says it."""
    response = client.get(f"/api/wings/{wing}/rooms/{room}")
    assert response.status_code == 200, response.text
    return response.json()["counts"]["drawers"]


def room_drawers(client: httpx.Client, wing: str, room: str = "files") -> list[Drawer]:
    """Every drawer listed in a room, current or not, page by page (`files` is where a mine
    files)."""
    listed: list[Drawer] = []
    while True:
        response = client.get(
            f"/api/wings/{wing}/rooms/{room}/drawers",
            params={"limit": 200, "offset": len(listed)},
        )
        assert response.status_code == 200, response.text
        page = response.json()
        listed.extend(page["drawers"])
        if not page["drawers"] or len(listed) >= page["total"]:
            assert len(listed) == page["total"]
            return listed
