"""How fast checkpoint jobs file memories, on a palace of realistic size.

Run from the repository root: `.venv/bin/python bench/writes.py`; `--drawers 5000` gives a quick
run. It measures and reports; it is not a test, so it exits 0 whatever the figures are.

1. **Palace.** `--drawers` drawers (100,000) of short generated texts over 10 wings of 4 rooms
   (2,500 a room), written straight into an embedded palace in batched INSERTs with the fields the
   service writes (the content and what it derives from it: digests, deduplication keys). The
   indexes are built as rows are inserted; a full-text index on drawers, where the schema has
   one, is checked. The built palace is cached under the temporary directory, keyed by a version
   string, the schema, the derived fields and the size, so later runs only copy it.
2. **Through a daemon.** For deduplication on (the default) and off
   (`MEMCASTLE_DEDUP_ENABLED=false`), a daemon (`manage.py serve` in a subprocess, Celery in the
   daemon, `store.sync = every` unless `--sync` says otherwise) is started on a fresh copy of
   the palace, and checkpoint jobs
   (`POST /api/jobs {"type": "checkpoint", "payload": {"items": [...]}}`) are submitted one at a
   time: `--small-jobs` jobs of `--small-items` items (20 of 10), then `--large-jobs` of
   `--large-items` (2 of 1,000). Items go to the `entries` and `diary` rooms, which already hold
   thousands of drawers; 10% are exact copies of a drawer of their room, 5% copies differing
   only in case and punctuation, 10% copies with one typo, the rest new. Items per second come
   from the job record (`completed_at - started_at`, the daemon's clock) and end to end (POST
   sent to `completed_at`, same host, same clock); the job's `completed` frame on
   `GET /api/events` says when to read the record. Jobs spread their items over the 20 rooms,
   so every chunk of a job resolves many places. Then, for sustained throughput,
   `--small-jobs` more small jobs are submitted back to back by one client (every POST, then
   the wait; the records are read once the last job has ended), and `--drain-jobs` (200) are
   queued in this process while no daemon runs and run by a daemon started on them: work waiting
   in the queue, with no submissions competing. Both are timed from the first `started_at` to
   the last `completed_at`.
3. **Where the time goes.** With no daemon running, the same jobs are run in this process on a
   fresh copy of the palace: submitted with `JobService` and run by `Executor.execute` on this
   thread (the handler, the service and the saves the daemon runs), with every store call timed
   by the repository method that made it, split into the engine's own time and the SDK's CBOR
   decoding, and `dedup.judge` timed apart; the store calls are counted too, each one round trip
   to the engine (an exact count, where times vary with the machine's load).

Daemons are stopped by their pid, on error too.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import itertools
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
# Jobs run in this process too, and the apps register their job kinds as Django starts.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memcastle_project.settings")

import django  # noqa: E402

django.setup()

import httpx  # noqa: E402

from bench.hierarchy import directory_size, machine  # noqa: E402
from bench.jobs import EventListener, cpu_seconds, ok, parse_time, quantile  # noqa: E402
from kernel.clock import off_whole_second, utc_now  # noqa: E402
from kernel.config import load_config  # noqa: E402
from kernel.context import RequestContext  # noqa: E402
from kernel.store import Store, bundled_migrations  # noqa: E402
from palace import drawers  # noqa: E402
from palace.hierarchy import HierarchyService  # noqa: E402
from palace.repositories.filing import FilingRepository  # noqa: E402
from palace.repositories.hierarchy import HierarchyRepository  # noqa: E402
from tests.support.daemon import Daemon  # noqa: E402
from tests.support.waits import wait_for  # noqa: E402

# Bump when the generated palace changes, so a cached palace of the old shape is not reused.
BUILD_VERSION = "writes-2"
CACHE_DIR = Path(tempfile.gettempdir()) / "memcastle-bench-writes"
WINGS = (
    "projects",
    "general",
    "preferences",
    "billing",
    "infra",
    "research",
    "mobile",
    "hiring",
    "travel",
    "home",
)
ROOMS = ("entries", "diary", "decisions", "meetings")
SLOTS = len(WINGS) * len(ROOMS)
INSERT_BATCH = 500
REQUESTED_BY = "bench"
TARGET_ITEMS_PER_SEC = 500.0
INDEX_REBUILD_TIMEOUT = 1800.0
# How items are made: exact copies of a drawer of their room, copies differing in case and
# punctuation only (same fingerprint), copies with one typo (a near copy), and new texts.
MIX = (("exact", 0.10), ("normalized", 0.05), ("near", 0.10), ("new", 0.75))
DIARY_SHARE = 0.2
TERMINAL = ("completed", "failed", "cancelled")
DRAIN_POLL_SECS = 0.25
# How the in-process breakdown labels the time spent judging copies (not a store call).
JUDGE = "dedup.judge (Python)"


def _words(line: str) -> list[str]:
    return line.split()


# Texts: half common short words, half "topic" words drawn from a Zipf distribution over a
# generated vocabulary, a few numbers, in sentences of 6 to 14 words; 12 to 48 words a drawer.
COMMON = _words(
    "the a an of to in on for with and but or not no is was are were be been will would should "
    "could can must may we i you it they this that these those there here at by from as into "
    "over after before because about then when while if so also just only still again now today "
    "yesterday tomorrow all some more most less few many each every other same new old next last "
    "first second one two three four five ten fix bug note plan idea move keep use add drop check "
    "run test ask said told made found needs want like see look set get got put take give did "
    "does done"
)
ONSETS = _words("b c d f g h k l m n p r s t v w br cl cr dr fl gr pl pr sh st th tr")
NUCLEI = _words("a e i o u a e i o ai ea ou")
CODAS = ["", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ck", "ng"]
TOPIC_WORDS = 8000
# Zipf-Mandelbrot: the topic word of rank r is drawn with weight 1 / (r + 50); the most frequent
# is in about 5% of the drawers of a 100,000-drawer palace, the rarest in a few dozen.
ZIPF_SHIFT = 50


def _vocabulary() -> tuple[list[str], list[float]]:
    """Pronounceable made-up words of 1 to 3 syllables and their cumulative weights; the same on
    every run, whatever the seed."""
    rng = random.Random(20_260_101)
    found: list[str] = []
    seen: set[str] = set(COMMON)
    while len(found) < TOPIC_WORDS:
        word = "".join(
            rng.choice(ONSETS) + rng.choice(NUCLEI) + rng.choice(CODAS)
            for _ in range(rng.choices((1, 2, 3), (2, 5, 3))[0])
        )
        if len(word) > 3 and word not in seen:
            seen.add(word)
            found.append(word)
    weights = [1 / (rank + ZIPF_SHIFT) for rank in range(len(found))]
    return found, list(itertools.accumulate(weights))


TOPIC, TOPIC_CUMULATIVE = _vocabulary()


def text(rng: random.Random) -> str:
    words: list[str] = []
    for _ in range(rng.randint(12, 48)):
        pick = rng.random()
        if pick < 0.5:
            words.append(rng.choice(COMMON))
        elif pick < 0.97:
            words.append(rng.choices(TOPIC, cum_weights=TOPIC_CUMULATIVE)[0])
        else:
            words.append(
                rng.choice(
                    (
                        f"#{rng.randint(100, 9999)}",
                        f"v{rng.randint(1, 9)}.{rng.randint(0, 20)}",
                        f"{rng.randint(1, 28)}/{rng.randint(1, 12)}",
                    )
                )
            )
    sentences, start = [], 0
    while start < len(words):
        end = start + rng.randint(6, 14)
        sentence = " ".join(words[start:end])
        sentences.append(sentence[0].upper() + sentence[1:] + ".")
        start = end
    return " ".join(sentences)


def slot_of(index: int) -> tuple[str, str]:
    """Drawer `index` to its (wing, room): round-robin over the rooms, so every prefix of the
    palace is spread evenly."""
    slot = index % SLOTS
    return WINGS[slot // len(ROOMS)], ROOMS[slot % len(ROOMS)]


def drawer_content(index: int, seed: int) -> str:
    return text(random.Random(seed * 1_000_003 + index))


# The palace


def palace_env(root: Path) -> dict[str, str]:
    return {"MEMCASTLE_PALACE_PATH": str(root / "palace"), "XDG_CONFIG_HOME": str(root / "config")}


def open_palace(root: Path, env: dict[str, str] | None = None) -> Store:
    """The palace a daemon would serve from `root`, opened here (only while none runs)."""
    store = Store.from_config(load_config(env={**palace_env(root), **(env or {})}))
    store.open()
    return store


def derived(content: str) -> dict[str, Any]:
    """The fields the service stores computed from a drawer's content: `drawers.derived` where
    the palace has it (it adds deduplication keys), else the two digests."""
    made = getattr(drawers, "derived", None)
    if made is not None:
        return made(content)
    return {
        "content": content,
        "content_hash": drawers.content_hash(content),
        "fingerprint": drawers.fingerprint(content),
    }


def drawer_row(
    index: int, seed: int, rooms: dict[tuple[str, str], dict[str, Any]], at: dt.datetime
) -> dict[str, Any]:
    """The row `FilingService.file` writes for an unnamed manual drawer; keep the two in step."""
    room = rooms[slot_of(index)]
    content = drawer_content(index, seed)
    rng = random.Random(seed * 7_777_777 + index)
    return {
        "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "wing": room["wing"],
        "room": room["id"],
        **derived(content),
        "source": {"kind": "manual"},
        "tags": ["bench"],
        "provenance": {"requested_by": REQUESTED_BY, "job_id": None},
        "valid_from": at,
        "created_at": at,
        "updated_at": at,
    }


@dataclass
class Built:
    root: Path
    drawers: int
    seconds: float
    cached: bool
    checks: list[str]

    @property
    def mib(self) -> float:
        return directory_size(self.root / "palace") / 1024**2


def cache_key(args: argparse.Namespace) -> str:
    """A palace is reused only if built by the same generator, on the same schema, with the same
    fields derived from content."""
    shape = hashlib.sha256("".join(m.checksum for m in bundled_migrations()).encode())
    shape.update(json.dumps(derived("A sample, of the text."), sort_keys=True).encode())
    return f"{BUILD_VERSION}-{args.drawers}-seed{args.seed}-{shape.hexdigest()[:12]}"


def build_palace(root: Path, args: argparse.Namespace) -> tuple[float, list[str]]:
    """Wings and rooms through the service, drawers in batched INSERTs; returns the seconds the
    drawers took and what the checks found."""
    store = open_palace(root)
    try:
        store.migrate()
        service = HierarchyService(HierarchyRepository(store))
        ctx = RequestContext.build(requested_by=REQUESTED_BY)
        rooms = {
            (wing, room): service.create_room(ctx, wing, {"name": room})
            for wing in WINGS
            for room in ROOMS
        }
        # Filing instants spread over the past, never on a whole second (as the daemon's clock).
        first = utc_now() - dt.timedelta(milliseconds=10 * args.drawers)
        start = last_report = time.perf_counter()
        for batch_start in range(0, args.drawers, INSERT_BATCH):
            rows = [
                drawer_row(
                    index,
                    args.seed,
                    rooms,
                    off_whole_second(first + dt.timedelta(milliseconds=10 * index)),
                )
                for index in range(batch_start, min(batch_start + INSERT_BATCH, args.drawers))
            ]
            store.query("INSERT INTO drawer $rows RETURN NONE", {"rows": rows})
            # As the daemon does in the drawers' own transaction.
            FilingRepository(store).index_dedup_keys(rows)
            done = batch_start + len(rows)
            if time.perf_counter() - last_report > 15 or done == args.drawers:
                last_report = time.perf_counter()
                elapsed = last_report - start
                print(
                    f"  {done:,} of {args.drawers:,} drawers in {elapsed:,.0f} s "
                    f"({done / elapsed:,.0f} drawers/s)",
                    flush=True,
                )
        seconds = time.perf_counter() - start
        checks = check_palace(store, args)
    finally:
        store.close()
    return seconds, checks


def check_palace(store: Store, args: argparse.Namespace) -> list[str]:
    """The counts; and if the schema has a full-text index on drawers (the near-copy search of
    some versions uses it), that it was built: each sampled drawer is found by its rarest word."""
    total = HierarchyRepository(store).drawer_total()
    if total != args.drawers:
        raise RuntimeError(f"the palace holds {total:,} drawers, not {args.drawers:,}")
    checks = [f"{total:,} drawers counted by the tallies"]
    indexes = store.one("INFO FOR TABLE drawer")["indexes"]
    fulltext = sorted(name for name, text in indexes.items() if " FULLTEXT " in text)
    if not fulltext:
        return [*checks, "the schema has no full-text index on drawers"]
    rng = random.Random(args.seed)
    rank = {word: n for n, word in enumerate(TOPIC)}
    found, matches = 0, []
    for index in (rng.randrange(args.drawers) for _ in range(20)):
        content = drawer_content(index, args.seed)
        words = [w.strip(".").lower() for w in content.split()]
        rarest = max((w for w in words if w in rank), key=rank.__getitem__, default=None)
        if rarest is None:
            continue
        ids = store.one(
            "SELECT VALUE record::id(id) FROM drawer WHERE content @@ $word", {"word": rarest}
        )
        matches.append(len(ids))
        found += bool(
            store.one(
                "SELECT VALUE record::id(id) FROM drawer WHERE record::id(id) IN $ids "
                "AND content_hash = $hash",
                {"ids": ids, "hash": drawers.content_hash(content)},
            )
        )
    common = store.one(
        "SELECT count() AS n FROM drawer WHERE content @@ $word GROUP ALL", {"word": TOPIC[0]}
    )
    return [
        *checks,
        f"full-text index {', '.join(fulltext)}: {found} of {len(matches)} sampled drawers found "
        f"by their rarest word (median {statistics.median(matches):,.0f} drawers a word); the "
        f"most frequent word {TOPIC[0]!r} is in {common[0]['n'] if common else 0:,} drawers",
    ]


def cached_palace(args: argparse.Namespace, scratch: Path) -> Built:
    """The built palace: from the cache when it has one of this key, else built (and cached)."""
    key = cache_key(args)
    if args.no_cache:
        root = scratch / "built"
        root.mkdir()
        print(f"building a palace of {args.drawers:,} drawers in {root}", flush=True)
        seconds, checks = build_palace(root, args)
        return Built(root, args.drawers, seconds, False, checks)
    root = args.cache_dir / key
    meta = root / "built.json"
    if meta.exists() and not args.rebuild:
        recorded = json.loads(meta.read_text())
        print(f"using the palace cached in {root}", flush=True)
        return Built(root, args.drawers, recorded["seconds"], True, recorded["checks"])
    partial = args.cache_dir / f"{key}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    shutil.rmtree(root, ignore_errors=True)
    partial.mkdir(parents=True)
    print(f"building a palace of {args.drawers:,} drawers in {partial}", flush=True)
    seconds, checks = build_palace(partial, args)
    (partial / "built.json").write_text(json.dumps({"seconds": seconds, "checks": checks}))
    partial.rename(root)
    return Built(root, args.drawers, seconds, False, checks)


def copy_palace(built: Built, root: Path) -> None:
    root.mkdir(parents=True)
    shutil.copytree(built.root / "palace", root / "palace")


# Checkpoint items


@dataclass(frozen=True)
class Batch:
    items: list[dict[str, Any]]
    kinds: Counter[str]


def batch(label: str, job: int, size: int, args: argparse.Namespace) -> Batch:
    """The items of one job, the same on every run: see MIX."""
    rng = random.Random(f"{args.seed}/{label}/{job}")
    items, kinds = [], Counter()
    names, weights = zip(*MIX, strict=True)
    for _ in range(size):
        kind = rng.choices(names, weights)[0]
        diary = rng.random() < DIARY_SHARE
        wing = rng.choice(WINGS)
        room = "diary" if diary else "entries"
        if kind == "new":
            content = text(rng)
        else:
            slot = WINGS.index(wing) * len(ROOMS) + ROOMS.index(room)
            copies = (args.drawers - slot + SLOTS - 1) // SLOTS
            content = drawer_content(slot + SLOTS * rng.randrange(copies), args.seed)
            if kind == "normalized":
                content = content.lower().replace(". ", "; ").rstrip(".")
            elif kind == "near":
                content = typo(content, rng)
        kinds[kind] += 1
        items.append(
            {
                "destination": "diary" if diary else "project",
                "wing": wing,
                "content": content,
                "tags": ["bench", kind],
            }
        )
    return Batch(items, kinds)


def typo(content: str, rng: random.Random) -> str:
    """One letter of one of the longer words dropped."""
    words = content.split(" ")
    longer = [n for n, word in enumerate(words) if len(word.strip(".")) >= 6]
    n = rng.choice(longer) if longer else 0
    word = words[n]
    cut = rng.randrange(1, max(2, len(word.strip(".")) - 1))
    words[n] = word[:cut] + word[cut + 1 :]
    return " ".join(words)


def batches(args: argparse.Namespace) -> list[tuple[str, list[Batch]]]:
    return [
        ("warm-up", [batch("warm-up", 0, args.small_items, args)]),
        (
            f"{args.small_items:,} items",
            [batch("small", n, args.small_items, args) for n in range(args.small_jobs)],
        ),
        (
            f"{args.large_items:,} items",
            [batch("large", n, args.large_items, args) for n in range(args.large_jobs)],
        ),
    ]


def queued_batches(args: argparse.Namespace) -> list[Batch]:
    """Small jobs for the sustained run: the same sizes and mix, other items."""
    return [batch("queued", n, args.small_items, args) for n in range(args.small_jobs)]


# Through a daemon


@dataclass
class JobTiming:
    items: int
    run_secs: float  # completed_at - started_at
    end_to_end_secs: float  # POST sent to completed_at
    queue_secs: float  # started_at - created_at
    duplicates: int
    status: str

    @property
    def rate(self) -> float:
        return self.items / self.run_secs if self.run_secs > 0 else float("nan")

    @property
    def end_to_end_rate(self) -> float:
        return self.items / self.end_to_end_secs if self.end_to_end_secs > 0 else float("nan")


@dataclass
class Phase:
    label: str
    jobs: list[JobTiming] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)
    daemon_cpu_secs: float = 0.0

    @property
    def items(self) -> int:
        return sum(job.items for job in self.jobs)

    @property
    def rate(self) -> float:
        """Items over the jobs' summed run time."""
        return self.items / sum(job.run_secs for job in self.jobs)

    @property
    def end_to_end_rate(self) -> float:
        return self.items / sum(job.end_to_end_secs for job in self.jobs)


