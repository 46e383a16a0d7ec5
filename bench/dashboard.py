"""How soon the dashboard's Overview and Palace pages are interactive on a palace of 100,000
drawers, in the machine's Chromium, and how much JavaScript and CSS the dashboard loads.

Run from the repository root: `.venv/bin/python bench/dashboard.py`; `--drawers 10000 --rounds 3`
gives a quick run. It needs Debian's Chromium (`/usr/bin/chromium`, which the browser tests use
too) and Playwright for Python (a dev dependency). It measures and reports; it is not a test, so
it exits 0 whatever the figures are. Targets (issue 24): each page interactive within 1 s of
navigation; the JavaScript and CSS the dashboard loads at most 300 KB uncompressed.

1. **Palace.** `--drawers` drawers (100,000) over the 20 wings of `bench/search_corpus.py`, their
   sizes skewed as real projects are (wing k holds a share proportional to 1 / k, so the first
   holds 28%), each wing with the corpus's 5 rooms (`entries` 55% of a wing, `diary` 25%, ...)
   and 2 to 12 rooms of mined files (named drawers, `source.kind = file`): about 250 rooms, the
   largest (`billing-api/entries`) about 13,500 drawers. The texts are the search corpus's
   developer memories (30 to 200 words). The drawers are written straight into an embedded
   palace in batched INSERTs with the fields the service writes, as `bench/writes.py` does; then
   a daemon is started on it once, rebuilds its search indexes, and runs `--jobs` (300) demo
   jobs, so the Overview has job history to show; it is stopped. The result is cached under the
   temporary directory (`/tmp/memcastle-bench-dashboard/`), keyed by a version string, the
   schema, the fields derived from content, the size, the jobs and the seed; later runs copy it.
2. **Daemon.** `manage.py serve` (`tests.support.daemon.Daemon`) on the copy, with the dashboard
   on (`MEMCASTLE_WEB_ENABLE=true`) and token authentication on, as in real use; stopped by its
   pid at the end, on error too.
3. **Pages.** The Overview, the Palace page (the wings), the rooms of the wing with the most
   drawers, the first and the last page of drawers of its largest room (the Palace page pages a
   room 50 drawers at a time), and the first page of a room of median size. Each is measured two
   ways: **load**, a new browser context (nothing cached, the token already in the tab's
   sessionStorage as after signing in) opening `/ui/#/<page>`, timed from the navigation's start
   (`performance.timeOrigin`), which includes fetching and running the dashboard's modules and
   the shell's `/api/status`; and **in-app**, the page reached from another page of the same tab
   by changing the address's hash (what a click in the navigation does), timed from the change.
   One untimed round, then `--rounds` (10), the pages interleaved in each round.
4. **Interactive**, measured in the page by a script injected before the dashboard's own: (a)
   *data rendered*: the page's heading (`h1#page-title`) names the page, nothing is marked
   `aria-busy` ("Loading…"), and an element that only the page's data produces is in the DOM (the
   Overview's job outcome legend, the wings' or rooms' table rows, the drawer pager showing the
   expected range and total, such as "1-50 of 13912"), noted by a MutationObserver the moment
   the DOM holds them; then (b) *main thread idle*: the first `requestIdleCallback` after (a),
   which Chromium runs only once the frame holding the data is produced and no task is waiting.
   The page is interactive at (b), or, if a long task (over 50 ms, from a `longtask`
   PerformanceObserver) ends later or starts within 300 ms after (b), at that task's end.
   The report gives too when the data was rendered, for a load when the dashboard's modules had
   been fetched and run (`DOMContentLoaded`), the long tasks, and the page's slowest `/api` call.
5. **Bytes.** Every response of a load whose resource type is `script` or `stylesheet`, its body
   read from Playwright (uncompressed: what the browser parses); the HTML and the API's JSON are
   given apart. The browser's resource timing of every `/api` call of a page says where its time
   went.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import datetime as dt
import hashlib
import itertools
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from bench.hierarchy import directory_size  # noqa: E402
from bench.jobs import ok, quantile  # noqa: E402
from bench.mine import cpu_probe, print_machine  # noqa: E402
from bench.search_corpus import WINGS, Writer, target_words  # noqa: E402
from bench.writes import derived, log_problems, open_palace, stop  # noqa: E402
from kernel.clock import off_whole_second, utc_now  # noqa: E402
from kernel.context import RequestContext  # noqa: E402
from kernel.store import Store, bundled_migrations  # noqa: E402
from palace.hierarchy import HierarchyService  # noqa: E402
from palace.repositories.filing import FilingRepository  # noqa: E402
from palace.repositories.hierarchy import HierarchyRepository  # noqa: E402
from tests.support.auth import AUTH_ENV, SECRET  # noqa: E402
from tests.support.browser import ARGS, CHROMIUM, WIDE  # noqa: E402
from tests.support.daemon import Daemon  # noqa: E402
from tests.support.waits import wait_for  # noqa: E402
from web.files import DashboardFiles  # noqa: E402

# Bump when the palace the benchmark builds changes, so a cached palace of the old shape is not
# reused.
BUILD_VERSION = "dashboard-1"
CACHE_DIR = Path(tempfile.gettempdir()) / "memcastle-bench-dashboard"
REQUESTED_BY = "bench"
INSERT_BATCH = 500
# A daemon on a palace filed straight into the store rebuilds its search indexes before search
# is ready; a start that applies new migrations may take a while too.
START_TIMEOUT = 1800.0
PAGE_TIMEOUT_MS = 60_000
PAGE_SIZE = 50  # the Palace page's drawers a page (web/dist/js/pages/palace.js)
QUIET_MS = 300  # how long after the idle callback a long task still counts
TARGET_MS = 1000.0
TARGET_BYTES = 300 * 1000  # 300 KB, read strictly (not KiB)
DEMO_JOB = {"type": "demo", "steps": 3, "step_ms": 0}

# Rooms of every wing: (name, weight in its wing, kind of text of bench/search_corpus.py).
STANDARD_ROOMS = (
    ("entries", 55.0, "note"),
    ("diary", 25.0, "diary"),
    ("decisions", 7.0, "decision"),
    ("incidents", 6.0, "incident"),
    ("conventions", 7.0, "convention"),
)
# Rooms of mined files, 2 to 12 of them a wing, each weighing this much.
FILE_ROOMS = (
    "docs",
    "adr",
    "runbooks",
    "api",
    "frontend",
    "backend",
    "deploys",
    "on-call",
    "reviews",
    "specs",
    "migrations",
    "tests",
    "tooling",
    "security",
    "metrics",
    "design",
)
FILE_ROOM_WEIGHT = 1.5
FILE_ROOMS_A_WING = (2, 12)


# The palace


@dataclass(frozen=True)
class RoomPlan:
    wing: str
    name: str
    kind: str  # a kind of text, or "file" for a room of mined files


class Layout:
    """Where each drawer goes, a pure function of the seed: wings weighted 1 / rank, rooms by
    the weights above."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(f"dashboard/{seed}/layout")
        self.rooms: list[RoomPlan] = []
        weights: list[float] = []
        wing_weights = [1 / (rank + 1) for rank in range(len(WINGS))]
        for wing, wing_weight in zip(WINGS, wing_weights, strict=True):
            files = rng.sample(FILE_ROOMS, rng.randint(*FILE_ROOMS_A_WING))
            plans = [(RoomPlan(wing, name, kind), w) for name, w, kind in STANDARD_ROOMS]
            plans += [(RoomPlan(wing, name, "file"), FILE_ROOM_WEIGHT) for name in files]
            total = sum(w for _, w in plans)
            for plan, w in plans:
                self.rooms.append(plan)
                weights.append(wing_weight * w / total)
        self.cumulative = list(itertools.accumulate(weights))

    def room(self, rng: random.Random) -> RoomPlan:
        index = bisect.bisect(self.cumulative, rng.random() * self.cumulative[-1])
        return self.rooms[min(index, len(self.rooms) - 1)]


