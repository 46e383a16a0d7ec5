"""How fast durable jobs start, run and are announced, through a real daemon.

Run from the repository root: `.venv/bin/python bench/jobs.py`; `--jobs 200 --samples 30` gives
a quick run. For each worker concurrency asked for (`--concurrency 4 1`: the default 4, then 1),
it starts a daemon (`manage.py serve` in a subprocess, embedded palace, `store.sync = every`
unless `--sync` says otherwise, Celery worker in the daemon on the in-process `memory://`
transport) on a new palace, and:

1. submits one-step demo jobs (`{"type": "demo", "steps": 1, "step_ms": 0}`) one at a time and
   times submit-to-start two ways: on the server, `started_at - created_at` of the job record
   (both from the daemon's clock), and in the client, from sending the POST to receiving the
   job's `running` frame on `GET /api/events`;
2. measures event delivery from the same jobs (a frame's arrival in the client, minus the time
   the daemon wrote into the record: same host, same clock), and for `POST /api/wings`, from
   the response to the `wing created` frame;
3. submits a burst of `--jobs` demo jobs over one keep-alive client, with no event stream open,
   and waits for all of them to complete: submit rate, jobs/s end to end, and the time from the
   last submit to the last completion. A burst that stops finishing (no job ends for
   `--stall-secs`) is reported with the statuses its jobs were left in.

It measures and reports; it is not a test, so it exits 0 whatever the figures are. The daemon is
stopped by its pid at the end, on error too.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import http.client
import importlib.metadata
import json
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from bench.hierarchy import machine  # noqa: E402
from tests.support.daemon import Daemon  # noqa: E402

DEMO_JOB = {"type": "demo", "steps": 1, "step_ms": 0}
START_TARGET_MS = 50.0
FRAME_TIMEOUT = 30.0
POLL_SECS = 0.5
READ_REPEAT = 5
PAGE = 200
TERMINAL = ("completed", "failed", "cancelled")


def parse_time(value: str) -> float:
    """A record's ISO 8601 UTC time as seconds since the epoch (the host clock)."""
    return dt.datetime.fromisoformat(value).timestamp()


# The event stream


@dataclass(frozen=True)
class Frame:
    event: str
    data: dict[str, Any]
    wall: float  # time.time() at arrival, comparable with the records' times
    mono: float  # time.perf_counter() at arrival, comparable with the client's own timings