@dataclass
class Sustained:
    """Small jobs run one after another: submitted back to back over HTTP, or queued before
    the daemon started (`posting_secs` is then 0)."""

    label: str
    items: int
    jobs: int
    server_secs: float  # first started_at to last completed_at
    end_to_end_secs: float  # first POST sent to last completed_at
    posting_secs: float  # first POST sent to last POST answered
    queue_wait_secs: float  # median of started_at - created_at
    duplicates: int

    @classmethod
    def from_records(
        cls,
        label: str,
        jobs: Sequence[Batch],
        records: Sequence[dict[str, Any]],
        *,
        sent: float,
        posting_secs: float,
    ) -> Sustained:
        """Raises if a job did not complete: its figures would mean nothing."""
        for record in records:
            if record["status"] != "completed":
                raise RuntimeError(
                    f"checkpoint job {record['id']} ended {record['status']}: {record.get('error')}"
                )
        first_started = min(parse_time(record["started_at"]) for record in records)
        last_completed = max(parse_time(record["completed_at"]) for record in records)
        return cls(
            label=label,
            items=sum(len(job.items) for job in jobs),
            jobs=len(jobs),
            server_secs=last_completed - first_started,
            end_to_end_secs=last_completed - sent,
            posting_secs=posting_secs,
            queue_wait_secs=statistics.median(
                parse_time(record["started_at"]) - parse_time(record["created_at"])
                for record in records
            ),
            duplicates=sum(record["result"]["duplicates"] for record in records),
        )