def drawer_row(
    index: int,
    seed: int,
    layout: Layout,
    rooms: dict[tuple[str, str], dict[str, Any]],
    at: dt.datetime,
) -> dict[str, Any]:
    """The row `FilingService.record` writes (keep the two in step): a memory, or in a room of
    mined files a named drawer with its file as its source."""
    rng = random.Random(f"dashboard/{seed}/drawer/{index}")
    plan = layout.room(rng)
    room = rooms[(plan.wing, plan.name)]
    kind = "note" if plan.kind == "file" else plan.kind
    content = Writer(rng).text(kind, target_words(rng)) + f" (ref {seed}-{index})"
    row: dict[str, Any] = {
        "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "wing": room["wing"],
        "room": room["id"],
        **derived(content),
        "source": {"kind": "manual"},
        "tags": [kind],
        "provenance": {"requested_by": REQUESTED_BY, "job_id": None},
        "valid_from": at,
        "created_at": at,
        "updated_at": at,
    }
    if plan.kind == "file":
        name = f"{plan.name}/{index:06d}.md"
        row["name"] = name
        row["source"] = {"kind": "file", "uri": f"file:///src/{plan.wing}/{name}"}
    return row


@dataclass
class Built:
    root: Path
    drawers: int
    insert_secs: float
    start_secs: float  # the first daemon's start, search indexes rebuilt
    jobs: int
    rooms: int
    largest_room: int
    cached: bool = False

    @property
    def mib(self) -> float:
        return directory_size(self.root / "palace") / 1024**2


