"""How much mixed traffic one daemon holds: concurrent clients of reads and writes, then every
acknowledged write read back.

Run from the repository root: `.venv/bin/python bench/load.py` (`--levels 1,5,25,50`,
`--seconds 60`, `--size 10000`, `--auth`). It measures and reports; it is not a test, so it
exits 0 whatever the figures are.

The palace is the search benchmark's (`bench/search.py`: developer memories in 20 wings of 5
rooms, an `external` embedding profile `bench` with a vector for every drawer), built through a
daemon the first time and cached. One daemon runs on a copy of it for every level; at each
level `N` client threads, one keep-alive connection each, send requests back to back for
`--seconds`, each picking, by a seeded draw:

- 70% reads: a search (`POST /api/search`, limit 10, in the query's wing or not) of each
  ranking, lexical, semantic (the query's vector given) and hybrid, 14% each; a drawer by id
  (14%); a page of 50 drawers of a room (14%);
- 30% writes: a drawer filed by `POST .../drawers` (15%), a checkpoint job of 5 items
  (`POST /api/jobs`, 10%), a supersede of a drawer this client filed (5%).

A request is an error when it fails or answers another status than its own success. After the
level, every write that was acknowledged is read back: each filed drawer by id, each
replacement and its `supersedes`, each checkpoint job waited for until it ends and its five
drawers found in the job's room. It prints requests a second, p50 and p99 per kind, errors and
writes lost.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from bench.chaos import ended  # noqa: E402
from bench.jobs import cpu_seconds, ok, quantile  # noqa: E402
from bench.mine import cpu_probe, print_machine  # noqa: E402
from bench.search import (  # noqa: E402
    CACHE_DIR,
    CONFIG,
    PROFILE,
    cached_palace,
    copy_palace,
    start_daemon,
)
from bench.search_corpus import Corpus, Projection, as_json  # noqa: E402
from bench.writes import stop  # noqa: E402
from tests.support.auth import AUTH_ENV, SECRET  # noqa: E402
from tests.support.daemon import Daemon  # noqa: E402
from tests.support.http import watch  # noqa: E402
from tests.support.waits import wait_for  # noqa: E402

KINDS = {
    "search lexical": 14,
    "search semantic": 14,
    "search hybrid": 14,
    "drawer by id": 14,
    "room page": 14,
    "file a drawer": 15,
    "checkpoint job": 10,
    "supersede": 5,
}
WRITES = ("file a drawer", "checkpoint job", "supersede")
QUERIES = 200
CHECKPOINT_ITEMS = 5


@dataclass
class Written:
    """What one client was told it wrote."""

    drawers: list[str] = field(default_factory=list)
    replaced: list[tuple[str, str]] = field(default_factory=list)  # (old id, replacement id)
    jobs: list[tuple[str, str, list[str]]] = field(default_factory=list)  # id, wing, contents


@dataclass
class Level:
    clients: int
    seconds: float = 0.0
    samples: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    written: list[Written] = field(default_factory=list)
    lost: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    daemon_cpu: float = 0.0

    @property
    def requests(self) -> int:
        return sum(len(s) for s in self.samples.values()) + sum(self.errors.values())


class Client:
    """One client thread's requests, with what it needs to make them."""

    def __init__(self, base_url: str, headers: dict[str, str], seed: int, context: Context) -> None:
        self.http = httpx.Client(base_url=base_url, headers=headers, timeout=120)
        self.rng = random.Random(seed)
        self.context = context
        self.written = Written()
        self.tag = f"load-{seed}"

    def request(self, kind: str) -> None:
        """One request of `kind`; raises on a failure or an unexpected status."""
        rng, context = self.rng, self.context
        if kind.startswith("search"):
            query, vector = rng.choice(context.queries)
            search_filter: dict[str, Any] = {"temporal": "current"}
            if rng.random() < 0.5:
                search_filter["wing"] = query.wing
            body = {
                "text": query.text,
                "ranking": kind.split()[1],
                "limit": 10,
                "filter": search_filter,
                "profile": PROFILE,
            }
            if kind != "search lexical":
                body["query_embedding"] = vector
            ok(self.http.post("/api/search", json=body), 200)
        elif kind == "drawer by id":
            ok(self.http.get(f"/api/drawers/{rng.choice(context.ids)}"), 200)
        elif kind == "room page":
            wing, room = rng.choice(context.rooms)
            path = f"/api/wings/{wing}/rooms/{room}/drawers"
            ok(self.http.get(path, params={"limit": 50}), 200)
        elif kind == "file a drawer":
            wing, room = rng.choice(context.rooms)
            answer = ok(
                self.http.post(
                    f"/api/wings/{wing}/rooms/{room}/drawers",
                    json={"content": f"{self.tag} note {uuid.uuid4()}: {context.text(rng)}"},
                ),
                201,
            )
            self.written.drawers.append(answer["id"])
        elif kind == "checkpoint job":
            wing = rng.choice(context.rooms)[0]
            items = [
                {
                    "destination": "project",
                    "wing": wing,
                    "content": f"{self.tag} item {uuid.uuid4()}",
                    "tags": [],
                }
                for _ in range(CHECKPOINT_ITEMS)
            ]
            body = {"type": "checkpoint", "payload": {"items": items}}
            job = ok(self.http.post("/api/jobs", json=body), 201)
            self.written.jobs.append((job["id"], wing, [i["content"] for i in items]))
        elif kind == "supersede":
            if not self.written.drawers:
                self.request("file a drawer")
                return
            old = self.written.drawers.pop(rng.randrange(len(self.written.drawers)))
            answer = ok(
                self.http.post(
                    f"/api/drawers/{old}/supersede",
                    json={"content": f"{self.tag} revised {uuid.uuid4()}"},
                ),
                200,
            )
            self.written.replaced.append((old, answer["replacement"]["id"]))

    def run(self, until: float, level: Level, lock: threading.Lock) -> None:
        kinds, weights = list(KINDS), list(KINDS.values())
        samples: dict[str, list[float]] = defaultdict(list)
        errors: dict[str, int] = defaultdict(int)
        while time.monotonic() < until:
            kind = self.rng.choices(kinds, weights)[0]
            started = time.perf_counter()
            try:
                self.request(kind)
            except (httpx.HTTPError, RuntimeError) as exc:
                errors[kind] += 1
                if errors[kind] <= 3:
                    print(f"    error, {kind}: {exc}", flush=True)
                continue
            samples[kind].append((time.perf_counter() - started) * 1000)
        with lock:
            for kind, values in samples.items():
                level.samples[kind] += values
            for kind, count in errors.items():
                level.errors[kind] += count
            level.written.append(self.written)