@dataclass
class DaemonRun:
    mode: str
    start_secs: float
    phases: list[Phase]
    sustained: list[Sustained]
    links: dict[str, int]
    drawers_after: int
    log_problems: list[str]


def wait_finished(events: EventListener, job_id: str, timeout: float) -> str:
    """The job's terminal status, as soon as its frame arrives."""
    deadline = time.monotonic() + timeout
    while True:
        for status in TERMINAL:
            with contextlib.suppress(TimeoutError):
                events.wait("job", job_id, status, timeout=0)
                return status
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {job_id} did not finish in {timeout:.0f} s")
        with contextlib.suppress(TimeoutError):
            events.wait("job", job_id, "completed", timeout=0.5)
            return "completed"


def run_job(
    client: httpx.Client, events: EventListener, items: list[dict[str, Any]], timeout: float
) -> JobTiming:
    sent = time.time()
    job = ok(
        client.post("/api/jobs", json={"type": "checkpoint", "payload": {"items": items}}), 201
    )
    status = wait_finished(events, job["id"], timeout)
    record = ok(client.get(f"/api/jobs/{job['id']}"))
    if status != "completed":
        raise RuntimeError(f"checkpoint job {job['id']} ended {status}: {record.get('error')}")
    started = parse_time(record["started_at"])
    completed = parse_time(record["completed_at"])
    return JobTiming(
        items=len(items),
        run_secs=completed - started,
        end_to_end_secs=completed - sent,
        queue_secs=started - parse_time(record["created_at"]),
        duplicates=record["result"]["duplicates"],
        status=status,
    )