def cache_key(args: argparse.Namespace) -> str:
    """A palace is reused only if built by the same generator, on the same schema, with the same
    fields derived from content."""
    shape = hashlib.sha256("".join(m.checksum for m in bundled_migrations()).encode())
    shape.update(json.dumps(derived("A sample, of the text."), sort_keys=True).encode())
    return (
        f"{BUILD_VERSION}-{args.drawers}-jobs{args.jobs}-seed{args.seed}-{shape.hexdigest()[:12]}"
    )


def insert_drawers(store: Store, args: argparse.Namespace) -> tuple[int, int]:
    """Wings and rooms through the service, drawers in batched INSERTs; the number of rooms and
    the drawers of the largest."""
    layout = Layout(args.seed)
    service = HierarchyService(HierarchyRepository(store))
    ctx = RequestContext.build(requested_by=REQUESTED_BY)
    rooms = {
        (plan.wing, plan.name): service.create_room(ctx, plan.wing, {"name": plan.name})
        for plan in layout.rooms
    }
    # Filing instants spread over the past, never on a whole second (as the daemon's clock).
    first = utc_now() - dt.timedelta(milliseconds=10 * args.drawers)
    sizes: dict[str, int] = defaultdict(int)
    start = last_report = time.perf_counter()
    for batch_start in range(0, args.drawers, INSERT_BATCH):
        rows = [
            drawer_row(
                index,
                args.seed,
                layout,
                rooms,
                off_whole_second(first + dt.timedelta(milliseconds=10 * index)),
            )
            for index in range(batch_start, min(batch_start + INSERT_BATCH, args.drawers))
        ]
        store.query("INSERT INTO drawer $rows RETURN NONE", {"rows": rows})
        # As the daemon does in the drawers' own transaction.
        FilingRepository(store).index_dedup_keys(rows)
        for row in rows:
            sizes[row["room"]] += 1
        done = batch_start + len(rows)
        if time.perf_counter() - last_report > 15 or done == args.drawers:
            last_report = time.perf_counter()
            elapsed = last_report - start
            print(f"  {done:,} of {args.drawers:,} drawers in {elapsed:,.0f} s", flush=True)
    total = HierarchyRepository(store).drawer_total()
    if total != args.drawers:
        raise RuntimeError(f"the palace holds {total:,} drawers, not {args.drawers:,}")
    return len(rooms), max(sizes.values())


def run_jobs(daemon: Daemon, count: int) -> None:
    """`count` demo jobs, submitted back to back, then waited for."""
    with authorized(daemon) as client:
        for _ in range(count):
            ok(client.post("/api/jobs", json=DEMO_JOB), 201)

        def finished() -> bool:
            jobs = ok(client.get("/api/status"))["jobs"]
            return jobs["queued"] + jobs["running"] == 0

        wait_for(finished, timeout=600, what=f"{count} demo jobs to complete", interval=0.5)


def build_palace(root: Path, args: argparse.Namespace) -> Built:
    store = open_palace(root)
    try:
        store.migrate()
        start = time.perf_counter()
        rooms, largest = insert_drawers(store, args)
        insert_secs = time.perf_counter() - start
    finally:
        store.close()
    print("  a daemon rebuilds the search indexes and runs the demo jobs", flush=True)
    with running(root, env=AUTH_ENV) as (daemon, start_secs):
        run_jobs(daemon, args.jobs)
        problems = log_problems(daemon.log())
    if problems:
        print(f"  the daemon logged {len(problems)} warnings or errors, the first: {problems[0]}")
    return Built(root, args.drawers, insert_secs, start_secs, args.jobs, rooms, largest)


