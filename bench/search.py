"""How fast search answers on palaces of 10,000 and 100,000 drawers, through a real daemon, and
how that compares with SurrealDB's own full-text and vector indexes.

Run from the repository root: `.venv/bin/python bench/search.py`; `--quick` gives a small run
(2,000 drawers, fewer queries). It measures and reports; it is not a test, so it exits 0
whatever the figures are.

1. **Palace, through HTTP.** For each `--sizes` (10,000 and 100,000), a daemon (`manage.py serve`
   in a subprocess, `tests.support.daemon.Daemon`, default settings) is started on a new palace
   with an `external` embedding profile `bench` of 384 dimensions and no default profile (so no
   embed job runs), and files the corpus of `bench/search_corpus.py`: developer memories of 30 to
   200 words in 20 wings of 5 rooms. `entries` and `diary` drawers go through checkpoint jobs of
   1,000 items (`POST /api/jobs`, one job at a time, each waited for); the other rooms'
   drawers through `POST /api/wings/{w}/rooms/{r}/drawers`, by several clients at once. Every
   drawer gets its vector (`PUT /api/drawers/{id}/embedding`, a seeded random projection of its
   words), then the `as_of` instant is taken, then 5% of the drawers change
   (`POST /api/drawers/{id}/supersede`: 4 in 5 with a revised text, whose vector is attached
   next, 1 in 5 only invalidated). Rates: drawers/s of the checkpoint jobs (their records'
   `completed_at - started_at`, and end to end) and of the single POSTs, vectors/s, changes/s.
   The built palace is cached under `/tmp/memcastle-bench-search/`, keyed by a version string,
   the size and the seed; later runs copy it (`--rebuild` builds it again). `--fill services`
   files the same drawers, vectors and changes through the application services in this
   process instead (`file_through_services`: `FilingService.file_batch` in batches of 2,000,
   `EmbeddingService.store_vectors`, `RevisionService.supersede`), with no daemon running: a
   million drawers take about half an hour that way and about ten hours through HTTP. The
   first daemon started on such a palace builds its indexes, and that build is timed.
2. **Queries, through HTTP.** `--queries` fixed queries (100) of 1 to 4 words taken from one
   drawer's text, each with its vector computed as the drawers' are, sent as
   `POST /api/search {"text", "ranking", "limit": 10, "filter": {"wing"?, "temporal"},
   "profile": "bench", "query_embedding"}` for each ranking (lexical, semantic, hybrid), scoped
   to the query's wing or not, and `current` or `{"as_of": t}`: 12 cells. One untimed pass
   over every query and cell, then `--passes` timed passes (3), the cells interleaved query by
   query so that a slow moment of the machine hits them all; one keep-alive client, one request
   at a time, timed in the client around the whole request. Each answer of the untimed pass is
   checked: scope, validity at the asked time, the ranking that ran, no vector in a hit.
   `GET /api/health` and `GET /api/status` are timed the same way: the floor of any request.
3. **Index build.** The daemon rebuilds its derived indexes (`<palace>/search/`) when they are
   missing: it is stopped, started again with them (time to ready and to the first answer),
   stopped, the directory removed, and started again (time to ready and to the first answer
   that finds what it found before; not for a palace filed through the services, whose first
   start built them). The daemon's resident memory after the timed queries, at its peak, and
   after the restart with its indexes; at 1,000,000 drawers the targets of issue 26 (medians
   of 50, 50 and 75 ms, 4 GiB, a restart's first answer within 60 s).
4. **SurrealDB's own indexes** (`bench/search_native.py`): the same drawers, validity changes and
   vectors in an embedded SurrealDB opened by this process, with a BM25 full-text index and an
   HNSW index; the same queries (the first `--native-queries`, 30), one untimed pass and one
   timed pass per cell, each pass cut short (after at least 5 queries) once it has taken
   `--native-budget` seconds (30): a hybrid query takes seconds there at 100,000 (`--native-ef`
   widens the HNSW search, for a comparison at the daemon's recall). These
   timings have no HTTP: the ratio is given both against the daemon's HTTP figure and against
   that figure minus the HTTP floor (the health check). Also the overlap of the two top-10s
   (for semantic, the HNSW index's recall against the daemon's exact search).
5. **The `local` profile** (`palace.embeddings`, in this process): drawers of about 256 tokens
   embedded per second, and the latency of one short query.

The machine is shared: the report gives the load average before and after, a CPU probe (a fixed
Python loop) before and after, and the CPU time the rest of the machine and the hypervisor took
during the timed queries. Daemons are stopped by their pid, on error too.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402
import numpy as np  # noqa: E402

from bench import search_native  # noqa: E402
from bench.hierarchy import directory_size  # noqa: E402
from bench.jobs import cpu_seconds, ok, parse_time, quantile, resident_gib  # noqa: E402
from bench.mine import cpu_probe, host_cpu, print_machine  # noqa: E402
from bench.search_corpus import (  # noqa: E402
    DIMENSIONS,
    ROOMS,
    WINGS,
    Corpus,
    Projection,
    Query,
    as_json,
)
from bench.writes import code_state, log_problems, per_sec, stop  # noqa: E402
from jobs.replay import unit_id  # noqa: E402
from kernel.store import bundled_migrations  # noqa: E402
from tests.support.daemon import Daemon  # noqa: E402
from tests.support.http import wait_job  # noqa: E402
from tests.support.waits import wait_for  # noqa: E402

# How long a daemon may take to rebuild the indexes of a cached palace before it is timed.
REBUILD_WAIT_SECS = 3600.0
# Bump when the palace the benchmark builds changes, so a cached palace of the old shape is not
# reused.
BUILD_VERSION = "search-1"
CACHE_DIR = Path(tempfile.gettempdir()) / "memcastle-bench-search"
# How long a job of the build is waited for (polled every 0.1 s); one that fails stops the run.
JOB_TIMEOUT = 3600.0
PROFILE = "bench"
CONFIG = f"""\
[embeddings]
default_profile = ""
[embeddings.profiles.{PROFILE}]
provider = "external"
model = "bench-random-projection"
dimensions = {DIMENSIONS}
"""
CHECKPOINT_ITEMS = 1000
# Drawers (and vectors) a `FilingService.file_batch` (and `store_vectors`) call takes when the
# palace is filed through the services.
SERVICE_BATCH = 2000
LIMIT = 10
RANKINGS = ("lexical", "semantic", "hybrid")
SCOPES = ("unscoped", "wing")
TIMES = ("current", "as_of")
# Median latency targets by palace size (issue 26: a million drawers).
TARGET_MS = {
    100_000: {"lexical": 15.0, "semantic": 15.0, "hybrid": 25.0},
    1_000_000: {"lexical": 50.0, "semantic": 50.0, "hybrid": 75.0},
}
TARGET_RATIO = 20.0
# At a million drawers: the daemon's resident memory, and a restart's first answer.
TARGET_RESIDENT_GIB = 4.0
TARGET_RESTART_SECS = 60.0
REQUESTED_BY = "bench"
START_TIMEOUT = 1800.0  # a daemon that rebuilds 100,000 drawers' indexes before serving
LOCAL_TOKENS = 256


@dataclass(frozen=True)
class Cell:
    ranking: str
    scope: str
    time: str

    @property
    def label(self) -> str:
        return f"{self.ranking:<8} {self.scope:<8} {self.time}"


CELLS = [Cell(r, s, t) for r in RANKINGS for s in SCOPES for t in TIMES]


# Talking to the daemon


class Clients:
    """One keep-alive client per thread, for work spread over several threads."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self._local = threading.local()
        self._all: list[httpx.Client] = []
        self._lock = threading.Lock()

    def get(self) -> httpx.Client:
        client = getattr(self._local, "client", None)
        if client is None:
            client = httpx.Client(base_url=self.base_url, timeout=300)
            self._local.client = client
            with self._lock:
                self._all.append(client)
        return client

    def close(self) -> None:
        for client in self._all:
            client.close()


