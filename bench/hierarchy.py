"""How fast the palace hierarchy is over HTTP, on a palace of realistic size.

Run from the repository root: `.venv/bin/python bench/hierarchy.py` (or `make bench`);
`--drawers 2000` gives a quick run. It files drawers across 20 wings of 10 rooms, then times the
hierarchy reads through a real daemon (`manage.py serve` in a subprocess), the way a client sees
them. It measures and reports; it is not a test, so it exits 0 whatever the figures are.

Filing starts with a sample POSTed through the REST API by a few concurrent clients, which gives
the write rate. If filing the whole palace at that rate would take longer than `--http-budget`
(10 minutes), the rest is written in-process in batched INSERTs while the daemon is stopped (the
embedded palace is locked by whoever opens it), and the daemon is started again. Reads are always
timed over HTTP; then, with the daemon stopped, the same reads are timed as in-process service
calls, which shows how much of each request the HTTP stack takes.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import importlib.metadata
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from kernel.config import load_config  # noqa: E402
from kernel.context import RequestContext  # noqa: E402
from kernel.store import Store  # noqa: E402
from palace import drawers  # noqa: E402
from palace.hierarchy import HierarchyService  # noqa: E402
from palace.repositories.filing import FilingRepository  # noqa: E402
from palace.repositories.hierarchy import HierarchyRepository  # noqa: E402
from tests.support.daemon import Daemon  # noqa: E402
from tests.support.waits import wait_for  # noqa: E402

WINGS = 20
ROOMS_PER_WING = 10
ROOMS = WINGS * ROOMS_PER_WING
WORDS_PER_DRAWER = 30
INSERT_BATCH = 250
SEARCH_CATCH_UP_TIMEOUT = 1800.0
REQUESTED_BY = "bench"
LISTING_TARGET_MS = 50.0
SINGLE_READ_TARGET_MS = 5.0

# Enough words that no two generated drawers share their content: an unnamed drawer whose content
# is already in its room would not be filed twice.
VOCABULARY = (
    "release checklist deploy friday rollback database migration postgres surreal index query "
    "latency budget review alice bob carol dave team decided agreed because outage tuesday "
    "customer invoice billing service cache redis queue worker retry timeout config token rotate "
    "weekly meeting notes design document endpoint schema version python django daphne flaky "
    "coverage benchmark memory drawer room wing palace agent prompt context window summary search "
    "ranking vector lexical stemming travel flight hotel receipt lunch coffee garden tomato basil "
    "recipe oven minutes family birthday gift book chapter author library monday morning evening "
    "before after never always usually sometimes quickly slowly the a of to in on for with and "
    "but not was is will should could must bug fix ticket sprint estimate owner backup restore"
)
WORDS = VOCABULARY.split()


@dataclass(frozen=True)
class DrawerSpec:
    """One drawer to file; generated from its index, so every run files the same palace."""

    index: int
    wing: str
    room: str
    name: str | None
    content: str

    def body(self) -> dict[str, object]:
        body: dict[str, object] = {
            "content": self.content,
            "tags": ["bench"],
            "requested_by": REQUESTED_BY,
        }
        if self.name is not None:
            body["name"] = self.name
        return body


@dataclass(frozen=True)
class WriteResult:
    how: str
    drawers: int
    created: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.drawers / self.seconds if self.seconds else 0.0


@dataclass(frozen=True)
class Timing:
    operation: str
    samples_ms: list[float]
    target_ms: float | None
    in_process_ms: list[float] | None = None

    def quantile(self, percent: int) -> float:
        return statistics.quantiles(self.samples_ms, n=100, method="inclusive")[percent - 1]

    @property
    def median(self) -> float:
        return statistics.median(self.samples_ms)


def room_names(slot: int) -> tuple[str, str]:
    """Slot 0-199 to its (wing, room): ten consecutive slots share a wing."""
    return f"wing-{slot // ROOMS_PER_WING:02d}", f"room-{slot % ROOMS_PER_WING:02d}"


def drawer_spec(index: int, seed: int) -> DrawerSpec:
    """Drawers go round-robin over the rooms, so any prefix of the plan covers the palace evenly;
    every other drawer of a room is named, with a `/` in the name as mined drawers have."""
    wing, room = room_names(index % ROOMS)
    rng = random.Random(seed * 1_000_003 + index)
    words = rng.choices(WORDS, k=WORDS_PER_DRAWER)
    content = " ".join(words).capitalize() + "."
    named = (index // ROOMS) % 2 == 1
    name = f"notes/{index:06d}.md" if named else None
    return DrawerSpec(index, wing, room, name, content)


def plan(drawers: int, seed: int) -> list[DrawerSpec]:
    return [drawer_spec(index, seed) for index in range(drawers)]


# Writing


def file_over_http(base_url: str, specs: Sequence[DrawerSpec], writers: int) -> WriteResult:
    """POST every drawer with `writers` keep-alive clients working in parallel."""

    def work(part: Sequence[DrawerSpec]) -> int:
        created = 0
        with httpx.Client(base_url=base_url, timeout=60) as client:
            for spec in part:
                response = client.post(
                    f"/api/wings/{spec.wing}/rooms/{spec.room}/drawers", json=spec.body()
                )
                if response.status_code not in (200, 201):
                    raise RuntimeError(f"filing drawer {spec.index} failed: {response.text}")
                created += response.status_code == 201
        return created

    parts = [specs[k::writers] for k in range(writers)]
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=writers) as pool:
        created = sum(pool.map(work, parts))
    return WriteResult(f"HTTP, {writers} clients", len(specs), created, time.perf_counter() - start)


def drawer_record(spec: DrawerSpec, wing_id: str, room_id: str) -> dict[str, object]:
    """The row `FilingService.create_drawer` writes for this body; keep the two in step."""
    now = dt.datetime.now(dt.UTC)
    record: dict[str, object] = {
        "id": str(uuid.uuid4()),
        "wing": wing_id,
        "room": room_id,
        # The content, its digests and deduplication keys: without them the daemon would
        # derive the keys of every drawer at its next start.
        **drawers.derived(spec.content),
        "source": drawers.parse_source(None),
        "tags": ["bench"],
        "provenance": {"requested_by": REQUESTED_BY, "job_id": None},
        "valid_from": now,
        "created_at": now,
        "updated_at": now,
    }
    if spec.name is not None:
        record["name"] = spec.name
    return record


def open_palace(root: Path) -> Store:
    """The palace the daemon serves, opened in this process (only while the daemon is stopped)."""
    env = {"MEMCASTLE_PALACE_PATH": str(root / "palace"), "XDG_CONFIG_HOME": str(root / "config")}
    store = Store.from_config(load_config(env=env))
    store.open()
    return store


def file_in_process(root: Path, specs: Sequence[DrawerSpec]) -> WriteResult:
    """Batched INSERTs straight into the palace; the daemon must not be running.

    Wings and rooms are made by the service, as the API would; drawers are inserted in batches,
    and the database maintains the count tables in the same transaction as each batch.
    """
    store = open_palace(root)
    try:
        store.migrate()
        service = HierarchyService(HierarchyRepository(store))
        keys = FilingRepository(store)
        ctx = RequestContext.build(requested_by=REQUESTED_BY)
        rooms: dict[tuple[str, str], dict[str, Any]] = {}
        for slot in range(ROOMS):
            wing, room = room_names(slot)
            rooms[(wing, room)] = service.create_room(ctx, wing, {"name": room})
        start = time.perf_counter()
        for first in range(0, len(specs), INSERT_BATCH):
            batch = specs[first : first + INSERT_BATCH]
            rows = [
                drawer_record(
                    spec, rooms[(spec.wing, spec.room)]["wing"], rooms[(spec.wing, spec.room)]["id"]
                )
                for spec in batch
            ]
            store.query("INSERT INTO drawer $rows RETURN NONE", {"rows": rows})
            # As the daemon does in the drawers' own transaction.
            keys.index_dedup_keys(rows)
        seconds = time.perf_counter() - start
    finally:
        store.close()
    return WriteResult(
        f"in-process INSERT, batches of {INSERT_BATCH}", len(specs), len(specs), seconds
    )


def fill_palace(
    daemon: Daemon, specs: Sequence[DrawerSpec], args: argparse.Namespace
) -> list[WriteResult]:
    """File a sample over HTTP; if the whole palace would take longer than the budget that way,
    stop the daemon, write the rest in-process and start it again."""
    sample = specs[: args.http_sample]
    results = [file_over_http(daemon.base_url, sample, args.writers)] if sample else []
    rest = specs[len(sample) :]
    if not rest:
        return results
    projected = len(specs) / results[0].rate if results else float("inf")
    if projected <= args.http_budget:
        results.append(file_over_http(daemon.base_url, rest, args.writers))
        return results
    print(
        f"filing {len(specs):,} drawers over HTTP would take about {projected:,.0f} s; "
        f"writing the remaining {len(rest):,} in-process",
        flush=True,
    )
    daemon.stop()
    results.append(file_in_process(daemon.root, rest))
    daemon.start()
    # The search indexes read what was written in-process from the change feed while the
    # daemon serves; the reads are not timed against that.
    wait_for(daemon.search_ready, timeout=SEARCH_CATCH_UP_TIMEOUT, what="search to catch up")
    return results


# Reading


@dataclass(frozen=True)
class Targets:
    wings: list[str]
    rooms: list[tuple[str, str]]
    named: list[tuple[str, str, str]]
    ids: list[str]


def drawer_ids(client: httpx.Client, rooms: Sequence[tuple[str, str]]) -> list[str]:
    """The ids on the first page of every room; this pass also warms the daemon up."""
    ids: list[str] = []
    for wing, room in rooms:
        page = get_ok(client, f"/api/wings/{wing}/rooms/{room}/drawers").json()
        ids.extend(drawer["id"] for drawer in page["drawers"])
    return ids


def targets(client: httpx.Client, specs: Sequence[DrawerSpec]) -> Targets:
    rooms = sorted({(spec.wing, spec.room) for spec in specs})
    return Targets(
        wings=sorted({wing for wing, _ in rooms}),
        rooms=rooms,
        named=[(s.wing, s.room, s.name) for s in specs if s.name is not None],
        ids=drawer_ids(client, rooms),
    )


def get_ok(client: httpx.Client, path: str) -> httpx.Response:
    response = client.get(path)
    if response.status_code != 200:
        raise RuntimeError(f"GET {path} answered {response.status_code}: {response.text}")
    return response


Target = tuple[str, ...]


@dataclass(frozen=True)
class Operation:
    """A timed read: what to read (picked at random), its URL, and the same read as a service
    call, which shows how much of the time the HTTP stack takes."""

    label: str
    target_ms: float | None
    pick: Callable[[random.Random], Target]
    path: Callable[[Target], str]
    call: Callable[[HierarchyService, RequestContext, Target], object] | None


def _drawer_path(target: Target) -> str:
    wing, room, name = target
    return f"/api/wings/{wing}/rooms/{room}/drawers/{quote(name, safe='/')}"


def operations(found: Targets) -> list[Operation]:
    """The health check touches no store: it is the floor that the HTTP stack alone costs."""
    return [
        Operation(
            "GET /api/health (no store)", None, lambda rng: (), lambda t: "/api/health", None
        ),
        Operation(
            "GET /api/wings",
            LISTING_TARGET_MS,
            lambda rng: (),
            lambda t: "/api/wings",
            lambda service, ctx, t: service.list_wings(ctx),
        ),
        Operation(
            "GET /api/wings/{w}/rooms",
            LISTING_TARGET_MS,
            lambda rng: (rng.choice(found.wings),),
            lambda t: f"/api/wings/{t[0]}/rooms",
            lambda service, ctx, t: service.list_rooms(ctx, *t),
        ),
        Operation(
            "GET .../rooms/{r}/drawers (50)",
            LISTING_TARGET_MS,
            lambda rng: rng.choice(found.rooms),
            lambda t: f"/api/wings/{t[0]}/rooms/{t[1]}/drawers",
            lambda service, ctx, t: service.list_drawers(ctx, *t),
        ),
        Operation(
            "GET .../drawers/{name}",
            SINGLE_READ_TARGET_MS,
            lambda rng: rng.choice(found.named),
            _drawer_path,
            lambda service, ctx, t: service.show_drawer(ctx, *t),
        ),
        Operation(
            "GET /api/drawers/{id}",
            SINGLE_READ_TARGET_MS,
            lambda rng: (rng.choice(found.ids),),
            lambda t: f"/api/drawers/{t[0]}",
            lambda service, ctx, t: service.show_drawer_by_id(ctx, *t),
        ),
    ]


def measure(action: Callable[[], object], warmup: int, repeat: int) -> list[float]:
    """Milliseconds per call of `action`, after `warmup` untimed calls."""
    for _ in range(warmup):
        action()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def time_reads(
    base_url: str, specs: Sequence[DrawerSpec], args: argparse.Namespace
) -> tuple[Targets, list[Timing]]:
    """One keep-alive client, one operation at a time: latency as a single client sees it."""
    rng = random.Random(args.seed)
    timings = []
    with httpx.Client(base_url=base_url, timeout=60) as client:
        found = targets(client, specs)
        for op in operations(found):
            samples = measure(
                lambda op=op: get_ok(client, op.path(op.pick(rng))), args.warmup, args.repeat
            )
            timings.append(Timing(op.label, samples, op.target_ms))
    return found, timings


def time_in_process(
    root: Path, found: Targets, timings: list[Timing], args: argparse.Namespace
) -> list[Timing]:
    """The same reads as service calls in this process, with the daemon stopped."""
    rng = random.Random(args.seed)
    store = open_palace(root)
    try:
        service = HierarchyService(HierarchyRepository(store))
        ctx = RequestContext.build()
        completed = []
        for op, timing in zip(operations(found), timings, strict=True):
            samples = None
            if op.call is not None:
                call = op.call
                samples = measure(
                    lambda op=op, call=call: call(service, ctx, op.pick(rng)),
                    args.warmup,
                    args.repeat,
                )
            completed.append(dataclasses.replace(timing, in_process_ms=samples))
    finally:
        store.close()
    return completed


# Reporting


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_gib() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 1024**2:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def engine_version() -> str:
    """The embedded engine's own answer; an in-memory database costs a few milliseconds."""
    from surrealdb import Surreal

    db = Surreal("mem://")
    db.connect()
    try:
        return str(db.version())
    finally:
        db.close()