def cached_palace(args: argparse.Namespace) -> Built:
    """The built palace: from the cache when it has one of this key, else built (and cached)."""
    key = cache_key(args)
    root = args.cache_dir / key
    meta = root / "built.json"
    if meta.exists() and not args.rebuild:
        print(f"using the palace cached in {root}", flush=True)
        recorded = json.loads(meta.read_text())
        return Built(**{**recorded, "root": root, "cached": True})
    partial = args.cache_dir / f"{key}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    shutil.rmtree(root, ignore_errors=True)
    partial.mkdir(parents=True)
    print(f"building a palace of {args.drawers:,} drawers in {partial}", flush=True)
    built = build_palace(partial, args)
    recorded = {k: v for k, v in asdict(built).items() if k not in ("root", "cached")}
    (partial / "built.json").write_text(json.dumps(recorded))
    # Only the palace is kept: the daemon's state, configuration and log are the run's own.
    for name in ("state", "config", "sources"):
        shutil.rmtree(partial / name, ignore_errors=True)
    (partial / "daemon.log").unlink(missing_ok=True)
    partial.rename(root)
    built.root = root
    return built


def copy_palace(built: Built, root: Path) -> None:
    root.mkdir(parents=True)
    shutil.copytree(built.root / "palace", root / "palace")


# The daemon


def authorized(daemon: Daemon) -> httpx.Client:
    return daemon.client(Authorization=f"Bearer {SECRET}")


def search_ready(daemon: Daemon) -> bool:
    with authorized(daemon) as client:
        return bool(ok(client.get("/api/status"))["search"]["state"] == "ready")


@contextlib.contextmanager
def running(root: Path, env: dict[str, str]) -> Iterator[tuple[Daemon, float]]:
    """A daemon on `root`'s palace, serving with its search indexes ready; the seconds that
    took. Stopped by its pid, on error too."""
    daemon = Daemon(root, env=env)
    try:
        start = time.perf_counter()
        daemon.start(wait=False)
        record = wait_for(daemon._ready, timeout=START_TIMEOUT, what="the daemon to serve")
        daemon.base_url = f"http://{record['bind_addr']}"
        wait_for(
            lambda: search_ready(daemon),
            timeout=START_TIMEOUT,
            what="the search indexes to be ready",
            interval=0.5,
        )
        yield daemon, time.perf_counter() - start
    finally:
        stop(daemon)


# The pages


@dataclass(frozen=True)
class Target:
    """A page, and how the script in the page knows its data arrived."""

    label: str
    hash: str  # the address after `/ui/`
    title: str  # the text of h1#page-title
    selector: str  # an element only the page's data produces
    text: str = ""  # which that element's text must contain
    origin: str = "#/overview"  # where the in-app navigation starts

    def script_target(self) -> dict[str, str]:
        return {
            "hash": self.hash,
            "title": self.title,
            "selector": self.selector,
            "text": self.text,
        }


def room_page(
    label: str, wing: str, room: dict[str, Any], offset: int, origin: str = "#/overview"
) -> Target:
    total = room["counts"]["drawers"]
    last = min(offset + PAGE_SIZE, total)
    suffix = f"?offset={offset}" if offset else ""
    # A room of one page has no pager, only its count under the list.
    pager = (".pager span", f"{offset + 1}\u2013{last} of {total}")
    single = ("ul.drawers ~ p.muted", f"{total} drawer")
    selector, text = pager if total > PAGE_SIZE else single
    return Target(
        label,
        f"#/palace/{quote(wing, safe='')}/{quote(room['name'], safe='')}{suffix}",
        f"Room {room['name']}",
        selector,
        text,
        origin,
    )