def parallel(
    base_url: str, work: Sequence[Any], call: Callable[[httpx.Client, Any], Any], workers: int
) -> tuple[list[Any], float]:
    """`call(client, item)` for every item on `workers` threads; the results in order and the
    wall time."""
    clients = Clients(base_url)
    start = time.perf_counter()
    try:
        with ThreadPoolExecutor(workers) as pool:
            results = list(pool.map(lambda item: call(clients.get(), item), work))
    finally:
        clients.close()
    return results, time.perf_counter() - start


def daemon_env(root: Path) -> dict[str, str]:
    config = root / "memcastle.toml"
    config.write_text(CONFIG)
    return {"MEMCASTLE_CONFIG": str(config)}


@contextlib.contextmanager
def running(root: Path) -> Iterator[Daemon]:
    daemon = Daemon(root, env=daemon_env(root))
    try:
        start_daemon(daemon)
        yield daemon
    finally:
        stop(daemon)


def start_daemon(daemon: Daemon) -> float:
    """Start and wait until it serves (longer than the test helper allows: a daemon may rebuild
    its indexes first); the seconds it took."""
    start = time.perf_counter()
    daemon.start(wait=False)
    record = wait_for(daemon._ready, timeout=START_TIMEOUT, what="the daemon to serve")
    daemon.base_url = f"http://{record['bind_addr']}"
    return time.perf_counter() - start


# Building the palace through HTTP


@dataclass
class Ingest:
    """What filing the palace through HTTP cost."""

    checkpoint_items: int = 0
    checkpoint_jobs: int = 0
    checkpoint_server_secs: float = 0.0  # sum of completed_at - started_at
    checkpoint_end_to_end_secs: float = 0.0  # sum of POST sent to completed_at
    posted: int = 0
    post_secs: float = 0.0
    post_clients: int = 0
    vectors: int = 0
    vector_secs: float = 0.0
    vector_clients: int = 0
    superseded: int = 0
    invalidated: int = 0
    change_secs: float = 0.0
    replacement_vectors: int = 0
    replacement_vector_secs: float = 0.0
    daemon_cpu_secs: float = 0.0
    wall_secs: float = 0.0
    # "http", or "services": filed in the benchmark's process (`file_through_services`), where
    # `batches` of `SERVICE_BATCH` drawers took `batch_secs` and `daemon_cpu_secs` is this
    # process's CPU.
    fill: str = "http"
    batches: int = 0
    batch_secs: float = 0.0


@dataclass
class Built:
    """A palace filed through HTTP (or the services), and what the benchmark must know about
    it."""

    root: Path
    size: int
    seed: int
    ids: list[str]  # drawer id by corpus index
    replacements: dict[int, str]  # replacement drawer id by change order
    wing_ids: dict[str, str]  # wing name to id
    as_of: str  # an instant after every filing and before every change
    ingest: Ingest
    migrations: str
    code: str
    cached: bool = False

    @property
    def mib(self) -> float:
        return directory_size(self.root / "palace") / 1024**2

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["root"] = str(self.root)
        data.pop("cached")
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Built:
        data = {**data, "root": Path(data["root"]), "ingest": Ingest(**data["ingest"])}
        data["replacements"] = {int(k): v for k, v in data["replacements"].items()}
        return cls(**data, cached=True)


def migrations_checksum() -> str:
    import hashlib

    return hashlib.sha256("".join(m.checksum for m in bundled_migrations()).encode()).hexdigest()[
        :12
    ]


def file_checkpoints(client: httpx.Client, corpus: Corpus, ingest: Ingest) -> dict[int, str]:
    """The checkpoint rooms' drawers, 1,000 items a job, one job at a time; their ids are
    derived from the job's id (api.md), and checked on a sample afterwards."""
    indexes = [d.index for d in corpus.drawers if d.route == "checkpoint"]
    ids: dict[int, str] = {}
    for start in range(0, len(indexes), CHECKPOINT_ITEMS):
        batch = indexes[start : start + CHECKPOINT_ITEMS]
        items = [
            {
                "destination": "diary" if corpus.drawers[i].room == "diary" else "project",
                "wing": corpus.drawers[i].wing,
                "content": corpus.drawers[i].content,
                "tags": [corpus.drawers[i].kind],
            }
            for i in batch
        ]
        sent = time.time()
        job = ok(
            client.post("/api/jobs", json={"type": "checkpoint", "payload": {"items": items}}),
            201,
        )
        record = wait_job(client, job["id"], timeout=JOB_TIMEOUT, interval=0.1)
        result = record.get("result") or {}
        if result.get("duplicates") or result.get("failed"):
            raise RuntimeError(f"checkpoint job {job['id']} did not store every item: {result}")
        started, completed = parse_time(record["started_at"]), parse_time(record["completed_at"])
        ingest.checkpoint_jobs += 1
        ingest.checkpoint_items += len(batch)
        ingest.checkpoint_server_secs += completed - started
        ingest.checkpoint_end_to_end_secs += completed - sent
        for n, index in enumerate(batch):
            ids[index] = unit_id(job["id"], f"checkpoint-drawer:{n}")
        done = ingest.checkpoint_items
        if ingest.checkpoint_jobs % 10 == 0 or done == len(indexes):
            print(
                f"    checkpoint: {done:,} of {len(indexes):,} items, "
                f"{per_sec(done / ingest.checkpoint_server_secs)} items/s (server)",
                flush=True,
            )
    return ids


def file_posts(base_url: str, corpus: Corpus, ingest: Ingest, workers: int) -> dict[int, str]:
    """The other rooms' drawers one POST each, on several clients."""
    drawers = [d for d in corpus.drawers if d.route == "post"]

    def post(client: httpx.Client, index: int) -> str:
        drawer = corpus.drawers[index]
        body = {"content": drawer.content, "tags": [drawer.kind], "requested_by": REQUESTED_BY}
        return ok(
            client.post(f"/api/wings/{drawer.wing}/rooms/{drawer.room}/drawers", json=body), 201
        )["id"]

    ids, seconds = parallel(base_url, [d.index for d in drawers], post, workers)
    ingest.posted, ingest.post_secs, ingest.post_clients = len(drawers), seconds, workers
    print(f"    POST: {len(drawers):,} drawers, {per_sec(len(drawers) / seconds)}/s", flush=True)
    return dict(zip((d.index for d in drawers), ids, strict=True))