def run_queued(
    client: httpx.Client, events: EventListener, jobs: list[Batch], label: str, timeout: float
) -> Sustained:
    """Submit every job, then wait for them all: throughput while jobs keep arriving.

    The job records are read once the last job has ended, so that reading them does not
    compete with the jobs it times.
    """
    sent = time.time()
    ids = [
        ok(
            client.post("/api/jobs", json={"type": "checkpoint", "payload": {"items": job.items}}),
            201,
        )["id"]
        for job in jobs
    ]
    posting_secs = time.time() - sent
    for job_id in ids:
        wait_finished(events, job_id, timeout)
    records = [ok(client.get(f"/api/jobs/{job_id}")) for job_id in ids]
    return Sustained.from_records(label, jobs, records, sent=sent, posting_secs=posting_secs)


def unfinished_jobs(client: httpx.Client) -> int:
    """Jobs queued or running, from the status report: one light request, so that watching
    (four times a second) does not compete with the jobs it times."""
    jobs = ok(client.get("/api/status"))["jobs"]
    return jobs["queued"] + jobs["running"]


def run_drained(
    root: Path, env: dict[str, str], args: argparse.Namespace
) -> tuple[Sustained, list[str]]:
    """Jobs queued while no daemon runs, then run by a daemon started on them: throughput with
    work waiting in the queue and no submissions competing (the daemon dispatches the queued
    jobs as it starts). The palace's search indexes were saved by the daemon stopped before."""
    from memcastle_project.composition import compose

    jobs = [batch("drained", n, args.small_items, args) for n in range(args.drain_jobs)]
    store = open_palace(root, env)
    try:
        queued = compose(load_config(env={**palace_env(root), **env}), store)
        ctx = RequestContext.build(requested_by=REQUESTED_BY)
        ids = [
            queued.jobs.submit(ctx, {"type": "checkpoint", "payload": {"items": job.items}})["id"]
            for job in jobs
        ]
    finally:
        store.close()
    daemon = Daemon(root, env=env)
    print(f"  {args.small_items:,} items, queued before the daemon started: {len(ids)} jobs")
    try:
        sent = time.time()
        daemon.start()
        with httpx.Client(base_url=daemon.base_url, timeout=60) as client:
            deadline = time.monotonic() + args.job_timeout
            while unfinished_jobs(client):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the queued jobs did not end in {args.job_timeout:.0f} s")
                time.sleep(DRAIN_POLL_SECS)
            records = [ok(client.get(f"/api/jobs/{job_id}")) for job_id in ids]
    finally:
        stop(daemon)
    label = f"{args.small_items:,} items, queued before the daemon started"
    drained = Sustained.from_records(label, jobs, records, sent=sent, posting_secs=0.0)
    return drained, log_problems(daemon.log())


