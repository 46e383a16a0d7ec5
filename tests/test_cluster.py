"""Two daemons and two `memcastle worker`s on one remote palace see each other.

Jobs submitted to either daemon run on any process, a worker killed with `kill -9` in the middle
of a job costs nothing, every process's events reach both daemons' streams (in the same order
for each job), and both daemons answer a search with the same hits.
"""

from __future__ import annotations

import collections
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.daemon import Daemon
from tests.support.events import EventStream, Frame
from tests.support.redis_server import redis_server
from tests.support.surreal_server import remote_surreal
from tests.support.waits import wait_for
from tests.support.workers import Worker, write_config

pytestmark = pytest.mark.slow

JOBS = 200
ITEMS = 5
# Every fifth job is a demo job of a second, so that the worker to be killed is in the middle of
# one most of the time; the others are checkpoints of `ITEMS` items each.
DEMO_EVERY = 5
DEMO_STEPS = 10
WING = "cluster"
ROOM = "entries"  # where a checkpoint files a project item of a named wing
FINISH_TIMEOUT = 240.0


def item_word(job: int, item: int) -> str:
    """A word only one item holds, so a search for it has exactly one right answer."""
    return f"cluster{job}item{item}"


def is_demo(job: int) -> bool:
    return job % DEMO_EVERY == DEMO_EVERY - 1


def submit(client: httpx.Client, job: int) -> str:
    if is_demo(job):
        answer = client.post(
            "/api/jobs", json={"type": "demo", "steps": DEMO_STEPS, "step_ms": 100}
        )
        assert answer.status_code == 201, answer.text
        demo_id: str = answer.json()["id"]
        return demo_id
    items = [
        {"destination": "project", "wing": WING, "content": f"note {item_word(job, n)}", "tags": []}
        for n in range(ITEMS)
    ]
    answer = client.post("/api/jobs", json={"type": "checkpoint", "payload": {"items": items}})
    assert answer.status_code == 201, answer.text
    job_id: str = answer.json()["id"]
    return job_id


def job_events(stream: EventStream, job_id: str) -> list[tuple[str, str]]:
    frames = stream.frames("job", id=job_id)
    return [(frame.data["action"], frame.data["status"]) for frame in frames]


def read_until_finished(stream: EventStream, job_ids: set[str]) -> None:
    """Read the stream until every job's `completed` is in it."""
    waiting = set(job_ids) - {
        frame.data["id"] for frame in stream.frames("job", status="completed")
    }

    def finished(item: Any) -> bool:
        if isinstance(item, Frame) and item.event == "resync":
            raise AssertionError("the stream lost events (resync)")
        if isinstance(item, Frame) and item.data.get("status") == "completed":
            waiting.discard(item.data["id"])
        return not waiting

    if not waiting:
        return
    stream.wait(finished, what=f"{len(waiting)} jobs to complete", timeout=FINISH_TIMEOUT)


def early_demo_on(client: httpx.Client, worker: Worker) -> str | None:
    """A demo job the worker holds that is in its first half, so that a kill now lands in the
    middle of it."""
    answer = client.get("/api/jobs", params={"status": "running", "kind": "demo", "limit": 200})
    assert answer.status_code == 200, answer.text
    prefix = f"memcastle-{worker.pid}-"
    for job in answer.json()["jobs"]:
        held = (job.get("lease_owner") or "").startswith(prefix)
        if held and job["progress"]["current"] < DEMO_STEPS // 2:
            found: str = job["id"]
            return found
    return None


def filed_contents(client: httpx.Client) -> list[str]:
    """What the room holds, paged through its listing to the end by its `total`, as a client
    does. Its counts are counted on a remote palace, not read from the aggregate views, which
    the engine keeps a little low under several writers (docs/benchmarks.md, "Crash safety")."""
    contents: list[str] = []
    offset = 0
    while True:
        answer = client.get(
            f"/api/wings/{WING}/rooms/{ROOM}/drawers", params={"limit": 200, "offset": offset}
        )
        assert answer.status_code == 200, answer.text
        page = answer.json()
        contents += [drawer["preview"] for drawer in page["drawers"]]
        offset += page["limit"]
        if offset >= page["total"]:
            return contents