def targets(daemon: Daemon) -> tuple[list[Target], str]:
    """The pages measured, found through the API; and a description of the palace."""
    with authorized(daemon) as client:
        wings = ok(client.get("/api/wings"))["wings"]
        rooms = {
            wing["name"]: ok(client.get(f"/api/wings/{quote(wing['name'], safe='')}/rooms"))[
                "rooms"
            ]
            for wing in wings
        }
    big_wing = max(wings, key=lambda wing: wing["counts"]["drawers"])["name"]
    big_room = max(rooms[big_wing], key=lambda room: room["counts"]["drawers"])
    everywhere = sorted(
        ((wing, room) for wing, listed in rooms.items() for room in listed),
        key=lambda pair: pair[1]["counts"]["drawers"],
    )
    median_wing, median_room = everywhere[len(everywhere) // 2]
    last_offset = (big_room["counts"]["drawers"] - 1) // PAGE_SIZE * PAGE_SIZE
    wing_hash = f"#/palace/{quote(big_wing, safe='')}"
    pages = [
        Target("Overview", "#/overview", "Overview", ".outcomes .legend", origin="#/palace"),
        Target("Palace: the wings", "#/palace", "Palace", "table tbody tr"),
        Target(f"Palace: wing {big_wing}", wing_hash, f"Wing {big_wing}", "table tbody tr"),
        room_page(f"Palace: room {big_wing}/{big_room['name']}", big_wing, big_room, 0, wing_hash),
        room_page(
            f"  the same, last page (offset {last_offset:,})",
            big_wing,
            big_room,
            last_offset,
            wing_hash,
        ),
        room_page(f"Palace: room {median_wing}/{median_room['name']}", median_wing, median_room, 0),
    ]
    described = (
        f"{len(wings)} wings, {len(everywhere)} rooms; the largest wing {big_wing} "
        f"({next(w for w in wings if w['name'] == big_wing)['counts']['drawers']:,} drawers in "
        f"{len(rooms[big_wing])} rooms), its room {big_room['name']} "
        f"{big_room['counts']['drawers']:,} drawers; a room of median size "
        f"{median_wing}/{median_room['name']}, {median_room['counts']['drawers']:,} drawers"
    )
    return pages, described


# Timing in the browser

# Injected before the dashboard's own scripts: notes when the target's data is in the DOM, then
# the first idle callback after it, then waits QUIET_MS more for a late long task.
RECORDER = """
(() => {
  const bench = { target: null, start: 0, rendered: null, idle: null, done: false, run: 0,
                  longTasks: [] };
  window.__bench = bench;
  try {
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        bench.longTasks.push([entry.startTime, entry.duration]);
      }
    }).observe({ type: "longtask", buffered: true });
  } catch (_) {}
  function ready(target) {
    const heading = document.getElementById("page-title");
    if (!heading || heading.textContent.trim() !== target.title) return false;
    if (document.querySelector('[aria-busy="true"]')) return false;
    const shown = document.querySelector(target.selector);
    return Boolean(shown) && (!target.text || shown.textContent.includes(target.text));
  }
  let finish = () => {};
  function reset() {
    bench.finished = new Promise((resolve) => { finish = resolve; });
  }
  function check() {
    if (!bench.target || bench.rendered !== null || !ready(bench.target)) return;
    bench.rendered = performance.now();
    const run = bench.run;
    requestIdleCallback(() => {
      if (run !== bench.run) return;
      bench.idle = performance.now();
      setTimeout(() => {
        if (run !== bench.run) return;
        bench.done = true;
        finish(true);
      }, QUIET_MS);
    });
  }
  bench.arm = (target) => {
    performance.clearResourceTimings();
    Object.assign(bench, { target, start: performance.now(), rendered: null, idle: null,
                           done: false, run: bench.run + 1 });
    reset();
    location.hash = target.hash;
    check();
  };
  reset();
  new MutationObserver(check).observe(document, { childList: true, subtree: true,
                                                  characterData: true, attributes: true });
  bench.target = TARGET;
})();
"""

# What the page measured, relative to the navigation's start.
COLLECT = """
() => {
  const bench = window.__bench;
  const end = bench.idle + QUIET_MS;
  const tasks = bench.longTasks.filter(([start, duration]) =>
    start + duration > bench.start && start < end);
  const interactive = Math.max(bench.idle, ...tasks.map(([start, duration]) => start + duration));
  const since = (value) => value - bench.start;
  const api = performance.getEntriesByType("resource")
    .filter((entry) => new URL(entry.name).pathname.startsWith("/api/"))
    .map((entry) => ({ path: new URL(entry.name).pathname + new URL(entry.name).search,
                       start: since(entry.startTime), end: since(entry.responseEnd),
                       wait: entry.responseStart - entry.requestStart }));
  const navigation = performance.getEntriesByType("navigation")[0];
  return {
    rendered: since(bench.rendered), idle: since(bench.idle), interactive: since(interactive),
    longTasks: tasks.map(([start, duration]) => [since(start), duration]), api,
    domContentLoaded: bench.start === 0 && navigation ? navigation.domContentLoadedEventEnd : null,
  };
}
"""


@dataclass
class Sample:
    rendered: float
    idle: float
    interactive: float
    long_tasks: list[list[float]]
    api: list[dict[str, Any]]
    dom_content_loaded: float | None
    bytes: dict[str, int] = field(default_factory=dict)  # by kind, loads only

    @classmethod
    def from_page(cls, found: dict[str, Any]) -> Sample:
        return cls(
            found["rendered"],
            found["idle"],
            found["interactive"],
            found["longTasks"],
            found["api"],
            found["domContentLoaded"],
        )


def recorder(target: Target | None) -> str:
    chosen = json.dumps(target.script_target() if target else None)
    return RECORDER.replace("QUIET_MS", str(QUIET_MS)).replace("TARGET;", f"{chosen};")


# Waits for the recorder without polling the page (`page.wait_for_function` compiles its
# predicate in the page, which the dashboard's Content-Security-Policy forbids).
FINISHED = f"""
() => Promise.race([
  window.__bench.finished,
  new Promise((resolve) => setTimeout(() => resolve(false), {PAGE_TIMEOUT_MS})),
])
"""


def collected(page: Any) -> Sample:
    if not page.evaluate(FINISHED):
        state = page.evaluate("() => JSON.stringify(window.__bench)")
        raise TimeoutError(f"the page was not interactive within {PAGE_TIMEOUT_MS} ms: {state}")
    return Sample.from_page(page.evaluate(COLLECT.replace("QUIET_MS", str(QUIET_MS))))


class Browser:
    """Chromium, and the console errors of every page it opened."""

    def __init__(self, browser: Any, origin: str) -> None:
        self.browser = browser
        self.origin = origin
        self.errors: list[str] = []

    def context(self, target: Target | None) -> tuple[Any, Any]:
        """A new context (nothing cached), signed in, with the recorder armed for `target`."""
        context = self.browser.new_context(viewport=WIDE, timezone_id="UTC", locale="en-GB")
        context.add_init_script(f"sessionStorage.setItem('memcastle.token', {SECRET!r});")
        context.add_init_script(recorder(target))
        page = context.new_page()
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda error: self.errors.append(f"uncaught: {error}"))
        return context, page

    def load(self, target: Target) -> Sample:
        """The page opened by its address in a new context."""
        context, page = self.context(target)
        responses: list[Any] = []
        page.on("response", lambda response: responses.append(response))
        try:
            page.goto(f"{self.origin}/ui/{target.hash}", wait_until="commit")
            sample = collected(page)
            sample.bytes = downloaded(responses)
        finally:
            context.close()
        return sample

    def in_app(self, page: Any, target: Target) -> Sample:
        """The page reached from its origin page by a change of the hash, in the same tab."""
        page.evaluate("(t) => window.__bench.arm(t)", origin_target(target))
        collected(page)
        page.evaluate("(t) => window.__bench.arm(t)", target.script_target())
        return collected(page)