def count_links(root: Path) -> tuple[dict[str, int], int]:
    """The similar_to links by kind and the drawer total, read with the daemon stopped."""
    store = open_palace(root)
    try:
        rows = store.one("SELECT kind, count() AS n FROM similar_to GROUP BY kind")
        total = HierarchyRepository(store).drawer_total()
    finally:
        store.close()
    return {row["kind"]: row["n"] for row in rows}, total


def daemon_env(mode: str, args: argparse.Namespace) -> dict[str, str]:
    env = {"MEMCASTLE_STORE_SYNC": args.sync}
    if mode == "off":
        env["MEMCASTLE_DEDUP_ENABLED"] = "false"
    return env


def run_daemon(mode: str, built: Built, root: Path, args: argparse.Namespace) -> DaemonRun:
    copy_palace(built, root)
    env = daemon_env(mode, args)
    daemon = Daemon(root, env=env)
    print(f"deduplication {mode}: starting a daemon on a copy of the palace in {root}", flush=True)
    phases = []
    try:
        start = time.perf_counter()
        daemon.start()
        # A palace filed straight into the store has no search indexes: the daemon rebuilds
        # them while it serves (about 40 s at 100,000 drawers), which the jobs must not share.
        wait_for(
            daemon.search_ready,
            timeout=INDEX_REBUILD_TIMEOUT,
            what="the search indexes to be rebuilt",
        )
        start_secs = time.perf_counter() - start
        assert daemon.process is not None
        events = EventListener(daemon.base_url).start()
        try:
            with httpx.Client(base_url=daemon.base_url, timeout=60) as client:
                for label, jobs in batches(args):
                    print(f"  {label}: {len(jobs)} jobs", flush=True)
                    phase = Phase(label)
                    cpu_before = cpu_seconds(daemon.process.pid)
                    for job in jobs:
                        timing = run_job(client, events, job.items, args.job_timeout)
                        phase.jobs.append(timing)
                        phase.kinds.update(job.kinds)
                        if len(job.items) >= 100 or timing.run_secs > 10:
                            print(
                                f"    {timing.items:,} items in {timing.run_secs:.1f} s: "
                                f"{per_sec(timing.rate)} items/s",
                                flush=True,
                            )
                    phase.daemon_cpu_secs = cpu_seconds(daemon.process.pid) - cpu_before
                    phases.append(phase)
                label = f"{args.small_items:,} items, submitted back to back"
                print(f"  {label}: {args.small_jobs} jobs", flush=True)
                sustained = run_queued(
                    client, events, queued_batches(args), label, args.job_timeout
                )
        finally:
            events.close()
    finally:
        stop(daemon)
    drained, drain_problems = run_drained(root, env, args)
    links, total = count_links(root)
    return DaemonRun(
        mode,
        start_secs,
        phases,
        [sustained, drained],
        links,
        total,
        log_problems(daemon.log()) + drain_problems,
    )


