"""What indexing turns in their context costs a checkpoint (issue 26 item 3: at most 20% more).

One daemon (embedded palace, no embedding profile) runs checkpoint jobs of `--items` items in
pairs: the same texts filed once as conversation turns (items of `--turns` at a time share a
`source.uri`, so the lexical index holds each with the turn before it, `palace.search.turns`)
and once without a `uri` (each drawer on its own), the order of the pair alternating from
round to round, so the machine's drift falls on both alike. For each job it measures, from the
client, the time from submission to the job's completion and to the lexical search finding the
job's last item (the indexes caught up). It prints the medians of both kinds and their ratio.

    .venv/bin/python bench/turns.py [--rounds 6 --items 500 --turns 25]

It measures and reports, and exits 0 whatever the figures; the daemon is stopped by its pid.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from tests.support.daemon import Daemon  # noqa: E402

WING = "bench"
POLL_SECS = 0.01
TIMEOUT_SECS = 300.0
WORDS = (
    "deploy", "staging", "postgres", "cache", "invoice", "retry", "webhook", "schema",
    "migration", "token", "index", "rollout", "latency", "budget", "review", "release", "branch",
    "fixture", "parser", "queue", "worker", "backup",
)  # fmt: skip


def items(count: int, turns: int | None, marker: str) -> list[dict[str, Any]]:
    """`count` short texts; with `turns`, each run of that many shares one conversation uri.
    The last item holds `marker`, a word no other drawer holds."""
    filed = []
    for i in range(count):
        words = " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(6))
        text = f"turn {i}: {words}?" if i % 3 == 0 else f"turn {i}: {words}"
        if i == count - 1:
            text += f" {marker}"
        item: dict[str, Any] = {"destination": "project", "wing": WING, "content": text, "tags": []}
        if turns is not None:
            item["source"] = {"kind": "file", "uri": f"chat://{marker}/{i // turns}"}
        filed.append(item)
    return filed


def wait_until(check: Any) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < TIMEOUT_SECS:
        if check():
            return time.perf_counter()
        time.sleep(POLL_SECS)
    raise TimeoutError("the daemon did not get there in time")


def timed_job(client: httpx.Client, count: int, turns: int | None) -> tuple[float, float]:
    """Seconds from submission to completion, and to the last item being searchable."""
    marker = "m" + uuid.uuid4().hex[:12]
    body = {"type": "checkpoint", "payload": {"items": items(count, turns, marker)}}
    started = time.perf_counter()
    job = client.post("/api/jobs", json=body)
    job.raise_for_status()
    job_id = job.json()["id"]

    def completed() -> bool:
        status = client.get(f"/api/jobs/{job_id}").json()["status"]
        if status in ("failed", "cancelled"):
            raise RuntimeError(f"job {job_id} {status}")
        return bool(status == "completed")

    def found() -> bool:
        answer = client.get("/api/search", params={"q": marker, "ranking": "lexical"})
        return bool(answer.status_code == 200 and answer.json()["results"])

    done = wait_until(completed)
    searchable = wait_until(found)
    return done - started, searchable - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6, help="pairs of jobs (6)")
    parser.add_argument("--items", type=int, default=500, help="items of a job (500)")
    parser.add_argument("--turns", type=int, default=25, help="turns of a conversation (25)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memcastle-turns-") as scratch:
        daemon = Daemon(Path(scratch), env={"MEMCASTLE_EMBEDDINGS_DEFAULT_PROFILE": ""}).start()
        try:
            with daemon.client() as client:
                timed_job(client, args.items, args.turns)  # warm up: the wing, the rooms
                times: dict[str, list[tuple[float, float]]] = {"turns": [], "alone": []}
                for round_ in range(args.rounds):
                    kinds = ["turns", "alone"] if round_ % 2 == 0 else ["alone", "turns"]
                    for kind in kinds:
                        turns = args.turns if kind == "turns" else None
                        times[kind].append(timed_job(client, args.items, turns))
        finally:
            daemon.stop()
    print(f"checkpoint jobs of {args.items} items, {args.rounds} of each kind, medians:")
    medians = {}
    for kind, runs in times.items():
        medians[kind] = [statistics.median(run[i] for run in runs) for i in (0, 1)]
        done, searchable = medians[kind]
        print(f"  {kind:<6} completed {done:6.2f} s   searchable {searchable:6.2f} s")
    for i, what in enumerate(("completed", "searchable")):
        ratio = medians["turns"][i] / medians["alone"][i]
        print(f"  turns / alone, {what}: {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