def origin_target(target: Target) -> dict[str, str]:
    """Enough of the origin page to know it is shown: its heading."""
    if target.origin == "#/palace":
        return {"hash": "#/palace", "title": "Palace", "selector": "table tbody tr", "text": ""}
    if target.origin == "#/overview":
        return {"hash": "#/overview", "title": "Overview", "selector": ".outcomes", "text": ""}
    title = f"Wing {unquote(target.origin.rsplit('/', 1)[1])}"
    return {"hash": target.origin, "title": title, "selector": "table tbody tr", "text": ""}


def downloaded(responses: Sequence[Any]) -> dict[str, int]:
    """Uncompressed body bytes by kind: js, css, html, api (the event stream left out)."""
    sizes: dict[str, int] = defaultdict(int)
    seen: set[str] = set()
    for response in responses:
        url, kind = response.url, response.request.resource_type
        path = urlsplit(url).path
        if url in seen or path == "/api/events" or response.status >= 300:
            continue
        seen.add(url)
        bucket = {"script": "js", "stylesheet": "css", "document": "html"}.get(kind)
        if bucket is None and path.startswith("/api/"):
            bucket = "api"
        if bucket is not None:
            sizes[bucket] += len(response.body())
    return dict(sizes)


@dataclass
class Results:
    load: dict[str, list[Sample]] = field(default_factory=lambda: defaultdict(list))
    in_app: dict[str, list[Sample]] = field(default_factory=lambda: defaultdict(list))