def put_vectors(
    base_url: str, work: Sequence[tuple[str, str]], projection: Projection, workers: int
) -> float:
    """`PUT /api/drawers/{id}/embedding` for each (drawer id, text); the wall seconds."""
    vectors = projection.vectors([text for _id, text in work])

    def put(client: httpx.Client, n: int) -> None:
        body = {"profile": PROFILE, "embedding": as_json(vectors[n])}
        ok(client.put(f"/api/drawers/{work[n][0]}/embedding", json=body), 200, 201, 204)

    _, seconds = parallel(base_url, range(len(work)), put, workers)
    print(f"    vectors: {len(work):,}, {per_sec(len(work) / seconds)}/s", flush=True)
    return seconds


def apply_changes(
    base_url: str, corpus: Corpus, ids: Sequence[str], workers: int
) -> tuple[dict[int, str], float]:
    """Supersede or invalidate the changing 5%; the replacements' ids by change order."""

    def change(client: httpx.Client, order: int) -> str | None:
        item = corpus.changes[order]
        body = {"requested_by": REQUESTED_BY}
        if item.content is not None:
            body["content"] = item.content
        answer = ok(client.post(f"/api/drawers/{ids[item.index]}/supersede", json=body))
        replacement = answer.get("replacement")
        return replacement["id"] if replacement else None

    made, seconds = parallel(base_url, range(len(corpus.changes)), change, workers)
    print(f"    changes: {len(made):,}, {per_sec(len(made) / seconds)}/s", flush=True)
    return {order: rid for order, rid in enumerate(made) if rid is not None}, seconds


def check_ids(client: httpx.Client, corpus: Corpus, ids: Sequence[str], seed: int) -> None:
    """A sample of the drawers read back by id: the derived ids must hold the texts sent."""
    rng = np.random.default_rng(seed)
    for index in rng.choice(len(ids), size=min(50, len(ids)), replace=False):
        drawer = ok(client.get(f"/api/drawers/{ids[int(index)]}"))
        if drawer["content"] != corpus.drawers[int(index)].content:
            raise RuntimeError(f"drawer {ids[int(index)]} does not hold corpus text {index}")


def palace_built(
    root: Path,
    corpus: Corpus,
    ids: list[str],
    replacements: dict[int, str],
    wings: list[dict[str, Any]],
    as_of: str,
    ingest: Ingest,
) -> Built:
    """What a filing of the corpus made, however it was filed."""
    return Built(
        root=root,
        size=corpus.size,
        seed=corpus.seed,
        ids=ids,
        replacements=replacements,
        wing_ids={wing["name"]: wing["id"] for wing in wings},
        as_of=as_of,
        ingest=ingest,
        migrations=migrations_checksum(),
        code=code_state(),
    )


def build_palace(
    root: Path, corpus: Corpus, projection: Projection, args: argparse.Namespace
) -> Built:
    ingest = Ingest()
    with running(root) as daemon:
        assert daemon.process is not None
        cpu_before, wall_before = cpu_seconds(daemon.process.pid), time.perf_counter()
        with httpx.Client(base_url=daemon.base_url, timeout=300) as client:
            found = file_checkpoints(client, corpus, ingest)
            found.update(file_posts(daemon.base_url, corpus, ingest, args.clients))
            ids = [found[index] for index in range(corpus.size)]
            check_ids(client, corpus, ids, corpus.seed)
            ingest.vector_clients = args.clients
            ingest.vectors = corpus.size
            ingest.vector_secs = put_vectors(
                daemon.base_url,
                [(ids[d.index], d.content) for d in corpus.drawers],
                projection,
                args.clients,
            )
            # The as_of instant: after every filing, before the first change (same host clock).
            time.sleep(0.05)
            as_of = dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")
            time.sleep(0.05)
            replacements, ingest.change_secs = apply_changes(
                daemon.base_url, corpus, ids, args.clients
            )
            ingest.superseded = len(replacements)
            ingest.invalidated = len(corpus.changes) - len(replacements)
            ingest.replacement_vectors = len(replacements)
            ingest.replacement_vector_secs = put_vectors(
                daemon.base_url,
                [(rid, corpus.changes[order].content or "") for order, rid in replacements.items()],
                projection,
                args.clients,
            )
            wings = ok(client.get("/api/wings"))["wings"]
        ingest.daemon_cpu_secs = cpu_seconds(daemon.process.pid) - cpu_before
        ingest.wall_secs = time.perf_counter() - wall_before
    return palace_built(root, corpus, ids, replacements, wings, as_of, ingest)


def file_through_services(root: Path, corpus: Corpus, projection: Projection) -> Built:
    """The same palace filed by the application services in this process, on the store a
    daemon started at `root` opens: drawers by `FilingService.file_batch` (what a checkpoint
    job calls) in batches of `SERVICE_BATCH`, their vectors by `EmbeddingService.store_vectors`,
    the changes by `RevisionService.supersede`. No daemon runs meanwhile, so the search indexes
    are built by the first daemon started on it. Through HTTP a million drawers would take this
    machine about ten hours (the rates in docs/benchmarks.md); this takes about half an hour.
    """
    from kernel.config import load_config
    from kernel.context import RequestContext
    from kernel.store import Store
    from memcastle_project.composition import compose
    from palace.filing import Filing

    ingest = Ingest(fill="services")
    env = {**Daemon(root).env, **daemon_env(root)}
    config = load_config(env=env)
    store = Store.from_config(config)
    store.open()
    cpu_before, wall_before = time.process_time(), time.perf_counter()
    try:
        store.migrate()
        services = compose(config, store)
        ctx = RequestContext.build(requested_by=REQUESTED_BY)
        profile = services.embeddings.profile(PROFILE)
        ids: list[str] = []
        for start in range(0, corpus.size, SERVICE_BATCH):
            batch = corpus.drawers[start : start + SERVICE_BATCH]
            began = time.perf_counter()
            filed = services.filing.file_batch(
                ctx, [(d.wing, d.room, Filing(content=d.content, tags=[d.kind])) for d in batch]
            )
            ingest.batch_secs += time.perf_counter() - began
            ingest.batches += 1
            if any(f.error is not None or not f.created for f in filed):
                raise RuntimeError(f"a drawer of the batch at {start} was not filed: {filed}")
            ids.extend(f.drawer["id"] for f in filed if f.drawer is not None)
            if ingest.batches % 50 == 0 or len(ids) == corpus.size:
                print(
                    f"    filed {len(ids):,} of {corpus.size:,}, "
                    f"{per_sec(len(ids) / ingest.batch_secs)} drawers/s",
                    flush=True,
                )
        ingest.checkpoint_items = len(ids)
        ingest.vectors = len(ids)
        ingest.vector_secs = store_vectors(
            services, profile, [(ids[d.index], d.content) for d in corpus.drawers], projection
        )
        time.sleep(0.05)
        as_of = dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")
        time.sleep(0.05)
        replacements: dict[int, str] = {}
        began = time.perf_counter()
        for order, item in enumerate(corpus.changes):
            body = {"requested_by": REQUESTED_BY}
            if item.content is not None:
                body["content"] = item.content
            answer = services.revisions.supersede(ctx, ids[item.index], body)
            if answer.get("replacement"):
                replacements[order] = answer["replacement"]["id"]
        ingest.change_secs = time.perf_counter() - began
        print(
            f"    changes: {len(corpus.changes):,}, "
            f"{per_sec(len(corpus.changes) / ingest.change_secs)}/s",
            flush=True,
        )
        ingest.superseded = len(replacements)
        ingest.invalidated = len(corpus.changes) - len(replacements)
        ingest.replacement_vectors = len(replacements)
        ingest.replacement_vector_secs = store_vectors(
            services,
            profile,
            [(rid, corpus.changes[order].content or "") for order, rid in replacements.items()],
            projection,
        )
        wings = services.hierarchy.list_wings(ctx)["wings"]
    finally:
        store.close()
    ingest.daemon_cpu_secs = time.process_time() - cpu_before
    ingest.wall_secs = time.perf_counter() - wall_before
    return palace_built(root, corpus, ids, replacements, wings, as_of, ingest)


