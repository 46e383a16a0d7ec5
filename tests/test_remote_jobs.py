"""Jobs on a remote palace: a daemon and a `memcastle worker` share one queue through Redis.

The SurrealDB server is `tests.remote_surreal`, Redis a `redis-server` of the test's own; both are
stopped by their pid at the end.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import tomlkit

from tests.daemon import REPO, Daemon, wait_for
from tests.redis_server import redis_server
from tests.test_remote_store import remote_surreal

LEASE_TTL_SECS = 3
JOB_TIMEOUT = 60.0


def write_config(root: Path, store_url: str, broker_url: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "memcastle.toml"
    path.write_text(
        tomlkit.dumps(
            {
                "store": {"mode": "remote", "url": store_url},
                "jobs": {
                    "broker_url": broker_url,
                    "max_concurrency": 1,
                    "lease_ttl_secs": LEASE_TTL_SECS,
                },
            }
        )
    )
    return path


class Worker:
    """`memcastle worker` in a subprocess, with the environment of a daemon's set-up."""

    def __init__(self, root: Path, config: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.setup = Daemon(root, env={"MEMCASTLE_CONFIG": str(config)})
        self.log_path = root / "worker.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Worker:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.setup.command("worker"),
                env=self.setup.env,
                cwd=REPO,
                stdout=log,
                stderr=log,
            )
        wait_for(self._ready, timeout=30, what="the worker to be ready")
        return self

    def _ready(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"the worker exited with {self.process.returncode}:\n{self.log()}")
        return "worker ready" in self.log()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid


@pytest.fixture
def processes() -> Iterator[list[Any]]:
    """Daemons and workers a test starts; any still running at teardown are killed."""
    started: list[Any] = []
    yield started
    for item in started:
        process = item.process
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(timeout=15)


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


def test_a_worker_shares_the_queue_and_its_jobs_outlive_it(
    tmp_path: Path, processes: list[Any]
) -> None:
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

        with daemon.client() as client:
            # One job at a time each: the second job can only run on the other process.
            first = submit_demo(client, steps=40, step_ms=100)
            wait_status(client, first, "running")
            second = submit_demo(client, steps=40, step_ms=100)
            wait_status(client, second, "running")
            owners = {job(client, first)["lease_owner"], job(client, second)["lease_owner"]}
            on_worker = [o for o in owners if o.startswith(f"memcastle-{worker.pid}-")]
            assert len(owners) == 2 and len(on_worker) == 1, owners
            orphan = first if job(client, first)["lease_owner"] in on_worker else second
            other = second if orphan == first else first
            progress_at_kill = job(client, orphan)["checkpoint"]["next_step"]

            worker.process.kill()  # type: ignore[union-attr]
            worker.process.wait(timeout=15)  # type: ignore[union-attr]
            # Free the daemon's only slot; the dead worker's job waits for its lease to expire.
            assert client.post(f"/api/jobs/{other}/force-cancel").status_code == 200

            done = wait_status(client, orphan, "completed")
            assert done["recovery_attempts"] == 1
            assert done["result"]["written"] == 40
            second_run = done["result"]["runs"][-1]
            assert second_run["from_step"] >= progress_at_kill
            assert done["lease_owner"] is None

        assert daemon.stop() == 0, daemon.log()


def test_a_worker_refuses_an_embedded_palace(tmp_path: Path) -> None:
    result = Daemon(tmp_path).run("worker", timeout=60)
    assert result.returncode == 1
    assert "memcastle::config::invalid" in result.stderr
    assert "store.mode" in result.stderr