def machine() -> list[tuple[str, str]]:
    return [
        ("CPU", f"{cpu_model()}, {os.cpu_count()} cores"),
        ("memory", memory_gib()),
        ("OS", f"{platform.system()} {platform.release()}"),
        ("Python", platform.python_version()),
        ("SurrealDB SDK", importlib.metadata.version("surrealdb")),
        ("SurrealDB engine", engine_version()),
        ("Django", importlib.metadata.version("django")),
        ("Daphne", importlib.metadata.version("daphne")),
    ]


def directory_size(path: Path) -> int:
    return sum(entry.stat().st_size for entry in path.rglob("*") if entry.is_file())


def verdict(timing: Timing) -> str:
    if timing.target_ms is None:
        return "-"
    met = "met" if timing.median < timing.target_ms else "MISSED"
    return f"< {timing.target_ms:g} ms: {met}"


def report(
    specs: Sequence[DrawerSpec],
    writes: Sequence[WriteResult],
    timings: Sequence[Timing],
    root: Path,
    args: argparse.Namespace,
) -> None:
    print("\nMachine")
    for key, value in machine():
        print(f"  {key:<17} {value}")
    palace_mib = directory_size(root / "palace") / 1024**2
    print(
        f"\nPalace: {len(specs):,} drawers, {WINGS} wings, {ROOMS} rooms "
        f"(embedded surrealkv, store.sync=every), {palace_mib:,.0f} MiB on disk"
    )
    print("\nFiling")
    for write in writes:
        print(
            f"  {write.how:<36} {write.drawers:>8,} drawers in {write.seconds:7.1f} s"
            f"  = {write.rate:7,.0f} drawers/s ({write.created:,} created)"
        )
    print(f"\nReads over HTTP, one keep-alive client, {args.repeat} requests each (ms)")
    print(
        f"  {'operation':<32} {'median':>8} {'p95':>8} {'p99':>8}   {'target (median)':<20}"
        "in-process median"
    )
    for timing in timings:
        in_process = (
            f"{statistics.median(timing.in_process_ms):8.2f}" if timing.in_process_ms else "-"
        )
        print(
            f"  {timing.operation:<32} {timing.median:8.2f} {timing.quantile(95):8.2f} "
            f"{timing.quantile(99):8.2f}   {verdict(timing):<20}{in_process}"
        )
    print("  (in-process: the same reads as HierarchyService calls, without HTTP)")


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drawers", type=int, default=100_000, help="drawers to file (100000)")
    parser.add_argument("--repeat", type=int, default=200, help="timed reads per operation (200)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed reads per operation (20)")
    parser.add_argument("--writers", type=int, default=8, help="concurrent HTTP writers (8)")
    parser.add_argument(
        "--http-sample",
        type=int,
        default=5_000,
        help="drawers filed over HTTP to measure the write rate (5000)",
    )
    parser.add_argument(
        "--http-budget",
        type=float,
        default=600.0,
        help="seconds filing everything over HTTP may take before the rest is written "
        "in-process (600)",
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the content and read order")
    parser.add_argument("--keep", action="store_true", help="keep the palace and daemon log")
    args = parser.parse_args(argv)
    if args.drawers < 1 or args.repeat < 2 or args.writers < 1 or args.http_sample < 0:
        parser.error("--drawers and --writers must be positive, --repeat at least 2")
    return args


def run(root: Path, args: argparse.Namespace) -> None:
    specs = plan(args.drawers, args.seed)
    daemon = Daemon(root)
    print(f"starting the daemon on a new palace in {root}", flush=True)
    daemon.start()
    try:
        print(f"filing {len(specs):,} drawers", flush=True)
        writes = fill_palace(daemon, specs, args)
        print(f"timing reads against {daemon.base_url}", flush=True)
        found, timings = time_reads(daemon.base_url, specs, args)
    finally:
        daemon.stop()
    timings = time_in_process(root, found, timings, args)
    report(specs, writes, timings, root, args)


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    if args.keep:
        root = Path(tempfile.mkdtemp(prefix="memcastle-bench-"))
        run(root, args)
        print(f"\nkept {root}")
        return 0
    with tempfile.TemporaryDirectory(prefix="memcastle-bench-") as name:
        run(Path(name), args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