def stop(daemon: Daemon) -> None:
    """SIGTERM by pid and wait; SIGKILL if the drain does not end (or the start failed)."""
    if daemon.process is None:
        return
    try:
        daemon.stop()
    except Exception:
        if daemon.process is not None and daemon.process.poll() is None:
            daemon.kill()


def log_problems(log: str) -> list[str]:
    return [
        line
        for line in log.splitlines()
        if " ERROR " in line or " WARNING " in line or line.startswith("Traceback")
    ]


# Where the time goes, in-process


@dataclass
class Call:
    calls: int = 0
    total: float = 0.0
    engine: float = 0.0
    decode: float = 0.0


class Profiler:
    """Times every store call by the repository method that made it, and within it the
    engine's own time and the SDK's CBOR decoding; `dedup.judge` is timed apart."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.calls: dict[str, Call] = defaultdict(Call)
        self._engine = 0.0
        self._decode = 0.0

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        import surrealdb.connections.blocking_embedded as embedded

        from palace import dedup

        profiler = self
        connection = self.store._db
        engine = connection._db
        real_query, real_decode, real_judge = self.store.query, embedded.decode, dedup.judge

        class Engine:
            def __getattr__(self, name: str) -> Any:
                return getattr(engine, name)

            def execute(self, request: bytes) -> bytes:
                start = time.perf_counter()
                try:
                    return engine.execute(request)
                finally:
                    profiler._engine += time.perf_counter() - start

        def decode(data: bytes) -> Any:
            start = time.perf_counter()
            try:
                return real_decode(data)
            finally:
                profiler._decode += time.perf_counter() - start

        def query(sql: str, variables: Any = None) -> list[Any]:
            label = caller()
            engine_before, decode_before = profiler._engine, profiler._decode
            start = time.perf_counter()
            try:
                return real_query(sql, variables)
            finally:
                call = profiler.calls[label]
                call.calls += 1
                call.total += time.perf_counter() - start
                call.engine += profiler._engine - engine_before
                call.decode += profiler._decode - decode_before

        def judge(*a: Any, **kw: Any) -> Any:
            start = time.perf_counter()
            try:
                return real_judge(*a, **kw)
            finally:
                call = profiler.calls[JUDGE]
                call.calls += 1
                call.total += time.perf_counter() - start

        connection._db = Engine()
        embedded.decode = decode
        self.store.query = query  # type: ignore[method-assign]
        dedup.judge = judge
        try:
            yield
        finally:
            connection._db = engine
            embedded.decode = real_decode
            del self.store.query
            dedup.judge = real_judge

    def reset(self) -> None:
        self.calls.clear()


def caller() -> str:
    """The first function outside the store that asked: `FilingRepository.create_drawers`."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.endswith(("store.py", "writes.py")):
            return frame.f_code.co_qualname
        frame = frame.f_back  # type: ignore[assignment]
    return "?"


@dataclass
class Breakdown:
    mode: str
    label: str
    jobs: int
    items: int
    seconds: float
    calls: dict[str, Call]

    @property
    def ms_per_item(self) -> float:
        return self.seconds * 1000 / self.items

    @property
    def round_trips(self) -> int:
        """Store calls, each one round trip to the engine (`dedup.judge` is not one)."""
        return sum(call.calls for label, call in self.calls.items() if label != JUDGE)


def profile_in_process(
    mode: str, built: Built, root: Path, args: argparse.Namespace
) -> list[Breakdown]:
    """The jobs of the daemon run, run here: `JobService.submit`, then `Executor.execute` on
    this thread, which claims the job and runs the checkpoint handler."""
    from memcastle_project.composition import compose

    copy_palace(built, root)
    env = daemon_env(mode, args)
    config = load_config(env={**palace_env(root), **env})
    store = Store.from_config(config)
    store.open()
    results = []
    try:
        store.migrate()
        daemon = compose(config, store)
        ctx = RequestContext.build(requested_by=REQUESTED_BY)
        profiler = Profiler(store)
        with profiler.installed():
            for label, jobs in batches(args):
                profiler.reset()
                start = time.perf_counter()
                ids = []
                for job in jobs:
                    submitted = daemon.jobs.submit(
                        ctx, {"type": "checkpoint", "payload": {"items": job.items}}
                    )
                    daemon.executor.execute(submitted["id"])
                    ids.append(submitted["id"])
                seconds = time.perf_counter() - start
                items = sum(len(job.items) for job in jobs)
                results.append(
                    Breakdown(mode, label, len(jobs), items, seconds, dict(profiler.calls))
                )
                # Checked once timed, so that the check is not in the figures.
                for job_id in ids:
                    row = daemon.jobs.record(job_id)
                    if row is None or row["status"] != "completed":
                        raise RuntimeError(
                            f"in-process checkpoint job ended {row and row['status']}"
                        )
                print(f"  {label}: {per_sec(items / seconds)} items/s in-process", flush=True)
    finally:
        store.close()
    return results