def store_vectors(
    services: Any, profile: Any, work: Sequence[tuple[str, str]], projection: Projection
) -> float:
    """Each (drawer id, text)'s vector stored by the embedding service, `SERVICE_BATCH` at a
    time, as `PUT .../embedding` stores one (one window, unit length); the seconds it took."""
    seconds = 0.0
    for start in range(0, len(work), SERVICE_BATCH):
        chunk = work[start : start + SERVICE_BATCH]
        vectors = projection.vectors([text for _, text in chunk])
        began = time.perf_counter()
        services.embeddings.store_vectors(
            profile,
            {
                drawer_id: services.embeddings.check_vector(profile, as_json(v), "embedding")[
                    None, :
                ]
                for (drawer_id, _), v in zip(chunk, vectors, strict=True)
            },
        )
        seconds += time.perf_counter() - began
    print(f"    vectors: {len(work):,}, {per_sec(len(work) / max(seconds, 1e-9))}/s", flush=True)
    return seconds


def cached_palace(corpus: Corpus, projection: Projection, args: argparse.Namespace) -> Built:
    """The built palace of this size and seed: from the cache, else filed through a daemon."""
    key = f"{BUILD_VERSION}-{corpus.size}-seed{corpus.seed}"
    if args.fill == "services":
        key += "-services"
    root = args.cache_dir / key
    meta = root / "built.json"
    if meta.exists() and not args.rebuild:
        built = Built.from_json(json.loads(meta.read_text()))
        print(f"  using the palace cached in {root}", flush=True)
        if built.migrations != migrations_checksum():
            print(
                "  note: the schema migrations changed since it was built; the daemon applies "
                "the new ones at start-up",
                flush=True,
            )
        built.root = root
        return built
    partial = args.cache_dir / f"{key}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    shutil.rmtree(root, ignore_errors=True)
    partial.mkdir(parents=True)
    if args.fill == "services":
        print(f"  filing {corpus.size:,} drawers through the services in {partial}", flush=True)
        built = file_through_services(partial, corpus, projection)
    else:
        print(f"  filing {corpus.size:,} drawers through a daemon in {partial}", flush=True)
        built = build_palace(partial, corpus, projection, args)
    built.root = root
    (partial / "built.json").write_text(json.dumps(built.to_json()))
    partial.rename(root)
    return built


def copy_palace(built: Built, root: Path) -> None:
    root.mkdir(parents=True)
    shutil.copytree(built.root / "palace", root / "palace")


# Timing queries through HTTP


@dataclass
class CellTiming:
    samples: list[float] = field(default_factory=list)  # ms
    hits: list[int] = field(default_factory=list)
    problems: Counter[str] = field(default_factory=Counter)
    answers: dict[int, list[str]] = field(default_factory=dict)  # query number to hit ids

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def p95(self) -> float:
        return quantile(self.samples, 95)


@dataclass
class DaemonRun:
    size: int
    start_secs: float
    cells: dict[Cell, CellTiming]
    floor: dict[str, list[float]]  # route to ms
    daemon_cpu_secs: float
    busy_secs: float
    steal_secs: float
    wall_secs: float
    requests: int
    restarts: Restarts | None
    rebuild_secs: float | None  # the first start's wait for its indexes, when it built them
    resident_gib: float  # the daemon's resident memory after the timed queries
    peak_gib: float  # and at its peak so far
    index_dir: str
    index_mib: float
    log_problems: list[str]
    status: dict[str, Any]


def request_body(query: Query, vector: list[float], cell: Cell, built: Built) -> dict[str, Any]:
    search_filter: dict[str, Any] = {
        "temporal": "current" if cell.time == "current" else {"as_of": built.as_of}
    }
    if cell.scope == "wing":
        search_filter["wing"] = query.wing
    return {
        "text": query.text,
        "ranking": cell.ranking,
        "limit": LIMIT,
        "filter": search_filter,
        "profile": PROFILE,
        "query_embedding": vector,
    }


def check_answer(answer: dict[str, Any], query: Query, cell: Cell, built: Built) -> list[str]:
    """What is wrong with an answer, if anything: the ranking that ran, each hit's wing and its
    validity at the time asked for, no vector in a hit, no more than the limit."""
    problems = []
    if answer.get("ranking") != cell.ranking:
        problems.append(f"ranking {answer.get('ranking')!r}")
    hits = answer.get("results", [])
    if len(hits) > LIMIT:
        problems.append("more hits than the limit")
    at = parse_time(built.as_of) if cell.time == "as_of" else time.time()
    for hit in hits:
        if cell.scope == "wing" and hit.get("wing") != built.wing_ids.get(query.wing):
            problems.append("a hit out of the wing")
        valid_from = parse_time(hit["valid_from"])
        valid_to = parse_time(hit["valid_to"]) if hit.get("valid_to") else None
        if not (valid_from <= at and (valid_to is None or valid_to > at)):
            problems.append("a hit not valid at the time asked")
        if any(key in hit for key in ("embedding", "vector")):
            problems.append("a hit carries its vector")
    return problems


def time_queries(
    base_url: str,
    built: Built,
    queries: Sequence[Query],
    vectors: Sequence[list[float]],
    passes: int,
) -> tuple[dict[Cell, CellTiming], int]:
    """One untimed pass, then `passes` timed ones; in each, every cell for a query before the
    next query."""
    cells = {cell: CellTiming() for cell in CELLS}
    requests = 0
    with httpx.Client(base_url=base_url, timeout=120) as client:
        for timed in [False] + [True] * passes:
            for n, (query, vector) in enumerate(zip(queries, vectors, strict=True)):
                for cell in CELLS:
                    body = request_body(query, vector, cell, built)
                    start = time.perf_counter()
                    response = client.post("/api/search", json=body)
                    elapsed = (time.perf_counter() - start) * 1000
                    requests += 1
                    answer = ok(response)
                    if not timed:
                        timing = cells[cell]
                        timing.answers[n] = [hit["id"] for hit in answer["results"]]
                        timing.problems.update(check_answer(answer, query, cell, built))
                        continue
                    cells[cell].samples.append(elapsed)
                    cells[cell].hits.append(len(answer["results"]))
    return cells, requests