def measure(
    browser: Browser, pages: Sequence[Target], rounds: int, warmup: int, results: Results
) -> None:
    for round_ in range(warmup + rounds):
        timed = round_ >= warmup
        note = "" if timed else " (untimed)"
        print(f"  round {round_ + 1} of {warmup + rounds}{note}", flush=True)
        for target in pages:
            sample = browser.load(target)
            if timed:
                results.load[target.label].append(sample)
        context, page = browser.context(None)
        try:
            page.goto(f"{browser.origin}/ui/#/overview", wait_until="commit")
            page.wait_for_selector(".outcomes", timeout=PAGE_TIMEOUT_MS)
            for target in pages:
                sample = browser.in_app(page, target)
                if timed:
                    results.in_app[target.label].append(sample)
        finally:
            context.close()


# Reporting


def ms(value: float) -> str:
    return f"{value:,.0f}"


def summary(values: Sequence[float]) -> str:
    return f"{ms(statistics.median(values)):>6} {ms(quantile(values, 90)):>6}"


def slowest_api(samples: Sequence[Sample]) -> str:
    """The page's slowest `/api` call, median duration and when it ended (median)."""
    durations: dict[str, list[float]] = defaultdict(list)
    ends: dict[str, list[float]] = defaultdict(list)
    for sample in samples:
        for call in sample.api:
            path = call["path"].split("?")[0]
            durations[path].append(call["end"] - call["start"])
            ends[path].append(call["end"])
    if not durations:
        return "-"
    path = max(durations, key=lambda p: statistics.median(durations[p]))
    return (
        f"{path} {ms(statistics.median(durations[path]))} ms, ends at "
        f"{ms(statistics.median(ends[path]))}"
    )


def report_mode(title: str, samples: dict[str, list[Sample]], load: bool) -> None:
    print(f"\n{title}: milliseconds from navigation, median and p90 of {rounds_of(samples)}")
    header = f"  {'page':<44} {'interactive':>13} {'rendered':>13}"
    if load:
        header += f" {'modules run':>12}"
    print(header + "  long tasks  slowest /api call")
    for label, found in samples.items():
        line = (
            f"  {label:<44} {summary([s.interactive for s in found]):>13} "
            f"{summary([s.rendered for s in found]):>13}"
        )
        if load:
            loaded = [s.dom_content_loaded for s in found if s.dom_content_loaded is not None]
            line += f" {ms(statistics.median(loaded)) if loaded else '-':>12}"
        tasks = [task for s in found for task in s.long_tasks]
        longest = max((duration for _start, duration in tasks), default=0)
        line += f"  {len(tasks):>3} ({ms(longest):>3})  {slowest_api(found)}"
        print(line)


def rounds_of(samples: dict[str, list[Sample]]) -> str:
    counts = {len(found) for found in samples.values()}
    return f"{'/'.join(str(c) for c in sorted(counts))} navigations each"


def report_api(results: Results) -> None:
    """Every `/api` call of the loads, by path: median time from request to response."""
    durations: dict[str, list[float]] = defaultdict(list)
    waits: dict[str, list[float]] = defaultdict(list)
    for found in results.load.values():
        for sample in found:
            for call in sample.api:
                path = call["path"]
                durations[path].append(call["end"] - call["start"])
                waits[path].append(call["wait"])
    print("\n/api calls of the loads, as the browser timed them (ms, median; server wait =")
    print("request sent to first byte)")
    for path in sorted(durations, key=lambda p: -statistics.median(durations[p])):
        print(
            f"  {path[:70]:<70} {ms(statistics.median(durations[path])):>5} "
            f"(server wait {statistics.median(waits[path]):,.1f}, {len(durations[path])} calls)"
        )


def report_bytes(results: Results) -> None:
    per_page = {
        label: max((s.bytes for s in found), key=lambda b: b.get("js", 0) + b.get("css", 0))
        for label, found in results.load.items()
    }
    print("\nBytes a load downloads (uncompressed bodies)")
    for label, sizes in per_page.items():
        scripts = sizes.get("js", 0) + sizes.get("css", 0)
        print(
            f"  {label:<44} JS {sizes.get('js', 0):>7,} + CSS {sizes.get('css', 0):>6,} = "
            f"{scripts:>7,}; HTML {sizes.get('html', 0):,}; API JSON {sizes.get('api', 0):,}"
        )
    shipped = DashboardFiles().size
    print(f"  the dashboard ships {shipped:,} bytes of HTML, JS and CSS (web/dist, no maps)")
    worst = max(s.get("js", 0) + s.get("css", 0) for s in per_page.values())
    met = "met" if worst <= TARGET_BYTES else "MISSED"
    print(f"  target: JS + CSS at most {TARGET_BYTES:,} bytes: {met} ({worst:,})")