# Reporting


def per_sec(rate: float) -> str:
    """A rate with as many digits as it needs: 0.31, 4.7, 1,234."""
    return f"{rate:.2f}" if rate < 10 else f"{rate:.1f}" if rate < 100 else f"{rate:,.0f}"


def summary(values: Sequence[float]) -> str:
    if len(values) == 1:
        return per_sec(values[0])
    return (
        f"median {per_sec(statistics.median(values))} (p10 {per_sec(quantile(values, 10))}, "
        f"p90 {per_sec(quantile(values, 90))})"
    )


def code_state() -> str:
    """The commit measured, and whether tracked files were changed since."""
    try:
        commit, status = (
            subprocess.run(
                ["git", "-C", str(REPO), *command], capture_output=True, text=True, check=True
            ).stdout.strip()
            for command in (
                ["rev-parse", "--short", "HEAD"],
                ["status", "--porcelain", "--untracked-files=no"],
            )
        )
    except (OSError, subprocess.CalledProcessError):
        return f"{REPO} (not a git checkout)"
    changed = len(status.splitlines())
    return f"commit {commit}" + (f" with {changed} tracked files modified" if changed else "")


def report_daemon(run: DaemonRun) -> None:
    print(
        f"\nDeduplication {run.mode}"
        + ("" if run.mode == "on" else " (MEMCASTLE_DEDUP_ENABLED=false)")
    )
    print(f"  daemon ready {run.start_secs:.1f} s after start")
    for phase in run.phases:
        if phase.label == "warm-up":
            continue
        jobs = phase.jobs
        print(f"  {len(jobs)} jobs of {phase.label} ({dict(phase.kinds)})")
        print(
            f"    items/s, server (completed_at - started_at): {summary([j.rate for j in jobs])};"
            f" all jobs {per_sec(phase.rate)}"
        )
        print(
            f"    items/s, end to end (POST sent to completed_at): "
            f"{summary([j.end_to_end_rate for j in jobs])}; "
            f"all jobs {per_sec(phase.end_to_end_rate)}"
        )
        print(
            f"    ms an item (server): {1000 / phase.rate:.2f}; daemon CPU an item: "
            f"{phase.daemon_cpu_secs * 1000 / phase.items:.2f} ms; queue wait median "
            f"{statistics.median(j.queue_secs for j in jobs) * 1000:.0f} ms"
        )
        print(
            f"    duplicates reported by the jobs: {sum(j.duplicates for j in jobs):,} "
            f"(exact copies sent: {phase.kinds['exact']:,})"
        )
    for sustained in run.sustained:
        print(f"  {sustained.jobs} jobs of {sustained.label}")
        print(
            f"    items/s, server (first started_at to last completed_at): "
            f"{per_sec(sustained.items / sustained.server_secs)}; queue wait median "
            f"{sustained.queue_wait_secs * 1000:.0f} ms"
        )
        if sustained.posting_secs:
            print(
                f"    end to end (first POST sent to last completed_at): "
                f"{per_sec(sustained.items / sustained.end_to_end_secs)}; the last POST was "
                f"answered {sustained.posting_secs:.2f} s after the first was sent, the last "
                f"job ended {sustained.end_to_end_secs:.2f} s after"
            )
        print(f"    duplicates reported by the jobs: {sustained.duplicates:,}")
    print(
        f"  afterwards: {run.drawers_after:,} drawers; similar_to links by kind: "
        f"{dict(sorted(run.links.items())) or 'none'}"
    )
    if run.log_problems:
        print(f"  daemon log: {len(run.log_problems)} warnings or errors, the first:")
        for line in run.log_problems[:5]:
            print(f"    {line[:200]}")
    else:
        print("  daemon log: no warnings or errors")


def verdict(runs: Sequence[DaemonRun]) -> None:
    for run in runs:
        if run.mode != "on":
            continue
        rates = [
            (f"{phase.label} one at a time", phase.rate)
            for phase in run.phases
            if phase.label != "warm-up"
        ]
        rates += [
            (sustained.label, sustained.items / sustained.server_secs)
            for sustained in run.sustained
        ]
        print(
            f"\nTarget: at least {TARGET_ITEMS_PER_SEC:,.0f} items/s with deduplication on "
            "(server side)"
        )
        for label, rate in rates:
            met = "met" if rate >= TARGET_ITEMS_PER_SEC else "MISSED"
            print(f"  {label}: {per_sec(rate)} items/s, {met}")