def time_floor(base_url: str, count: int) -> dict[str, list[float]]:
    """The cheapest requests, for the floor of any request on this machine."""
    floor: dict[str, list[float]] = {}
    with httpx.Client(base_url=base_url, timeout=60) as client:
        for route in ("/api/health", "/api/status"):
            for _ in range(10):
                ok(client.get(route))
            samples = []
            for _ in range(count):
                start = time.perf_counter()
                response = client.get(route)
                samples.append((time.perf_counter() - start) * 1000)
                ok(response)
            floor[route] = samples
    return floor


def first_answer(daemon: Daemon, body: dict[str, Any], started: float) -> tuple[float, list[str]]:
    """Seconds from `started` until the search answers, and the hits' ids."""
    with httpx.Client(base_url=daemon.base_url, timeout=600) as client:
        while True:
            response = client.post("/api/search", json=body)
            if response.status_code == 200:
                ids = [hit["id"] for hit in response.json()["results"]]
                return time.perf_counter() - started, ids
            if time.perf_counter() - started > START_TIMEOUT:
                raise TimeoutError(f"no answer to a search: {response.text[:300]}")
            time.sleep(0.05)


REBUILT = re.compile(r"search indexes rebuilt from (\d+) drawers in ([\d.]+) s")


@dataclass
class Restarts:
    """Seconds from the start of the process; and whether the indexes answer as before."""

    stop_secs: float
    intact_ready_secs: float
    intact_answer_secs: float
    intact_resident_gib: float  # after the answers with the indexes kept
    queries: int  # asked of each ranking, before and after each restart
    intact_same: dict[str, int]  # ranking to answers identical to those before the restarts
    rebuilt: Rebuilt | None  # None when the restart without the indexes was skipped


@dataclass
class Rebuilt:
    """The start after the index directory was removed."""

    ready_secs: float
    answer_secs: float
    logged: list[str]  # the daemon's own account of the rebuild
    same: dict[str, int]
    shared: dict[str, float]  # ranking to the mean share of hits kept


RESTART_QUERIES = 20


def answers(
    daemon: Daemon,
    built: Built,
    queries: Sequence[Query],
    vectors: Sequence[list[float]],
) -> dict[str, list[list[str]]]:
    """Each ranking's hits for the first queries, unscoped, at the `as_of` instant."""
    found: dict[str, list[list[str]]] = {}
    with httpx.Client(base_url=daemon.base_url, timeout=120) as client:
        for ranking in RANKINGS:
            cell = Cell(ranking, "unscoped", "as_of")
            found[ranking] = [
                [hit["id"] for hit in ok(client.post("/api/search", json=body))["results"]]
                for body in (
                    request_body(q, v, cell, built) for q, v in zip(queries, vectors, strict=False)
                )
            ]
    return found


def restarts(
    daemon: Daemon,
    built: Built,
    queries: Sequence[Query],
    vectors: Sequence[list[float]],
    index_dir: Path,
    *,
    rebuild: bool = True,
) -> Restarts:
    """Stop; start with the indexes on disk; with `rebuild`, stop, remove them and start
    again. The first answer is a hybrid query (so both indexes count); then each ranking's
    answers to the first queries are compared with those given before the restarts."""
    queries, vectors = queries[:RESTART_QUERIES], vectors[:RESTART_QUERIES]
    body = request_body(queries[0], vectors[0], Cell("hybrid", "unscoped", "as_of"), built)
    before = answers(daemon, built, queries, vectors)

    def same(now: dict[str, list[list[str]]]) -> dict[str, int]:
        return {r: sum(a == b for a, b in zip(before[r], now[r], strict=True)) for r in before}

    start = time.perf_counter()
    stop(daemon)
    stop_secs = time.perf_counter() - start
    start = time.perf_counter()
    intact_ready = start_daemon(daemon)
    intact_answer, _ = first_answer(daemon, body, start)
    intact_same = same(answers(daemon, built, queries, vectors))
    assert daemon.process is not None
    intact_resident = resident_gib(daemon.process.pid)
    rebuilt = None
    if rebuild:
        stop(daemon)
        shutil.rmtree(index_dir)
        log_start = len(daemon.log())
        start = time.perf_counter()
        rebuilt_ready = start_daemon(daemon)
        rebuilt_answer, _ = first_answer(daemon, body, start)
        after = answers(daemon, built, queries, vectors)
        logged = [
            f"{int(m.group(1)):,} drawers in {float(m.group(2)):.1f} s"
            for m in REBUILT.finditer(daemon.log()[log_start:])
        ]
        shared = {
            r: statistics.mean(
                len(set(a) & set(b)) / max(len(a), 1)
                for a, b in zip(before[r], after[r], strict=True)
            )
            for r in before
        }
        rebuilt = Rebuilt(rebuilt_ready, rebuilt_answer, logged, same(after), shared)
    return Restarts(
        stop_secs,
        intact_ready,
        intact_answer,
        intact_resident,
        len(queries),
        intact_same,
        rebuilt,
    )


def run_daemon(
    built: Built,
    root: Path,
    queries: Sequence[Query],
    vectors: Sequence[list[float]],
    args: argparse.Namespace,
) -> DaemonRun:
    if args.in_place:
        root = built.root
    else:
        copy_palace(built, root)
    daemon = Daemon(root, env=daemon_env(root))
    try:
        start_secs = start_daemon(daemon)
        assert daemon.process is not None
        print(f"  daemon ready in {start_secs:.1f} s", flush=True)
        # A cached palace whose indexes are of an older version is rebuilt while the daemon
        # serves (search answers 503 until then), and a large one opens its indexes while it
        # serves: neither is what is timed here.
        opening = time.perf_counter()
        with httpx.Client(base_url=daemon.base_url, timeout=60) as client:
            first_state = ok(client.get("/api/status"))["search"]["state"]
        wait_for(
            daemon.search_ready, timeout=REBUILD_WAIT_SECS, what="the search indexes", interval=1
        )
        waited = time.perf_counter() - opening
        rebuild_secs = waited if first_state == "rebuilding" else None
        print(f"  search ready {waited:.0f} s later (search {first_state} at first)", flush=True)
        print("  timing the HTTP floor", flush=True)
        floor = time_floor(daemon.base_url, args.floor)
        print(f"  timing {len(queries)} queries x {len(CELLS)} cells", flush=True)
        cpu_before, (busy_before, steal_before) = cpu_seconds(daemon.process.pid), host_cpu()
        wall_before = time.perf_counter()
        cells, requests = time_queries(daemon.base_url, built, queries, vectors, args.passes)
        wall = time.perf_counter() - wall_before
        daemon_cpu = cpu_seconds(daemon.process.pid) - cpu_before
        busy_after, steal_after = host_cpu()
        resident = resident_gib(daemon.process.pid)
        peak = resident_gib(daemon.process.pid, "VmHWM")
        with httpx.Client(base_url=daemon.base_url, timeout=60) as client:
            status = ok(client.get("/api/status"))
        index_dir = root / "palace" / args.index_dir
        index_mib = directory_size(index_dir) / 1024**2 if index_dir.exists() else 0.0
        restart = None
        if args.no_restart:
            pass
        elif index_dir.exists():
            # A palace filed through the services was rebuilt at the first start, timed above.
            rebuild = built.ingest.fill == "http"
            print(f"  restarts{', then a rebuild of ' + str(index_dir) if rebuild else ''}")
            restart = restarts(daemon, built, queries, vectors, index_dir, rebuild=rebuild)
        else:
            print(f"  no index directory at {index_dir}: restarts skipped", flush=True)
    finally:
        stop(daemon)
    return DaemonRun(
        size=built.size,
        start_secs=start_secs,
        cells=cells,
        floor=floor,
        daemon_cpu_secs=daemon_cpu,
        busy_secs=busy_after - busy_before,
        steal_secs=steal_after - steal_before,
        wall_secs=wall,
        requests=requests,
        restarts=restart,
        rebuild_secs=rebuild_secs,
        resident_gib=resident,
        peak_gib=peak,
        index_dir=str(index_dir.relative_to(root)),
        index_mib=index_mib,
        log_problems=log_problems(daemon.log()),
        status=status,
    )