def hits(client: httpx.Client, word: str) -> list[tuple[str, str]]:
    answer = client.get("/api/search", params={"q": word, "ranking": "lexical", "limit": 5})
    assert answer.status_code == 200, answer.text
    return [(hit["id"], hit["content"]) for hit in answer.json()["results"]]


def test_two_daemons_and_two_workers_share_jobs_events_and_search(
    tmp_path: Path, processes: list[Any]
) -> None:
    with (
        remote_surreal(tmp_path / "surreal") as server,
        redis_server(tmp_path / "redis") as broker,
    ):
        config = write_config(tmp_path / "config", server.url, broker)
        env = {"MEMCASTLE_CONFIG": str(config)}
        daemons = [Daemon(tmp_path / name, env=env) for name in ("a", "b")]
        for daemon in daemons:
            (daemon.root).mkdir()
            processes.append(daemon)
            daemon.start()
        workers = [Worker(tmp_path / f"worker-{n}", config) for n in range(2)]
        for worker in workers:
            processes.append(worker)
            worker.start()
        streams = [EventStream(daemon) for daemon in daemons]
        clients = [daemon.client() for daemon in daemons]
        try:
            for stream in streams:
                stream.wait(lambda item: isinstance(item, Frame), what="the stream to open")
            job_ids = [submit(clients[n % 2], n) for n in range(JOBS)]
            streams[0].wait(
                lambda item: len(streams[0].frames("job", status="completed")) >= JOBS // 4,
                what="a quarter of the jobs to complete",
                timeout=FINISH_TIMEOUT,
            )
            victim = workers[0]
            killed_during = wait_for(
                lambda: early_demo_on(clients[0], victim), timeout=60, what="a job on the worker"
            )
            assert victim.process is not None
            victim.process.send_signal(signal.SIGKILL)
            victim.process.wait(timeout=15)

            for stream in streams:
                read_until_finished(stream, set(job_ids))

            # Every job finished once, every item filed once.
            for job_id in job_ids:
                first, second = (job_events(stream, job_id) for stream in streams)
                assert first == second, (job_id, first, second)
                assert first.count(("updated", "completed")) == 1, (job_id, first)
            taken_over = clients[1].get(f"/api/jobs/{killed_during}").json()
            assert taken_over["status"] == "completed"
            assert taken_over["recovery_attempts"] == 1, taken_over
            contents = filed_contents(clients[0])
            expected = [
                f"note {item_word(j, n)}"
                for j in range(JOBS)
                if not is_demo(j)
                for n in range(ITEMS)
            ]
            assert sorted(contents) == sorted(expected)

            # Every drawer either process filed was announced on both streams.
            created = [
                {frame.data["id"] for frame in stream.frames("drawer", action="created")}
                for stream in streams
            ]
            assert created[0] == created[1]
            assert len(created[0]) == len(expected)

            # Both daemons' indexes answer with the same drawer.
            for job, item in ((0, 0), (JOBS // 2, 3), (JOBS - 2, ITEMS - 1)):
                word = item_word(job, item)
                wait_for(
                    lambda word=word: (
                        len(hits(clients[0], word)) == 1
                        and hits(clients[0], word) == hits(clients[1], word)
                    ),
                    timeout=10,
                    what=f"both daemons to find {word}",
                )
            counts = collections.Counter(
                frame.data["kind"] for frame in streams[0].frames() if frame.event != "open"
            )
            assert counts["job"] >= 3 * JOBS, counts
        finally:
            for client in clients:
                client.close()
            for stream in streams:
                stream.close()
        for daemon in daemons:
            assert daemon.stop() == 0, daemon.log()
        assert workers[1].process is not None
        workers[1].process.send_signal(signal.SIGTERM)
        assert workers[1].process.wait(timeout=60) == 0, workers[1].log()