def report_breakdown(breakdown: Breakdown) -> None:
    per = 1000 / breakdown.items
    print(
        f"\n  deduplication {breakdown.mode}, jobs of {breakdown.label}: "
        f"{breakdown.ms_per_item:.2f} ms an item "
        f"({per_sec(breakdown.items / breakdown.seconds)} items/s)"
    )
    print(
        f"    {'what':<44} {'calls/item':>10} {'ms/item':>8} {'share':>6} {'engine':>8} "
        f"{'decode':>8}"
    )
    rows = sorted(breakdown.calls.items(), key=lambda kv: -kv[1].total)
    accounted = 0.0
    for label, call in rows:
        accounted += call.total
        print(
            f"    {label:<44} {call.calls / breakdown.items:10.2f} {call.total * per:8.3f} "
            f"{call.total / breakdown.seconds:6.0%} {call.engine * per:8.3f} "
            f"{call.decode * per:8.3f}"
        )
    rest = breakdown.seconds - accounted
    print(
        f"    {'everything else (service, handler, SDK)':<44} {'':>10} {rest * per:8.3f} "
        f"{rest / breakdown.seconds:6.0%}"
    )
    print(
        f"    store round trips: {breakdown.round_trips / breakdown.jobs:.2f} a job, "
        f"{breakdown.round_trips / breakdown.items:.3f} an item; "
        f"{breakdown.seconds * 1000 / breakdown.jobs:.1f} ms a job"
    )


def report(
    built: Built,
    runs: Sequence[DaemonRun],
    breakdowns: Sequence[Breakdown],
    args: argparse.Namespace,
    load_before: Sequence[float],
) -> None:
    print("\nMachine")
    for key, value in machine():
        print(f"  {key:<17} {value}")
    print(
        f"  load average      before {' '.join(f'{x:.2f}' for x in load_before)}, after "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
    )
    print(f"  code              {code_state()}")
    print(f"  palace            embedded surrealkv, store.sync={args.sync}")
    per_room = args.drawers / SLOTS
    print(
        f"\nPalace: {built.drawers:,} drawers, {len(WINGS)} wings of {len(ROOMS)} rooms "
        f"(about {per_room:,.0f} drawers a room), {built.mib:,.0f} MiB on disk; drawers "
        f"inserted in {built.seconds:,.0f} s ({built.drawers / built.seconds:,.0f}/s)"
        + (" (cached)" if built.cached else "")
    )
    for check in built.checks:
        print(f"  {check}")
    for run in runs:
        report_daemon(run)
    verdict(runs)
    if breakdowns:
        print(
            "\nWhere an item's time goes: the same jobs in-process (no HTTP, no daemon), every "
            "store call by the method that made it (ms an item; engine = the engine's call, "
            "decode = the SDK's CBOR decoding)"
        )
        for breakdown in breakdowns:
            if breakdown.label != "warm-up":
                report_breakdown(breakdown)


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--drawers", type=int, default=100_000, help="drawers in the palace (100000)"
    )
    parser.add_argument("--small-items", type=int, default=10, help="items of a small job (10)")
    parser.add_argument("--small-jobs", type=int, default=20, help="small jobs (20)")
    parser.add_argument(
        "--drain-jobs",
        type=int,
        default=200,
        help="small jobs queued before a daemon starts, then run by it (200)",
    )
    parser.add_argument("--large-items", type=int, default=1000, help="items of a large job (1000)")
    parser.add_argument("--large-jobs", type=int, default=2, help="large jobs (2)")
    parser.add_argument(
        "--dedup",
        nargs="+",
        choices=("on", "off"),
        default=["on", "off"],
        help="deduplication modes to run (on off)",
    )
    parser.add_argument("--no-profile", action="store_true", help="skip the in-process breakdown")
    parser.add_argument("--seed", type=int, default=1, help="seed of the palace and the items (1)")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=CACHE_DIR,
        help=f"where built palaces are kept ({CACHE_DIR})",
    )
    parser.add_argument("--no-cache", action="store_true", help="build a palace for this run only")
    parser.add_argument(
        "--rebuild", action="store_true", help="build the palace again even if cached"
    )
    parser.add_argument(
        "--sync",
        default="every",
        help="store.sync of the palace, MEMCASTLE_STORE_SYNC: every, never or an interval "
        "such as 500ms (every)",
    )
    parser.add_argument(
        "--job-timeout",
        type=float,
        default=3600.0,
        help="seconds to wait for one job before giving up (3600)",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the run's palaces and daemon logs"
    )
    args = parser.parse_args(argv)
    if args.drawers < SLOTS or args.small_items < 1 or args.large_items < 1:
        parser.error(f"--drawers must be at least {SLOTS}, job sizes positive")
    if args.small_jobs < 1 or args.large_jobs < 1 or args.drain_jobs < 1:
        parser.error("--small-jobs, --large-jobs and --drain-jobs must be positive")
    return args


def run(scratch: Path, args: argparse.Namespace) -> None:
    load_before = os.getloadavg()
    built = cached_palace(args, scratch)
    runs = [run_daemon(mode, built, scratch / f"dedup-{mode}", args) for mode in args.dedup]
    breakdowns: list[Breakdown] = []
    if not args.no_profile:
        for mode in args.dedup:
            print(f"deduplication {mode}: the same jobs in-process", flush=True)
            breakdowns += profile_in_process(mode, built, scratch / f"profile-{mode}", args)
    report(built, runs, breakdowns, args, load_before)


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    if args.keep:
        scratch = Path(tempfile.mkdtemp(prefix="memcastle-bench-writes-"))
        run(scratch, args)
        print(f"\nkept {scratch}")
        return 0
    with tempfile.TemporaryDirectory(prefix="memcastle-bench-writes-") as name:
        run(Path(name), args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