# SurrealDB's own indexes


@dataclass
class NativeRun:
    size: int
    build: search_native.NativeBuild
    cells: dict[Cell, CellTiming]
    queries: int
    ef: int | None


def run_native(
    corpus: Corpus,
    projection: Projection,
    queries: Sequence[Query],
    vectors: Sequence[list[float]],
    args: argparse.Namespace,
) -> NativeRun:
    """The same cells on SurrealDB's own indexes, in this process; each pass of a cell stops
    early (after at least 5 queries) once it has taken `--native-budget` seconds."""
    path, build = search_native.cached(args.cache_dir, corpus, projection, args.rebuild)
    timeline = search_native.Timeline(corpus.size)
    native = search_native.Native(path, LIMIT, args.native_ef)
    cells = {cell: CellTiming() for cell in CELLS}
    count = min(args.native_queries, len(queries))
    try:
        for cell in CELLS:
            rank = native.ranking(cell.ranking)
            timing = cells[cell]
            for timed in (False, True):
                spent = 0.0
                for n in range(count):
                    query, vector = queries[n], vectors[n]
                    wing = query.wing if cell.scope == "wing" else None
                    at = timeline.as_of if cell.time == "as_of" else dt.datetime.now(dt.UTC)
                    start = time.perf_counter()
                    ids = rank(query.text, vector, wing, at)
                    elapsed = time.perf_counter() - start
                    spent += elapsed
                    if timed:
                        timing.samples.append(elapsed * 1000)
                        timing.hits.append(len(ids))
                    else:
                        timing.answers[n] = [str(i) for i in ids]
                    if n >= 4 and spent > args.native_budget:
                        break
            print(
                f"    {cell.label}: median {timing.median:,.1f} ms over {len(timing.samples)} "
                "queries",
                flush=True,
            )
    finally:
        native.close()
    return NativeRun(corpus.size, build, cells, count, args.native_ef)


def overlap(run: DaemonRun, native: NativeRun, built: Built, cell: Cell) -> float | None:
    """Mean share of the daemon's top hits that SurrealDB's answer has too, per query."""
    to_native = {drawer_id: str(index) for index, drawer_id in enumerate(built.ids)}
    to_native.update({rid: str(built.size + order) for order, rid in built.replacements.items()})
    shares = []
    for n, native_ids in native.cells[cell].answers.items():
        ours = [to_native.get(i, "?") for i in run.cells[cell].answers.get(n, [])]
        if ours:
            shares.append(len(set(ours) & set(native_ids)) / len(ours))
    return statistics.mean(shares) if shares else None


# The local profile


@dataclass
class LocalRun:
    available: bool
    note: str = ""
    drawers: int = 0
    tokens_median: float = 0.0
    seconds: float = 0.0
    query_ms: list[float] = field(default_factory=list)
    load_secs: float = 0.0


def run_local(corpus: Corpus, args: argparse.Namespace) -> LocalRun:
    """The built-in `local` provider in this process: `--local-drawers` texts of about 256
    tokens (drawers of the corpus joined until long enough) embedded in one call, then short
    queries one at a time."""
    try:
        from bench.search_local import LocalEmbedder
    except ImportError as exc:
        return LocalRun(False, f"the local provider could not be loaded: {exc}")
    try:
        start = time.perf_counter()
        embedder = LocalEmbedder()
        load_secs = time.perf_counter() - start
    except Exception as exc:  # reported, not fatal: the rest of the run stands
        return LocalRun(False, f"the local provider could not be started: {exc!r}")
    texts = []
    n = 0
    while len(texts) < args.local_drawers:
        text = corpus.drawers[n % corpus.size].content
        n += 1
        while embedder.tokens(text) < LOCAL_TOKENS - 16:
            text += " " + corpus.drawers[n % corpus.size].content
            n += 1
        texts.append(embedder.clip(text, LOCAL_TOKENS))
    tokens = [embedder.tokens(text) for text in texts]
    embedder.documents(texts[:2])  # warm-up
    start = time.perf_counter()
    embedder.documents(texts)
    seconds = time.perf_counter() - start
    queries = [q.text for q in corpus.queries(args.local_queries + 5, args.seed + 1)]
    query_ms = []
    for n, text in enumerate(queries):
        start = time.perf_counter()
        embedder.query(text)
        if n >= 5:  # the first few are warm-up
            query_ms.append((time.perf_counter() - start) * 1000)
    return LocalRun(
        True,
        embedder.describe(),
        len(texts),
        statistics.median(tokens),
        seconds,
        query_ms,
        load_secs,
    )


# Reporting


def ms(value: float) -> str:
    return f"{value:,.1f}" if value >= 10 else f"{value:.2f}"


def report_ingest(built: Built) -> None:
    ingest = built.ingest
    how = "through HTTP" if ingest.fill == "http" else "through the services in process"
    print(
        f"\n  palace: {built.size:,} drawers filed {how}, {ingest.superseded:,} superseded "
        f"and {ingest.invalidated:,} invalidated ({built.size + ingest.superseded:,} drawers in "
        f"all), {built.mib:,.0f} MiB on disk" + (" (cached)" if built.cached else "")
    )
    print(f"    built at {built.code}; as_of instant {built.as_of}")
    changes = ingest.superseded + ingest.invalidated
    change_rate = per_sec(changes / max(ingest.change_secs, 1e-9))
    replacement_rate = per_sec(
        ingest.replacement_vectors / max(ingest.replacement_vector_secs, 1e-9)
    )
    if ingest.fill == "services":
        print(
            f"    FilingService.file_batch: {ingest.checkpoint_items:,} drawers in "
            f"{ingest.batches:,} batches of {SERVICE_BATCH:,}: "
            f"{per_sec(ingest.checkpoint_items / ingest.batch_secs)} drawers/s"
        )
        print(
            f"    EmbeddingService.store_vectors: {ingest.vectors:,} vectors: "
            f"{per_sec(ingest.vectors / ingest.vector_secs)}/s; the replacements' "
            f"{ingest.replacement_vectors:,}: {replacement_rate}/s"
        )
        print(f"    RevisionService.supersede: {changes:,} changes, {change_rate}/s")
        print(f"    whole filing {ingest.wall_secs:,.0f} s, CPU {ingest.daemon_cpu_secs:,.0f} s")
        return
    print(
        f"    checkpoint jobs: {ingest.checkpoint_items:,} drawers in {ingest.checkpoint_jobs} "
        f"jobs of {CHECKPOINT_ITEMS:,}: "
        f"{per_sec(ingest.checkpoint_items / ingest.checkpoint_server_secs)} drawers/s server "
        "(completed_at - started_at), "
        f"{per_sec(ingest.checkpoint_items / ingest.checkpoint_end_to_end_secs)} end to end"
    )
    print(
        f"    POST .../drawers: {ingest.posted:,} drawers, {ingest.post_clients} clients: "
        f"{per_sec(ingest.posted / ingest.post_secs)} drawers/s"
    )
    print(
        f"    PUT .../embedding: {ingest.vectors:,} vectors, {ingest.vector_clients} clients: "
        f"{per_sec(ingest.vectors / ingest.vector_secs)} vectors/s; the replacements' "
        f"{ingest.replacement_vectors:,}: {replacement_rate}/s"
    )
    print(f"    POST .../supersede: {changes:,} changes, {change_rate}/s")
    print(f"    whole filing {ingest.wall_secs:,.0f} s, daemon CPU {ingest.daemon_cpu_secs:,.0f} s")