@dataclass
class Context:
    """What the clients choose from: drawer ids, rooms, queries with their vectors, words."""

    ids: list[str]
    rooms: list[tuple[str, str]]
    queries: list[tuple[Any, list[float]]]
    words: list[str]

    def text(self, rng: random.Random) -> str:
        return " ".join(rng.choices(self.words, k=rng.randint(20, 60)))


def run_level(
    base_url: str, headers: dict[str, str], clients: int, seconds: float, context: Context
) -> Level:
    level = Level(clients)
    lock = threading.Lock()
    workers = [Client(base_url, headers, 1000 * clients + n, context) for n in range(clients)]
    until = time.monotonic() + seconds
    started = time.perf_counter()
    threads = [
        threading.Thread(target=w.run, args=(until, level, lock), daemon=True) for w in workers
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    level.seconds = time.perf_counter() - started
    for worker in workers:
        worker.http.close()
    return level


def read_back(base_url: str, headers: dict[str, str], level: Level) -> None:
    """Every acknowledged write, found again; what is missing counts as lost."""
    with httpx.Client(base_url=base_url, headers=headers, timeout=120) as http:
        for written in level.written:
            for drawer in written.drawers:
                if http.get(f"/api/drawers/{drawer}").status_code != 200:
                    level.lost["filed drawers"] += 1
            for old, new in written.replaced:
                replacement = http.get(f"/api/drawers/{new}")
                if replacement.status_code != 200 or old not in str(
                    replacement.json().get("supersedes")
                ):
                    level.lost["supersedes"] += 1
            for job_id, wing, contents in written.jobs:
                job = watch(http, job_id, ended, f"job {job_id} to end", timeout=600)
                if job["status"] != "completed":
                    level.lost["checkpoint jobs"] += 1
                    continue
                for content in contents:
                    found = http.post(
                        "/api/search",
                        json={
                            "text": content,
                            "ranking": "lexical",
                            "limit": 1,
                            "filter": {"wing": wing},
                        },
                    ).json()["results"]
                    if not found or found[0]["content"] != content:
                        level.lost["checkpoint items"] += 1


def report(level: Level) -> None:
    rate = level.requests / level.seconds
    errors = sum(level.errors.values())
    lost = sum(level.lost.values())
    print(
        f"\n{level.clients} clients, {level.seconds:.0f} s: {level.requests:,} requests, "
        f"{rate:.1f} a second; errors {errors}; writes lost {lost} "
        f"{dict(level.lost) or ''}; daemon CPU {level.daemon_cpu:.1f} s",
        flush=True,
    )
    print(f"  {'kind':<18} {'count':>7} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}")
    for kind in KINDS:
        values = level.samples.get(kind, [])
        p50 = statistics.median(values) if values else float("nan")
        p99 = quantile(values, 99) if len(values) > 1 else p50
        print(
            f"  {kind:<18} {len(values):>7} {p50:>8.1f} {p99:>8.1f} {level.errors.get(kind, 0):>7}"
        )


def context_of(corpus: Corpus, projection: Projection, ids: list[str], seed: int) -> Context:
    queries = corpus.queries(QUERIES, seed)
    vectors = [as_json(v) for v in projection.vectors([q.text for q in queries])]
    rooms = sorted({(d.wing, d.room) for d in corpus.drawers})
    words = sorted({w for d in corpus.drawers[:500] for w in d.content.split() if w.isalpha()})
    return Context(ids, rooms, list(zip(queries, vectors, strict=True)), words)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", default="1,5,25,50", help="concurrent clients (1,5,25,50)")
    parser.add_argument("--seconds", type=float, default=60.0, help="each level's run (60)")
    parser.add_argument("--size", type=int, default=10_000, help="drawers in the palace (10000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--auth", action="store_true", help="run the daemon with auth on")
    parser.add_argument("--cache-dir", type=Path, default=CACHE_DIR)
    parser.add_argument("--rebuild", action="store_true", help="file the palace again")
    parser.add_argument("--clients", type=int, default=8, help="clients building the palace")
    args = parser.parse_args()
    levels = [int(n) for n in args.levels.split(",")]

    load_before, probe_before = os.getloadavg(), cpu_probe()
    corpus, projection = Corpus(args.size, args.seed), Projection(args.seed)
    built = cached_palace(corpus, projection, args)
    context = context_of(corpus, projection, built.ids, args.seed)
    root = Path(tempfile.mkdtemp(prefix="memcastle-bench-load-")) / "daemon"
    copy_palace(built, root)
    (root / "memcastle.toml").write_text(CONFIG)
    env = {"MEMCASTLE_CONFIG": str(root / "memcastle.toml"), **(AUTH_ENV if args.auth else {})}
    headers = {"Authorization": f"Bearer {SECRET}"} if args.auth else {}
    daemon = Daemon(root, env=env)
    try:
        start_daemon(daemon)
        wait_for(lambda: ready(daemon, headers), timeout=1800, what="the search indexes")
        assert daemon.process is not None
        print(f"\ndaemon on {daemon.base_url}, auth {'on' if args.auth else 'off'}", flush=True)
        for clients in levels:
            before = cpu_seconds(daemon.process.pid)
            level = run_level(daemon.base_url, headers, clients, args.seconds, context)
            level.daemon_cpu = cpu_seconds(daemon.process.pid) - before
            read_back(daemon.base_url, headers, level)
            report(level)
    finally:
        stop(daemon)
    print_machine(load_before, (probe_before, cpu_probe()))
    return 0


def ready(daemon: Daemon, headers: dict[str, str]) -> bool:
    status = httpx.get(f"{daemon.base_url}/api/status", headers=headers, timeout=60).json()
    return bool(status["search"]["state"] == "ready")


if __name__ == "__main__":
    sys.exit(main())