def report_targets(results: Results) -> None:
    print(f"\nTarget: interactive within {TARGET_MS:,.0f} ms of navigation (median)")
    for title, samples in (("load", results.load), ("in-app", results.in_app)):
        for label, found in samples.items():
            median = statistics.median(s.interactive for s in found)
            met = "met" if median <= TARGET_MS else "MISSED"
            print(f"  {title:<7} {label.strip():<46} {ms(median):>5} ms: {met}")


def report(
    built: Built,
    described: str,
    results: Results,
    errors: Sequence[str],
    problems: Sequence[str],
    machine: tuple[Sequence[float], tuple[float, float]],
) -> None:
    print_machine(*machine)
    print(f"  browser           {CHROMIUM} (headless), viewport {WIDE['width']}x{WIDE['height']}")
    cached = "cached" if built.cached else "built now"
    print(
        f"\nPalace: {built.drawers:,} drawers ({cached}: inserted in {built.insert_secs:.0f} s, "
        f"first daemon start with the index rebuild {built.start_secs:.0f} s), {built.mib:,.0f} "
        f"MiB; {built.jobs} demo jobs; {described}"
    )
    report_mode("Load (a new context opens the page's address)", results.load, load=True)
    report_mode("In-app (the hash changes in an open tab)", results.in_app, load=False)
    report_api(results)
    report_bytes(results)
    report_targets(results)
    first = f", the first: {errors[0]}" if errors else ""
    print(f"\nbrowser console errors: {len(errors)}{first}")
    if problems:
        print(f"daemon log: {len(problems)} warnings or errors, the first:")
        for line in problems[:5]:
            print(f"  {line[:200]}")
    else:
        print("daemon log: no warnings or errors")


# Running


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drawers", type=int, default=100_000, help="palace size (100,000)")
    parser.add_argument("--rounds", type=int, default=10, help="timed navigations a page (10)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first (1)")
    parser.add_argument("--jobs", type=int, default=300, help="demo jobs in the palace (300)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the palace (1)")
    parser.add_argument(
        "--cache-dir", type=Path, default=CACHE_DIR, help=f"where palaces are kept ({CACHE_DIR})"
    )
    parser.add_argument("--rebuild", action="store_true", help="build the palace again")
    parser.add_argument("--keep", action="store_true", help="keep the run's palace copy and log")
    args = parser.parse_args(argv)
    if args.drawers < 1000 or args.rounds < 1 or args.warmup < 0 or args.jobs < 1:
        parser.error("--drawers at least 1000, --rounds and --jobs positive")
    return args


def run(scratch: Path, args: argparse.Namespace) -> None:
    from playwright.sync_api import sync_playwright

    started = time.perf_counter()
    if not CHROMIUM.exists():
        raise SystemExit(f"{CHROMIUM} is missing (apt-get install chromium)")
    built = cached_palace(args)
    load_before, probe_before = os.getloadavg(), cpu_probe()
    root = scratch / "daemon"
    copy_palace(built, root)
    results = Results()
    env = {**AUTH_ENV, "MEMCASTLE_WEB_ENABLE": "true"}
    with running(root, env) as (daemon, _secs), sync_playwright() as playwright:
        pages, described = targets(daemon)
        print(f"measuring {len(pages)} pages on {daemon.base_url}: {described}", flush=True)
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            browser = Browser(chromium, daemon.base_url)
            measure(browser, pages, args.rounds, args.warmup, results)
        finally:
            chromium.close()
        problems = log_problems(daemon.log())
    machine = (load_before, (probe_before, cpu_probe()))
    report(built, described, results, browser.errors, problems, machine)
    print(f"the run took {time.perf_counter() - started:,.0f} s")


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    if args.keep:
        scratch = Path(tempfile.mkdtemp(prefix="memcastle-bench-dashboard-"))
        run(scratch, args)
        print(f"\nkept {scratch}")
        return 0
    with tempfile.TemporaryDirectory(prefix="memcastle-bench-dashboard-") as name:
        run(Path(name), args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