def report_run(run: DaemonRun, native: NativeRun | None, built: Built) -> None:
    health = statistics.median(run.floor["/api/health"])
    print(
        f"\n  daemon ready in {run.start_secs:.1f} s; index directory {run.index_dir} "
        f"{run.index_mib:,.0f} MiB"
    )
    for route, samples in run.floor.items():
        print(
            f"    GET {route}: median {ms(statistics.median(samples))} ms, "
            f"p95 {ms(quantile(samples, 95))} ms ({len(samples)} requests)"
        )
    samples = len(next(iter(run.cells.values())).samples)
    print(
        f"\n  POST /api/search, limit {LIMIT}, {samples} timed requests a cell, ms (client side, "
        "HTTP included)"
    )
    header = (
        f"    {'ranking  scope    time':<28} {'median':>8} {'p95':>8} {'hits':>5} {'target':>14}"
    )
    if native is not None:
        header += f" {'SurrealDB':>10} {'p95':>8} {'n':>3} {'ratio':>6} {'-floor':>6} {'top10':>6}"
    print(header)
    for cell in CELLS:
        timing = run.cells[cell]
        target = TARGET_MS.get(run.size, {}).get(cell.ranking)
        verdict = "" if target is None else ("met" if timing.median < target else "MISSED")
        line = (
            f"    {cell.label:<28} {ms(timing.median):>8} {ms(timing.p95):>8} "
            f"{statistics.mean(timing.hits):5.1f} "
            + f"{f'< {target:g} {verdict}' if target is not None else '':>14}"
        )
        if native is not None:
            theirs = native.cells[cell]
            ratio = theirs.median / timing.median
            server = timing.median - health
            ratio_server = theirs.median / server if server > 0 else float("inf")
            shared = overlap(run, native, built, cell)
            line += (
                f" {ms(theirs.median):>10} {ms(theirs.p95):>8} {len(theirs.samples):>3} "
                f"{ratio:6.1f} {ratio_server:6.1f} "
                + (f"{shared:6.0%}" if shared is not None else f"{'-':>6}")
            )
        print(line)
    problems = Counter()
    for timing in run.cells.values():
        problems.update(timing.problems)
    print(
        "    answers checked (scope, validity, ranking, no vector): "
        + (", ".join(f"{p}: {n}" for p, n in problems.items()) if problems else "all correct")
    )
    print(
        f"    during the timed queries ({run.wall_secs:.0f} s, {run.requests:,} requests): daemon "
        f"CPU {run.daemon_cpu_secs:.1f} s; the machine ({os.cpu_count()} cores) "
        f"{run.busy_secs:.1f} CPU s in all, {run.busy_secs - run.daemon_cpu_secs:.1f} s not "
        f"the daemon (this client and any other process); {run.steal_secs:.1f} s stolen"
    )
    if native is not None:
        build = native.build
        print(
            f"\n  SurrealDB's own indexes (in-process, no HTTP; {native.queries} queries, fewer "
            "where a cell ran out of its time budget; HNSW ef "
            f"{native.ef if native.ef is not None else 'max(4 k, 64)'}): "
            "ratio = SurrealDB median / daemon "
            "median; -floor = against the daemon's median minus the health check's; top10 = "
            "share of the daemon's hits SurrealDB also returned"
        )
        print(
            f"    built{' (cached)' if build.cached else ''}: {build.drawers:,} rows inserted in "
            f"{build.insert_secs:,.0f} s; indexes: "
            + ", ".join(f"{k} {v:,.1f} s" for k, v in build.index_secs.items())
            + f"; {build.mib:,.0f} MiB on disk"
        )
    print(
        f"    the daemon's resident memory after them {run.resident_gib:.2f} GiB, at its peak "
        f"{run.peak_gib:.2f} GiB"
        + (
            f"; its first start built the indexes in {run.rebuild_secs:,.0f} s"
            if run.rebuild_secs is not None
            else ""
        )
    )
    if run.restarts is not None:
        report_restarts(run.restarts, run.index_dir)
    if run.log_problems:
        print(f"  daemon log: {len(run.log_problems)} warnings or errors, the first:")
        for line in run.log_problems[:5]:
            print(f"    {line[:200]}")
    else:
        print("  daemon log: no warnings or errors")


def report_local(local: LocalRun) -> None:
    print("\nThe local profile, in this process")
    if not local.available:
        print(f"  not measured: {local.note}")
        return
    print(f"  {local.note}; loaded in {local.load_secs:.2f} s")
    print(
        f"  {local.drawers} drawers of {local.tokens_median:.0f} tokens (median) in one call: "
        f"{local.seconds:.2f} s, {per_sec(local.drawers / local.seconds)} drawers/s"
    )
    median = statistics.median(local.query_ms)
    print(
        f"  a short query (1-4 words), one at a time: median {ms(median)} ms, "
        f"p95 {ms(quantile(local.query_ms, 95))} ms ({len(local.query_ms)} queries)"
    )


def report_restarts(r: Restarts, index_dir: str) -> None:
    print(
        "\n  restarts, seconds from the start of the process: stop (SIGTERM) "
        f"{r.stop_secs:.1f}; with the indexes on disk: ready {r.intact_ready_secs:.1f}, "
        f"first answer {r.intact_answer_secs:.1f}, then resident memory "
        f"{r.intact_resident_gib:.2f} GiB"
        + (
            f"; after removing {index_dir}/: ready {r.rebuilt.ready_secs:.1f}, first answer "
            f"{r.rebuilt.answer_secs:.1f}"
            if r.rebuilt is not None
            else ""
        )
    )
    if r.rebuilt is not None:
        logged = "; ".join(r.rebuilt.logged) or "(nothing logged)"
        print(f"    the daemon logged: rebuilt from {logged}")
    print(
        f"    the same answers as before the restarts, of {r.queries} queries a ranking "
        "(unscoped, as_of): "
        + "; ".join(
            f"{k} {r.intact_same[k]} with the indexes kept"
            + (
                f", {r.rebuilt.same[k]} rebuilt ({r.rebuilt.shared[k]:.0%} of the hits kept)"
                if r.rebuilt is not None
                else ""
            )
            for k in r.intact_same
        )
    )