class EventListener:
    """`GET /api/events` read on a thread of its own, noting when each frame arrives.

    Plain `http.client`, so that `close` can shut the socket down from another thread. The first
    frame of each (kind, id, status or action) is kept: for a job, its `running` frame is the
    claim, the later progress frames of the same status are ignored.
    """

    def __init__(self, base_url: str) -> None:
        parts = urlsplit(base_url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.frames = 0
        self.resyncs = 0
        self._first: dict[tuple[str, str, str], Frame] = {}
        self._changed = threading.Condition()
        self._opened = threading.Event()
        self._sock: socket.socket | None = None
        self._thread = threading.Thread(target=self._read, name="bench-events", daemon=True)
        self.error: BaseException | None = None

    def start(self) -> EventListener:
        self._thread.start()
        if not self._opened.wait(FRAME_TIMEOUT):
            raise RuntimeError(f"no open frame on /api/events: {self.error!r}")
        return self

    def _read(self) -> None:
        try:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=None)
            conn.request("GET", "/api/events", headers={"Accept": "text/event-stream"})
            self._sock = conn.sock
            response = conn.getresponse()
            if response.status != 200:
                raise RuntimeError(f"/api/events answered {response.status}")
            event, data = "message", ""
            while True:
                line = response.readline()
                if not line:
                    return
                text = line.decode().rstrip("\r\n")
                if text.startswith("event:"):
                    event = text[6:].strip()
                elif text.startswith("data:"):
                    data += text[5:].strip()
                elif not text and data:
                    self._arrived(Frame(event, json.loads(data), time.time(), time.perf_counter()))
                    event, data = "message", ""
        except OSError:
            return  # closed by `close`, or the daemon stopped
        except BaseException as exc:
            self.error = exc
        finally:
            with self._changed:
                self._changed.notify_all()

    def _arrived(self, frame: Frame) -> None:
        if frame.event == "open":
            self._opened.set()
            return
        if frame.event == "resync":
            self.resyncs += 1
        if "id" not in frame.data:
            return
        if frame.event == "job":
            key = ("job", frame.data["id"], frame.data["status"])
        else:
            key = (frame.event, frame.data["id"], frame.data["action"])
        with self._changed:
            self.frames += 1
            self._first.setdefault(key, frame)
            self._changed.notify_all()

    def wait(self, kind: str, ident: str, state: str, timeout: float = FRAME_TIMEOUT) -> Frame:
        """The first frame of `kind` about `ident` with that status (jobs) or action."""
        key = (kind, ident, state)
        deadline = time.monotonic() + timeout
        with self._changed:
            while key not in self._first:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._thread.is_alive():
                    raise TimeoutError(f"no {kind} {state} frame for {ident} ({self.error!r})")
                self._changed.wait(remaining)
            return self._first[key]

    def close(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(5)


# Measuring


def ok(response: httpx.Response, *expected: int) -> dict[str, Any]:
    if response.status_code not in (expected or (200,)):
        raise RuntimeError(
            f"{response.request.method} {response.request.url.path} answered "
            f"{response.status_code}: {response.text}"
        )
    return response.json()


def quantile(samples: Sequence[float], percent: int) -> float:
    if len(samples) < 2:
        return samples[0] if samples else float("nan")
    return statistics.quantiles(samples, n=100, method="inclusive")[percent - 1]


@dataclass
class Series:
    label: str
    samples: list[float] = field(default_factory=list)

    def row(self) -> str:
        s = self.samples
        return (
            f"  {self.label:<58} {statistics.median(s):8.2f} {quantile(s, 90):8.2f} "
            f"{min(s):8.2f} {max(s):8.2f}"
        )


@dataclass
class Latency:
    """Phase 1 and the job half of phase 3, from the same jobs run one at a time."""

    server_start: Series = field(default_factory=lambda: Series("submit-to-start, server"))
    client_start: Series = field(default_factory=lambda: Series("submit-to-start, client"))
    post: Series = field(default_factory=lambda: Series("POST /api/jobs round trip"))
    run: Series = field(default_factory=lambda: Series("run: completed_at - started_at"))
    queued_frame: Series = field(default_factory=lambda: Series("queued frame - created_at"))
    running_frame: Series = field(default_factory=lambda: Series("running frame - started_at"))
    completed_frame: Series = field(
        default_factory=lambda: Series("completed frame - completed_at")
    )
    wing_after_response: Series = field(
        default_factory=lambda: Series("wing created frame - POST response received")
    )
    wing_after_send: Series = field(
        default_factory=lambda: Series("wing created frame - POST sent")
    )
    wing_after_created_at: Series = field(
        default_factory=lambda: Series("wing created frame - created_at")
    )

    def start_rows(self) -> list[Series]:
        return [self.server_start, self.client_start, self.post, self.run]

    def event_rows(self) -> list[Series]:
        return [
            self.queued_frame,
            self.running_frame,
            self.completed_frame,
            self.wing_after_created_at,
            self.wing_after_send,
            self.wing_after_response,
        ]


def one_job(client: httpx.Client, events: EventListener, latency: Latency | None) -> None:
    """Submit a job, wait for its running and completed frames, then read its record."""
    sent = time.perf_counter()
    job = ok(client.post("/api/jobs", json=DEMO_JOB), 201)
    answered = time.perf_counter()
    running = events.wait("job", job["id"], "running")
    completed = events.wait("job", job["id"], "completed")
    queued = events.wait("job", job["id"], "queued")
    if latency is None:
        return
    record = ok(client.get(f"/api/jobs/{job['id']}"))
    created_at = parse_time(record["created_at"])
    started_at = parse_time(record["started_at"])
    completed_at = parse_time(record["completed_at"])
    latency.server_start.samples.append((started_at - created_at) * 1000)
    latency.client_start.samples.append((running.mono - sent) * 1000)
    latency.post.samples.append((answered - sent) * 1000)
    latency.run.samples.append((completed_at - started_at) * 1000)
    latency.queued_frame.samples.append((queued.wall - created_at) * 1000)
    latency.running_frame.samples.append((running.wall - started_at) * 1000)
    latency.completed_frame.samples.append((completed.wall - completed_at) * 1000)


def one_wing(client: httpx.Client, events: EventListener, index: int, latency: Latency) -> None:
    sent = time.perf_counter()
    wing = ok(client.post("/api/wings", json={"name": f"bench-{index:04d}"}), 201)
    answered = time.perf_counter()
    frame = events.wait("wing", wing["id"], "created")
    latency.wing_after_send.samples.append((frame.mono - sent) * 1000)
    latency.wing_after_response.samples.append((frame.mono - answered) * 1000)
    latency.wing_after_created_at.samples.append(
        (frame.wall - parse_time(wing["created_at"])) * 1000
    )


def measure_latency(base_url: str, args: argparse.Namespace) -> tuple[Latency, EventListener]:
    """One keep-alive client, one job at a time, with the event stream open."""
    latency = Latency()
    events = EventListener(base_url).start()
    try:
        with httpx.Client(base_url=base_url, timeout=60) as client:
            for _ in range(args.warmup):
                one_job(client, events, None)
            for _ in range(args.samples):
                one_job(client, events, latency)
            for index in range(args.samples + args.warmup):
                one_wing(client, events, index, latency if index >= args.warmup else Latency())
    finally:
        events.close()
    return latency, events


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time a process has used so far."""
    fields_ = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields_[11]) + int(fields_[12])) / os.sysconf("SC_CLK_TCK")


def resident_gib(pid: int | str = "self", field: str = "VmRSS") -> float:
    """A process's resident memory now (or at its peak, `VmHWM`), from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 2**20
    return float("nan")


@dataclass
class Burst:
    jobs: int
    submit_secs: float
    done_secs: float | None  # first send to the last completion, None if it stalled
    last_submit_to_done_secs: float | None
    finished: dict[str, int]  # terminal status counts of this burst
    waits_ms: list[float]  # started_at - created_at
    runs_ms: list[float]  # completed_at - started_at
    daemon_cpu_secs: float
    client_cpu_secs: float
    stuck: dict[str, int]
    backlog: int  # jobs of the burst not yet completed at the last submit
    status_ms: float  # GET /api/status once the burst is done (it counts jobs per status)
    count_ms: float  # GET /api/jobs?status=completed&limit=1
    jobs_in_palace: int

    @property
    def submit_rate(self) -> float:
        return self.jobs / self.submit_secs

    @property
    def throughput(self) -> float | None:
        return self.jobs / self.done_secs if self.done_secs else None


def job_counts(client: httpx.Client) -> dict[str, int]:
    return ok(client.get("/api/status"))["jobs"]


def burst_records(client: httpx.Client, ids: set[str]) -> list[dict[str, Any]]:
    """The records of the burst's jobs, read newest first a page at a time."""
    found: list[dict[str, Any]] = []
    offset = 0
    while len(found) < len(ids):
        page = ok(client.get("/api/jobs", params={"limit": PAGE, "offset": offset}))
        found.extend(job for job in page["jobs"] if job["id"] in ids)
        offset += PAGE
        if offset >= page["total"]:
            break
    return found


def submit(base_url: str, jobs: int, submitters: int) -> set[str]:
    """POST `jobs` demo jobs, sequentially from each of `submitters` keep-alive clients."""

    def work(count: int) -> list[str]:
        with httpx.Client(base_url=base_url, timeout=60) as client:
            return [ok(client.post("/api/jobs", json=DEMO_JOB), 201)["id"] for _ in range(count)]

    shares = [jobs // submitters + (k < jobs % submitters) for k in range(submitters)]
    with ThreadPoolExecutor(max_workers=submitters) as pool:
        return {job_id for part in pool.map(work, shares) for job_id in part}


def measure_burst(daemon: Daemon, args: argparse.Namespace) -> Burst:
    """Submit `--jobs` jobs back to back (from `--submitters` clients), then wait until every
    one of them has finished."""
    assert daemon.process is not None
    pid = daemon.process.pid
    with httpx.Client(base_url=daemon.base_url, timeout=60) as client:
        before = job_counts(client)
        done_before = sum(before[s] for s in TERMINAL)
        cpu_before, client_cpu_before = cpu_seconds(pid), time.process_time()
        first_sent_wall = time.time()
        start = time.perf_counter()
        ids = submit(daemon.base_url, args.jobs, args.submitters)
        submit_secs = time.perf_counter() - start
        last_sent_wall = time.time()
        print(f"    {args.jobs:,} submitted in {submit_secs:.1f} s; waiting for them", flush=True)
        progress, last_change, stalled = done_before, time.monotonic(), False
        while True:
            counts = job_counts(client)
            done = sum(counts[s] for s in TERMINAL)
            if done - done_before >= args.jobs:
                break
            if done != progress:
                progress, last_change = done, time.monotonic()
            elif time.monotonic() - last_change > args.stall_secs:
                stalled = True
                print(f"    no job finished for {args.stall_secs:g} s: {counts}", flush=True)
                break
            time.sleep(POLL_SECS)
        daemon_cpu = cpu_seconds(pid) - cpu_before
        client_cpu = time.process_time() - client_cpu_before
        records = burst_records(client, ids)
        jobs_in_palace = sum(job_counts(client).values())
        status_ms = median_ms(lambda: job_counts(client))
        count_ms = median_ms(
            lambda: ok(client.get("/api/jobs", params={"status": "completed", "limit": 1}))
        )
    finished: dict[str, int] = {}
    for job in records:
        finished[job["status"]] = finished.get(job["status"], 0) + 1
    stuck = {s: n for s, n in finished.items() if s not in TERMINAL}
    ends = [parse_time(job["completed_at"]) for job in records if job["completed_at"]]
    last_end = max(ends) if ends and not stalled else None
    return Burst(
        jobs=args.jobs,
        submit_secs=submit_secs,
        done_secs=last_end - first_sent_wall if last_end else None,
        last_submit_to_done_secs=last_end - last_sent_wall if last_end else None,
        finished={s: n for s, n in finished.items() if s in TERMINAL},
        waits_ms=[
            (parse_time(job["started_at"]) - parse_time(job["created_at"])) * 1000
            for job in records
            if job["started_at"]
        ],
        runs_ms=[
            (parse_time(job["completed_at"]) - parse_time(job["started_at"])) * 1000
            for job in records
            if job["started_at"] and job["completed_at"]
        ],
        daemon_cpu_secs=daemon_cpu,
        client_cpu_secs=client_cpu,
        stuck=stuck,
        backlog=sum(1 for end in ends if end > last_sent_wall) + sum(stuck.values()),
        status_ms=status_ms,
        count_ms=count_ms,
        jobs_in_palace=jobs_in_palace,
    )


def median_ms(action: Callable[[], object]) -> float:
    samples = []
    for _ in range(READ_REPEAT):
        start = time.perf_counter()
        action()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


# Reporting


@dataclass
class Result:
    concurrency: int
    latency: Latency
    events: EventListener
    burst: Burst
    log_problems: list[str]


def log_problems(log: str) -> list[str]:
    return [
        line
        for line in log.splitlines()
        if " ERROR " in line or " WARNING " in line or line.startswith("Traceback")
    ]


def report_one(result: Result, args: argparse.Namespace) -> None:
    latency, burst = result.latency, result.burst
    print(f"\nWorker concurrency {result.concurrency}")
    head = f"  {'':<58} {'median':>8} {'p90':>8} {'min':>8} {'max':>8}"
    print(f"  Jobs one at a time: {args.samples} after {args.warmup} untimed (ms)")
    print(head)
    for series in latency.start_rows():
        print(series.row())
    server = statistics.median(latency.server_start.samples)
    client = statistics.median(latency.client_start.samples)
    met = "met" if max(server, client) < START_TARGET_MS else "MISSED"
    print(
        f"  target: submit-to-start median < {START_TARGET_MS:g} ms: {met} "
        f"(server {server:.1f} ms, client {client:.1f} ms)"
    )
    print(
        f"  Event delivery, frame arrival in the client minus the write (ms, {args.samples} each)"
    )
    print(head)
    for series in latency.event_rows():
        print(series.row())
    print(f"  ({result.events.frames:,} frames read, {result.events.resyncs} resyncs)")

    print(f"  Burst of {burst.jobs:,} one-step demo jobs, no event stream open")
    how = (
        "sequential POSTs, one keep-alive client"
        if args.submitters == 1
        else f"{args.submitters} keep-alive clients in parallel"
    )
    print(f"    submitted in {burst.submit_secs:.2f} s: {burst.submit_rate:,.0f} jobs/s ({how})")
    if burst.throughput is not None and burst.last_submit_to_done_secs is not None:
        print(
            f"    all finished {burst.done_secs:.2f} s after the first submit: "
            f"{burst.throughput:,.0f} jobs/s end to end; last submit to last completion "
            f"{burst.last_submit_to_done_secs:.2f} s"
        )
        drain = (
            f", drained at {burst.backlog / burst.last_submit_to_done_secs:,.0f} jobs/s"
            if burst.backlog and burst.last_submit_to_done_secs > 0
            else ""
        )
        print(f"    left to finish at the last submit: {burst.backlog:,} jobs{drain}")
    else:
        print(f"    DID NOT FINISH: {burst.stuck} of the burst left unfinished")
    print(f"    finished: {burst.finished}")
    if burst.waits_ms:
        print(
            "    queue wait (started_at - created_at): median "
            f"{statistics.median(burst.waits_ms):,.0f} ms, "
            f"p90 {quantile(burst.waits_ms, 90):,.0f} ms, max {max(burst.waits_ms):,.0f} ms"
        )
    if burst.runs_ms:
        print(
            "    run (completed_at - started_at): median "
            f"{statistics.median(burst.runs_ms):.1f} ms, p90 {quantile(burst.runs_ms, 90):.1f} ms"
        )
    print(
        f"    CPU: daemon {burst.daemon_cpu_secs:.1f} s "
        f"({burst.daemon_cpu_secs / burst.jobs * 1000:.1f} ms a job), "
        f"this client {burst.client_cpu_secs:.1f} s"
    )
    print(
        f"    afterwards, with {burst.jobs_in_palace:,} jobs in the palace: GET /api/status "
        f"{burst.status_ms:.1f} ms, GET /api/jobs?status=completed&limit=1 {burst.count_ms:.1f} ms"
        f" (medians of {READ_REPEAT})"
    )
    if result.log_problems:
        print(f"  daemon log: {len(result.log_problems)} warnings or errors, the first:")
        for line in result.log_problems[:5]:
            print(f"    {line[:200]}")
    else:
        print("  daemon log: no warnings or errors")


def report(results: Sequence[Result], args: argparse.Namespace) -> None:
    print("\nMachine")
    for key, value in machine():
        print(f"  {key:<17} {value}")
    print(f"  {'Celery':<17} {importlib.metadata.version('celery')}")
    print(
        f"  palace            embedded surrealkv, store.sync={args.sync}; "
        "Celery on the memory:// transport"
    )
    print("  load at the end   " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    for result in results:
        report_one(result, args)


def run_one(concurrency: int, root: Path, args: argparse.Namespace) -> Result:
    env = {"MEMCASTLE_JOBS_MAX_CONCURRENCY": str(concurrency), "MEMCASTLE_STORE_SYNC": args.sync}
    daemon = Daemon(root, env=env)
    print(f"concurrency {concurrency}: starting the daemon on a new palace in {root}", flush=True)
    try:
        daemon.start()
        print(f"  {args.samples} jobs and wings one at a time", flush=True)
        latency, events = measure_latency(daemon.base_url, args)
        print(f"  burst of {args.jobs:,} jobs", flush=True)
        burst = measure_burst(daemon, args)
    finally:
        stop(daemon)
    return Result(concurrency, latency, events, burst, log_problems(daemon.log()))


def stop(daemon: Daemon) -> None:
    """SIGTERM by pid and wait; SIGKILL if the drain does not end (or the start failed)."""
    if daemon.process is None:
        return
    try:
        daemon.stop()
    except Exception:
        if daemon.process is not None and daemon.process.poll() is None:
            daemon.kill()


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=100, help="timed one-at-a-time jobs (100)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed jobs first (10)")
    parser.add_argument("--jobs", type=int, default=1000, help="jobs in the burst (1000)")
    parser.add_argument(
        "--concurrency",
        type=int,
        nargs="+",
        default=[4, 1],
        help="worker concurrency of each daemon run, MEMCASTLE_JOBS_MAX_CONCURRENCY (4 1)",
    )
    parser.add_argument(
        "--stall-secs",
        type=float,
        default=30.0,
        help="give up on the burst when no job finishes for this long (30)",
    )
    parser.add_argument(
        "--submitters",
        type=int,
        default=1,
        help="keep-alive clients submitting the burst in parallel threads (1)",
    )
    parser.add_argument(
        "--sync",
        default="every",
        help="store.sync of the embedded palace, MEMCASTLE_STORE_SYNC: every, never or an "
        "interval such as 500ms (every)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the palaces and daemon logs")
    args = parser.parse_args(argv)
    if args.samples < 2 or args.warmup < 0 or args.jobs < 1:
        parser.error("--samples must be at least 2, --jobs positive")
    if min(args.concurrency) < 1 or args.submitters < 1:
        parser.error("--concurrency and --submitters must be positive")
    return args


def run(base: Path, args: argparse.Namespace) -> None:
    results = []
    for concurrency in args.concurrency:
        root = base / f"concurrency-{concurrency}"
        root.mkdir()
        results.append(run_one(concurrency, root, args))
    report(results, args)


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    if args.keep:
        base = Path(tempfile.mkdtemp(prefix="memcastle-bench-jobs-"))
        run(base, args)
        print(f"\nkept {base}")
        return 0
    with tempfile.TemporaryDirectory(prefix="memcastle-bench-jobs-") as name:
        run(Path(name), args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
