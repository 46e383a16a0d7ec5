"""Jobs on a remote palace: a daemon and a `memcastle worker` share one queue through Redis.

The SurrealDB server is `tests.support.remote_surreal`, Redis a `redis-server` of the test's own;
both are stopped by their pid at the end.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.daemon import Daemon
from tests.support.redis_server import redis_server
from tests.support.surreal_server import remote_surreal
from tests.support.waits import wait_for
from tests.support.workers import Worker, write_config

JOB_TIMEOUT = 60.0


def submit_demo(client: httpx.Client, **params: int) -> str:
    answer = client.post("/api/jobs", json={"type": "demo", **params})
    assert answer.status_code == 201, answer.text
    job_id: str = answer.json()["id"]
    return job_id


def job(client: httpx.Client, job_id: str) -> dict[str, Any]:
    answer = client.get(f"/api/jobs/{job_id}")
    assert answer.status_code == 200, answer.text
    record: dict[str, Any] = answer.json()
    return record


def wait_status(client: httpx.Client, job_id: str, status: str) -> dict[str, Any]:
    return wait_for(
        lambda: (record := job(client, job_id))["status"] == status and record,
        timeout=JOB_TIMEOUT,
        what=f"job {job_id} to be {status}",
    )


@pytest.fixture
def cluster(tmp_path: Path, processes: list[Any]) -> Iterator[tuple[Daemon, Worker]]:
    """A daemon and a worker on one remote palace and one Redis, one job at a time each."""
    with (
        remote_surreal(tmp_path / "surreal") as server,
        redis_server(tmp_path / "redis") as broker,
    ):
        config = write_config(tmp_path / "config", server.url, broker)
        (tmp_path / "daemon").mkdir()
        daemon = Daemon(tmp_path / "daemon", env={"MEMCASTLE_CONFIG": str(config)})
        processes.append(daemon)
        daemon.start()
        worker = Worker(tmp_path / "worker", config)
        processes.append(worker)
        worker.start()
        yield daemon, worker
        assert daemon.stop() == 0, daemon.log()


def one_job_each(client: httpx.Client, worker: Worker) -> tuple[str, str]:
    """Two long demo jobs, one running on the worker and one on the daemon: (worker's, daemon's).

    Each process runs one job at a time and holds no message beyond it, so the second job can
    only go to the process that is still idle.
    """
    first = submit_demo(client, steps=100, step_ms=50)
    wait_status(client, first, "running")
    second = submit_demo(client, steps=100, step_ms=50)
    wait_status(client, second, "running")
    on_worker = [
        job_id
        for job_id in (first, second)
        if job(client, job_id)["lease_owner"].startswith(f"memcastle-{worker.pid}-")
    ]
    assert len(on_worker) == 1, [job(client, j)["lease_owner"] for j in (first, second)]
    return on_worker[0], (second if on_worker[0] == first else first)


def test_a_dead_workers_job_is_taken_over_when_its_lease_expires(
    cluster: tuple[Daemon, Worker],
) -> None:
    daemon, worker = cluster
    with daemon.client() as client:
        orphan, the_daemons = one_job_each(client, worker)
        wait_for(
            lambda: job(client, orphan)["progress"]["current"] >= 2,
            timeout=JOB_TIMEOUT,
            what="the worker's job to make progress",
        )
        progress_at_kill = job(client, orphan)["checkpoint"]["next_step"]

        worker.process.kill()  # type: ignore[union-attr]
        worker.process.wait(timeout=15)  # type: ignore[union-attr]
        # Free the daemon's only slot; the dead worker's job waits for its lease to expire.
        assert client.post(f"/api/jobs/{the_daemons}/force-cancel").status_code == 200

        done = wait_status(client, orphan, "completed")
        assert done["recovery_attempts"] == 1
        assert done["result"]["written"] == 100
        assert done["result"]["runs"][-1]["from_step"] >= progress_at_kill
        assert done["lease_owner"] is None


def test_a_stopping_worker_hands_its_job_back_to_the_queue(
    cluster: tuple[Daemon, Worker],
) -> None:
    daemon, worker = cluster
    with daemon.client() as client:
        handed_back, the_daemons = one_job_each(client, worker)
        wait_for(
            lambda: job(client, handed_back)["progress"]["current"] >= 2,
            timeout=JOB_TIMEOUT,
            what="the worker's job to make progress",
        )
        worker.process.send_signal(signal.SIGTERM)  # type: ignore[union-attr]
        assert worker.process.wait(timeout=30) == 0, worker.log()  # type: ignore[union-attr]
        assert "drain" in worker.log()
        # The drain interrupted it: back in the queue, no crash counted, checkpoint kept.
        back = job(client, handed_back)
        assert back["status"] == "queued", back
        assert back["recovery_attempts"] == 0
        assert back["checkpoint"]["next_step"] >= 2

        assert client.post(f"/api/jobs/{the_daemons}/force-cancel").status_code == 200
        done = wait_status(client, handed_back, "completed")
        assert done["recovery_attempts"] == 0
        assert [run["from_step"] > 0 for run in done["result"]["runs"]] == [False, True]


def test_a_worker_refuses_an_embedded_palace(tmp_path: Path) -> None:
    result = Daemon(tmp_path).run("worker", timeout=60)
    assert result.returncode == 1
    assert "memcastle::config::invalid" in result.stderr
    assert "store.mode" in result.stderr