def report_targets(runs: Sequence[tuple[Built, DaemonRun, NativeRun | None]]) -> None:
    for built, run, native in runs:
        targets = TARGET_MS.get(built.size)
        if targets is None:
            continue
        print(f"\nTargets at {built.size:,} drawers (medians over HTTP)")
        for ranking in RANKINGS:
            worst = max(run.cells[c].median for c in CELLS if c.ranking == ranking)
            met = "met" if worst < targets[ranking] else "MISSED"
            print(
                f"  {ranking}: slowest cell {ms(worst)} ms, target < {targets[ranking]:g} ms: {met}"
            )
        if built.size == 1_000_000:
            report_million_targets(run)
        if native is not None and built.size == 100_000:
            ratios = [native.cells[c].median / run.cells[c].median for c in CELLS]
            met = "met" if min(ratios) >= TARGET_RATIO else "MISSED"
            print(
                f"  against SurrealDB's own indexes: {min(ratios):.1f} to {max(ratios):.1f} times "
                f"faster (HTTP included), target at least {TARGET_RATIO:g}: {met}"
            )


def report_million_targets(run: DaemonRun) -> None:
    memory = max(run.resident_gib, run.restarts.intact_resident_gib if run.restarts else 0.0)
    met = "met" if memory <= TARGET_RESIDENT_GIB else "MISSED"
    print(
        f"  the daemon's resident memory: {memory:.2f} GiB, target at most "
        f"{TARGET_RESIDENT_GIB:g}: {met} (at its peak {run.peak_gib:.2f} GiB)"
    )
    if run.restarts is None:
        return
    answered = run.restarts.intact_answer_secs
    met = "met" if answered <= TARGET_RESTART_SECS else "MISSED"
    print(
        f"  a restart with the indexes on disk: first answer after {answered:.1f} s, target "
        f"at most {TARGET_RESTART_SECS:g}: {met}"
    )


def report(
    runs: Sequence[tuple[Built, DaemonRun, NativeRun | None]],
    local: LocalRun | None,
    args: argparse.Namespace,
    load_before: Sequence[float],
    probes: tuple[float, float],
    queries: Sequence[Query],
) -> None:
    print_machine(load_before, probes)
    words = Counter(len(q.text.split()) for q in queries)
    print(
        f"\nQueries: {len(queries)}, "
        + ", ".join(f"{words[n]} of {n} word{'s' if n > 1 else ''}" for n in sorted(words))
        + f"; e.g. {', '.join(repr(q.text) for q in queries[:4])}"
    )
    rooms = ", ".join(f"{room} {share:.0%} ({route})" for room, share, _k, route in ROOMS)
    print(f"Palace layout: {len(WINGS)} wings; rooms by share of the drawers: {rooms}")
    for built, run, native in runs:
        print(f"\n{built.size:,} drawers")
        report_ingest(built)
        report_run(run, native, built)
    if local is not None:
        report_local(local)
    report_targets(runs)


# Running


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", default="10000,100000", help="palace sizes, comma-separated (10000,100000)"
    )
    parser.add_argument("--queries", type=int, default=100, help="queries (100)")
    parser.add_argument("--passes", type=int, default=3, help="timed passes over them (3)")
    parser.add_argument(
        "--native-queries",
        type=int,
        default=30,
        help="queries run on SurrealDB's own indexes, the first of the same set (30)",
    )
    parser.add_argument(
        "--native-budget",
        type=float,
        default=30.0,
        help="seconds of queries after which a SurrealDB cell's pass stops (30)",
    )
    parser.add_argument(
        "--native-ef",
        type=int,
        default=None,
        help="SurrealDB's HNSW search breadth, ef (max(4 k, 64)); 512 found 95%% of the exact "
        "top 10 at 100,000 drawers",
    )
    parser.add_argument("--no-native", action="store_true", help="skip SurrealDB's own indexes")
    parser.add_argument("--no-local", action="store_true", help="skip the local profile")
    parser.add_argument(
        "--no-restart", action="store_true", help="skip the restarts and the index rebuild"
    )
    parser.add_argument(
        "--local-drawers", type=int, default=64, help="drawers of ~256 tokens embedded (64)"
    )
    parser.add_argument("--local-queries", type=int, default=50, help="short queries embedded (50)")
    parser.add_argument(
        "--floor", type=int, default=200, help="requests timed for the HTTP floor (200)"
    )
    parser.add_argument(
        "--clients", type=int, default=4, help="parallel HTTP clients for filing (4)"
    )
    parser.add_argument(
        "--index-dir",
        default="search",
        help="the daemon's index directory, under the palace (search)",
    )
    parser.add_argument(
        "--fill",
        choices=("http", "services"),
        default="http",
        help="file the palace through a daemon's HTTP API (http), or through the application "
        "services in this process (services: a million drawers in about half an hour)",
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the corpus and queries (1)")
    parser.add_argument(
        "--cache-dir", type=Path, default=CACHE_DIR, help=f"where palaces are kept ({CACHE_DIR})"
    )
    parser.add_argument(
        "--rebuild", action="store_true", help="build the palaces again even if cached"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a small run: 2,000 drawers, 30 queries, one pass, 10 on SurrealDB",
    )
    parser.add_argument(
        "--in-place",
        action="store_true",
        help="run the daemon on the cached palace itself, not a copy (a million drawers take "
        "about 30 GB); the indexes it builds stay with it",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the run's palace copies and daemon logs"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.queries, args.passes = "2000", 30, 1
        args.native_queries, args.local_drawers, args.local_queries = 10, 16, 20
    try:
        args.size_list = [int(size) for size in args.sizes.split(",")]
    except ValueError:
        parser.error("--sizes is a comma-separated list of numbers")
    if any(size < 200 for size in args.size_list) or args.queries < 1 or args.passes < 1:
        parser.error("sizes must be at least 200, --queries and --passes positive")
    return args


def run(scratch: Path, args: argparse.Namespace) -> None:
    load_before = os.getloadavg()
    probe_before = cpu_probe()
    runs = []
    queries: list[Query] = []
    for size in args.size_list:
        print(f"{size:,} drawers", flush=True)
        corpus = Corpus(size, args.seed)
        projection = Projection(args.seed)
        queries = corpus.queries(args.queries, args.seed)
        vectors = [as_json(v) for v in projection.vectors([q.text for q in queries])]
        built = cached_palace(corpus, projection, args)
        daemon_run = run_daemon(built, scratch / f"daemon-{size}", queries, vectors, args)
        native = None
        if not args.no_native:
            print("  the same queries on SurrealDB's own indexes", flush=True)
            native = run_native(corpus, projection, queries, vectors, args)
        runs.append((built, daemon_run, native))
    local = None
    if not args.no_local:
        print("the local profile", flush=True)
        local = run_local(Corpus(2000, args.seed), args)
    probes = (probe_before, cpu_probe())
    report(runs, local, args, load_before, probes, queries)


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    if args.keep:
        scratch = Path(tempfile.mkdtemp(prefix="memcastle-bench-search-"))
        run(scratch, args)
        print(f"\nkept {scratch}")
        return 0
    with tempfile.TemporaryDirectory(prefix="memcastle-bench-search-") as name:
        run(Path(name), args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
