"""What triggers cost: a watched change until its job starts, and webhook deliveries a second.

Run from the repository root: `.venv/bin/python bench/triggers.py` (`--changes 5 --deliveries
1000` for a quick run). It measures and reports; it exits 0 whatever the figures are. One daemon
(`manage.py serve`, embedding off) on a temporary palace and configuration file, stopped by its
pid, on error too.

1. **Watch.** A `watch` trigger with a `--debounce` (250 ms) on a directory of one note. Each of
   `--changes` (10) rounds writes a file and waits for the mine job it starts to finish; the
   figure is the time from the write to the job's `started_at` (one clock: both are this
   machine's). Target: under the debounce plus 100 ms.
2. **Webhook.** `--clients` (16) threads, each with its own keep-alive connection, send
   `--deliveries` (4,000) signed deliveries in all to a `webhook` trigger (HMAC-SHA-256 checked,
   a row written for each, the miner's job queued or joined). Deliveries accepted a second over
   the whole run, and each delivery's latency, twice: first while the daemon's one job slot
   (`jobs.max_concurrency = 1`) is held by a demo job, so every delivery joins one queued run
   (what the listener itself sustains), then with the slot free, so the miner's runs mine
   between the deliveries, back to back, in the same process. Target: 500 a second. The clients
   run on the same two cores as the daemon, so the figures are floors.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import hmac
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.daemon import Daemon  # noqa: E402
from tests.support.http import TERMINAL, watch  # noqa: E402
from tests.support.waits import wait_for  # noqa: E402

SECRET = "bench-webhook-secret"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def configure(root: Path, watched: Path, port: int) -> Path:
    path = root / "config" / "memcastle" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text(
        f"[webhook]\nenable = true\nport = {port}\nmax_concurrent = 64\n\n"
        f'[[miners]]\nname = "watched"\nsource = "directory"\nlocator = "{watched}"\n'
    )
    return path


def watch_round(client: httpx.Client, watched: Path, index: int) -> float:
    """Milliseconds from writing a file to the start of the job the watch queued."""
    before = client.get("/api/triggers/live").json()["state"]["fires"]
    written = dt.datetime.now(dt.UTC)
    (watched / f"change-{index}.md").write_text(f"# Change {index}\n\nWatched.\n")
    state = wait_for(
        lambda: (s := client.get("/api/triggers/live").json()["state"])["fires"] > before and s,
        timeout=30,
        what="the watch to fire",
    )
    job = watch(client, state["last_job"], lambda job: job["status"] in TERMINAL, "the job")
    started = dt.datetime.fromisoformat(job["started_at"])
    return (started - written).total_seconds() * 1000


def deliveries(port: int, total: int, clients: int) -> tuple[float, list[float], int]:
    """Deliveries accepted a second, each one's latency (ms) and how many were refused."""
    body = b'{"ref": "refs/heads/main"}'
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    headers = {"X-Hub-Signature-256": signature, "Content-Type": "application/json"}
    url = f"http://127.0.0.1:{port}/hooks/push"
    laps: list[float] = []
    refused = [0]
    lock = threading.Lock()

    def send(count: int) -> None:
        mine: list[float] = []
        failed = 0
        with httpx.Client() as client:
            for _ in range(count):
                started = time.perf_counter()
                response = client.post(url, content=body, headers=headers)
                mine.append((time.perf_counter() - started) * 1000)
                failed += response.status_code != 202
        with lock:
            laps.extend(mine)
            refused[0] += failed

    threads = [threading.Thread(target=send, args=(total // clients,)) for _ in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    return (len(laps) - refused[0]) / elapsed, laps, refused[0]


def percentile(laps: list[float], fraction: float) -> float:
    ordered = sorted(laps)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=10)
    parser.add_argument("--debounce", type=int, default=250, help="milliseconds")
    parser.add_argument("--deliveries", type=int, default=4000)
    parser.add_argument("--clients", type=int, default=16)
    options = parser.parse_args()

    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        watched = root / "watched"
        watched.mkdir()
        (watched / "first.md").write_text("# First\n\nA note.\n")
        port = free_port()
        configure(root, watched, port)
        daemon = Daemon(root, env={"HOOK_SECRET": SECRET, "MEMCASTLE_JOBS_MAX_CONCURRENCY": "1"})
        daemon.start()
        try:
            with daemon.client() as client:
                live = {
                    "name": "live",
                    "miner": "watched",
                    "type": "watch",
                    "settings": {"path": str(watched), "debounce": f"{options.debounce}ms"},
                    "enabled": True,
                }
                hook = {
                    "name": "push",
                    "miner": "watched",
                    "type": "webhook",
                    "credential": {"type": "env", "name": "HOOK_SECRET"},
                    "enabled": True,
                }
                for trigger in (live, hook):
                    response = client.post("/api/triggers", json=trigger)
                    assert response.status_code == 201, response.text
                wait_for(
                    lambda: client.get("/api/triggers/live").json()["state"]["watching"],
                    timeout=30,
                    what="the watch to be set up",
                )
                waits = [watch_round(client, watched, i) for i in range(options.changes)]
                hold = {"type": "demo", "steps": 1, "step_ms": 600_000}
                holder = client.post("/api/jobs", json=hold).json()["id"]
                held = deliveries(port, options.deliveries, options.clients)
                client.post(f"/api/jobs/{holder}/cancel")
                mining = deliveries(port, options.deliveries, options.clients)
        finally:
            daemon.stop()

    print(f"machine: {os.cpu_count()} cores; debounce {options.debounce} ms")
    print(
        f"watch: change to job start median {statistics.median(waits):.0f} ms, "
        f"max {max(waits):.0f} ms over {len(waits)} changes "
        f"(target under {options.debounce + 100} ms)"
    )
    for what, (rate, laps, refused) in (("run held", held), ("runs mining", mining)):
        print(
            f"webhook, {what}: {rate:.0f} deliveries/s accepted with signatures checked "
            f"({options.clients} clients, {len(laps)} sent, {refused} refused); latency median "
            f"{statistics.median(laps):.1f} ms, p90 {percentile(laps, 0.9):.1f} ms "
            "(target 500/s)"
        )


if __name__ == "__main__":
    main()
