"""How fast the knowledge graph answers on 10,000 entities and 50,000 relationships, through a real
daemon: an entity's relationships with their lifecycle, search with graph expansion, and the
extraction throughput of the heuristic provider.

Run from the repository root: `.venv/bin/python bench/graph.py`; `--quick` gives a small run
(1,000 entities, 5,000 relationships, 1,000 drawers, fewer requests). It measures and reports;
it is not a test, so it exits 0 whatever the figures are.

1. **Palace, through HTTP.** A daemon (`manage.py serve` in a subprocess,
   `tests.support.daemon.Daemon`, default settings: no embedding provider, no extraction provider)
   on a new palace files
   `--drawers` drawers (10,000) of 20 to 40 invented words in 10 wings, through checkpoint jobs
   of 1,000 items; each drawer is linked to `--mentions` entities (3) with
   `POST /api/drawers/{id}/mentions {name, kind}` on several clients, the first mention of a name
   creating its entity (`--entities`, 10,000: every entity is mentioned by the same number of
   drawers). Then `--relationships` (50,000) assertions between entities picked uniformly at
   random (fixed seed), as checkpoint `fact` items `{"op": "add", "subject": {"id"}, "predicate",
   "object": {"id"}, "confidence"}` in jobs of 1,000 (each item also files its evidence drawer,
   in the wing `facts`); then 5% of them are superseded by checkpoint `supersede` facts (a new
   object), after the `as_of` instant is taken: the graph ends with that many relationships, of
   which 5% closed. Rates: drawers/s, mentions/s, facts/s. The built palace is cached under
   `/tmp/memcastle-bench-graph/`, keyed by a version string, the sizes and the seed; later runs
   copy it (`--rebuild` builds it again). The building daemon runs with
   `MEMCASTLE_DEDUP_ENTITY_FUZZY=false` (see `BUILD_ENV`; `--fuzzy` keeps the one-typo rule on).
2. **Reads, through HTTP.** One keep-alive client, one request at a time, timed in the client
   around the whole request; one untimed pass, then `--passes` timed passes (3), the cells
   interleaved request by request:
   - `GET /api/entities/{id}/relationships` for `--sample` entities (200, uniformly sampled),
     now, `?as_of=` the instant before the supersessions, and `?include_expired=true`;
   - `GET /api/search?q=...&ranking=lexical&limit=10` for `--queries` queries (100) of one or
     two words of a drawer's text, with `expand=false` and `expand=true`, and `expand=true` at
     the `as_of` instant. Each expanded answer is checked: its direct hits are the plain
     answer's, in order; the appended ones carry `via` and `signals.graph`, none repeats a
     direct hit, at most `limit` of them;
   - `GET /api/health`: the floor of any request here.
3. **Extraction** (`bench/extract.py`, in this process): the extract job with the heuristic
   provider over `--extract-drawers` mined drawers (500) of about 1,500 characters, drawers/s.

The machine is shared: the report gives the load average and a CPU probe (a fixed Python loop)
before and after. Daemons are stopped by their pid, on error too.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from bench.hierarchy import directory_size  # noqa: E402
from bench.jobs import ok, parse_time, quantile  # noqa: E402
from bench.mine import cpu_probe, print_machine  # noqa: E402
from bench.search import JOB_TIMEOUT, parallel, start_daemon  # noqa: E402
from bench.writes import code_state, log_problems, per_sec, stop  # noqa: E402
from graph import providers  # noqa: E402
from graph.repositories.records import derived_id  # noqa: E402
from jobs.replay import unit_id  # noqa: E402
from tests.support.daemon import Daemon  # noqa: E402
from tests.support.http import wait_job  # noqa: E402

# Bump when the palace the benchmark builds changes, so a cached palace of the old shape is not
# reused.
BUILD_VERSION = "graph-1"
CACHE_DIR = Path(tempfile.gettempdir()) / "memcastle-bench-graph"
CHECKPOINT_ITEMS = 1000
WINGS = 10
LIMIT = 10
SUPERSEDED_SHARE = 0.05
# The closed vocabulary's kinds but `other`, and its predicates.
KINDS = tuple(kind for kind in providers.KINDS if kind != providers.UNKNOWN_KIND)
PREDICATES = providers.PREDICATES
SYLLABLE_TEXT = (
    "ka lo mi ne ru sa ti vo xe zu bri cla dro fen gal hop jun kir lem mos nap pil rov tas"
)
SYLLABLES = SYLLABLE_TEXT.split()
TARGET_MS = {"relationships": 20.0, "search expand": 40.0}


# The corpus ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """What the benchmark files, all from one seed."""

    drawers: list[tuple[str, str]]  # (wing, content)
    names: list[tuple[str, str]]  # (name, kind) by entity number
    mentions: list[tuple[int, int]]  # (drawer number, entity number)
    facts: list[tuple[int, str, int, float]]  # (subject, predicate, object, confidence)
    changes: list[tuple[int, int]]  # (fact number superseded, its new object)


def _word(rng: random.Random, low: int, high: int) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(low, high)))


def plan(args: argparse.Namespace) -> Plan:
    rng = random.Random(args.seed)
    vocabulary = sorted({_word(rng, 2, 3) for _ in range(4000)})
    drawers = [
        (
            f"wing-{n % WINGS}",
            " ".join(rng.choice(vocabulary) for _ in range(rng.randint(20, 40))) + f" d{n}.",
        )
        for n in range(args.drawers)
    ]
    names: list[tuple[str, str]] = []
    seen: set[str] = set()
    while len(names) < args.entities:
        name = f"{_word(rng, 3, 3).title()} {_word(rng, 3, 3).title()}"
        if name.lower() not in seen:
            seen.add(name.lower())
            names.append((name, KINDS[len(names) % len(KINDS)]))
    # Every entity mentioned by as many drawers as the others (give or take one).
    slots = [n % args.entities for n in range(args.drawers * args.mentions)]
    rng.shuffle(slots)
    mentions = sorted(
        {
            (drawer, slots[drawer * args.mentions + k])
            for drawer in range(args.drawers)
            for k in range(args.mentions)
        }
    )
    changes_count = int(args.relationships * SUPERSEDED_SHARE)
    facts = []
    for _ in range(args.relationships - changes_count):
        subject, obj = rng.sample(range(args.entities), 2)
        facts.append((subject, rng.choice(PREDICATES), obj, round(rng.uniform(0.3, 1.0), 2)))
    changes = []
    for index in rng.sample(range(len(facts)), changes_count):
        subject = facts[index][0]
        obj = rng.choice([e for e in rng.sample(range(args.entities), 3) if e != subject])
        changes.append((index, obj))
    return Plan(drawers, names, mentions, facts, changes)


# Building the palace through HTTP --------------------------------------------------------------


# When this benchmark was written, entity resolution's one-typo rule read every `entity_term`
# row for a new name (0.35 s at 600 entities, growing with the graph), which made the build take
# hours: the palace is built with it off (`dedup.entity_fuzzy`), which changes how names
# resolve, not what is read afterwards. `--fuzzy` builds with it on.
BUILD_ENV = {"MEMCASTLE_DEDUP_ENTITY_FUZZY": "false"}


@contextlib.contextmanager
def running(root: Path, env: dict[str, str]) -> Iterator[Daemon]:
    daemon = Daemon(root, env=env)
    try:
        start_daemon(daemon)
        yield daemon
    finally:
        stop(daemon)


@dataclass
class Ingest:
    drawers: int = 0
    drawer_secs: float = 0.0  # checkpoint jobs, completed_at - started_at
    mentions: int = 0
    mention_secs: float = 0.0  # wall time on `clients` clients
    mention_clients: int = 0
    facts: int = 0
    fact_secs: float = 0.0  # checkpoint jobs, completed_at - started_at
    supersessions: int = 0
    supersession_secs: float = 0.0
    wall_secs: float = 0.0


@dataclass
class Built:
    root: Path
    entities: int
    relationships: int
    drawers: int
    seed: int
    drawer_ids: list[str]
    entity_ids: list[str]
    as_of: str  # after every add, before the first supersession
    ingest: Ingest
    code: str
    degrees: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["root"] = str(self.root)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Built:
        return cls(**{**data, "root": Path(data["root"]), "ingest": Ingest(**data["ingest"])})


def checkpoint(
    client: httpx.Client, items: list[dict[str, Any]], what: str
) -> tuple[list[str], float]:
    """Run one checkpoint job of `items`; the items' drawer ids and the job's server seconds.
    A job that does not store every item stops the benchmark."""
    job = ok(
        client.post("/api/jobs", json={"type": "checkpoint", "payload": {"items": items}}), 201
    )
    record = wait_job(client, job["id"], timeout=JOB_TIMEOUT, interval=0.1)
    result = record.get("result") or {}
    if result.get("duplicates") or result.get("failed"):
        raise RuntimeError(f"{what}: checkpoint job {job['id']} did not store every item: {result}")
    seconds = parse_time(record["completed_at"]) - parse_time(record["started_at"])
    return [unit_id(job["id"], f"checkpoint-drawer:{n}") for n in range(len(items))], seconds


def in_batches(
    client: httpx.Client, items: list[dict[str, Any]], what: str
) -> tuple[list[str], float]:
    ids: list[str] = []
    seconds = 0.0
    for start in range(0, len(items), CHECKPOINT_ITEMS):
        batch_ids, batch_secs = checkpoint(client, items[start : start + CHECKPOINT_ITEMS], what)
        ids += batch_ids
        seconds += batch_secs
        if (start // CHECKPOINT_ITEMS) % 10 == 9 or start + CHECKPOINT_ITEMS >= len(items):
            print(
                f"    {what}: {len(ids):,} of {len(items):,}, {per_sec(len(ids) / seconds)}/s "
                "(server)",
                flush=True,
            )
    return ids, seconds


def build_palace(root: Path, corpus: Plan, args: argparse.Namespace) -> Built:
    ingest = Ingest()
    started = time.perf_counter()
    env = {} if args.fuzzy else BUILD_ENV
    with (
        running(root, env) as daemon,
        httpx.Client(base_url=daemon.base_url, timeout=600) as client,
    ):
        items = [
            {"destination": "project", "wing": wing, "content": content, "tags": []}
            for wing, content in corpus.drawers
        ]
        drawer_ids, ingest.drawer_secs = in_batches(client, items, "drawers")
        ingest.drawers = len(drawer_ids)

        entity_ids: list[str | None] = [None] * len(corpus.names)

        def mention(http: httpx.Client, pair: tuple[int, int]) -> tuple[int, str]:
            drawer, entity = pair
            name, kind = corpus.names[entity]
            answer = ok(
                http.post(
                    f"/api/drawers/{drawer_ids[drawer]}/mentions", json={"name": name, "kind": kind}
                ),
                200,
                201,
            )
            return entity, answer["entity"]["id"]

        # The first mention of every entity, one at a time per entity, then the rest.
        first: dict[int, tuple[int, int]] = {}
        for pair in corpus.mentions:
            first.setdefault(pair[1], pair)
        rest = [pair for pair in corpus.mentions if first[pair[1]] != pair]
        results, first_secs = parallel(daemon.base_url, list(first.values()), mention, args.clients)
        for entity, entity_id in results:
            entity_ids[entity] = entity_id
        print(f"    mentions: {len(results):,} entities created", flush=True)
        results, rest_secs = parallel(daemon.base_url, rest, mention, args.clients)
        for entity, entity_id in results:
            if entity_ids[entity] != entity_id:
                raise RuntimeError(f"entity {corpus.names[entity]} resolved to two ids")
        ingest.mentions = len(corpus.mentions)
        ingest.mention_secs = first_secs + rest_secs
        ingest.mention_clients = args.clients
        ids = [entity_id for entity_id in entity_ids if entity_id is not None]
        distinct = len(set(ids))
        if distinct != len(corpus.names):
            print(
                f"    note: {len(corpus.names):,} names resolved to {distinct:,} entities",
                flush=True,
            )
        print(
            f"    mentions: {ingest.mentions:,}, {per_sec(ingest.mentions / ingest.mention_secs)}/s"
        )

        facts = [
            {
                "destination": "general",
                "wing": "facts",
                "content": f"fact {n}: {corpus.names[s][0]} {predicate} {corpus.names[o][0]}",
                "tags": [],
                "fact": {
                    "op": "add",
                    "subject": {"id": entity_ids[s]},
                    "predicate": predicate,
                    "object": {"id": entity_ids[o]},
                    "confidence": confidence,
                },
            }
            for n, (s, predicate, o, confidence) in enumerate(corpus.facts)
        ]
        evidence, ingest.fact_secs = in_batches(client, facts, "facts")
        ingest.facts = len(evidence)
        time.sleep(0.05)
        as_of = dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")
        time.sleep(0.05)
        changes = [
            {
                "destination": "general",
                "wing": "facts",
                "content": f"correction {n}: fact {index} now points at {corpus.names[obj][0]}",
                "tags": [],
                "fact": {
                    "op": "supersede",
                    "relationship_id": derived_id("asserted", evidence[index]),
                    "to": {"id": entity_ids[obj]},
                },
            }
            for n, (index, obj) in enumerate(corpus.changes)
        ]
        done, ingest.supersession_secs = in_batches(client, changes, "supersessions")
        ingest.supersessions = len(done)
        degrees = degree_summary(client, ids, args.seed)
    ingest.wall_secs = time.perf_counter() - started
    return Built(
        root=root,
        entities=args.entities,
        relationships=args.relationships,
        drawers=args.drawers,
        seed=args.seed,
        drawer_ids=drawer_ids,
        entity_ids=ids,
        as_of=as_of,
        ingest=ingest,
        code=code_state(),
        degrees=degrees,
    )


def degree_summary(client: httpx.Client, entity_ids: list[str], seed: int) -> dict[str, float]:
    """Relationships per entity (open and closed, either end) on a sample of 200."""
    sample = random.Random(seed + 1).sample(entity_ids, min(200, len(entity_ids)))
    counts = [
        len(
            ok(
                client.get(
                    f"/api/entities/{entity_id}/relationships", params={"include_expired": "true"}
                )
            )["relationships"]
        )
        for entity_id in sample
    ]
    return {
        "median": statistics.median(counts),
        "p95": quantile(counts, 95),
        "max": max(counts),
    }


def cached_palace(corpus: Plan, args: argparse.Namespace) -> Built:
    key = (
        f"{BUILD_VERSION}-e{args.entities}-r{args.relationships}-d{args.drawers}"
        f"-m{args.mentions}-seed{args.seed}{'-fuzzy' if args.fuzzy else ''}"
    )
    root = args.cache_dir / key
    meta = root / "built.json"
    if meta.exists() and not args.rebuild:
        built = Built.from_json(json.loads(meta.read_text()))
        built.root = root
        print(f"  using the palace cached in {root}", flush=True)
        return built
    partial = args.cache_dir / f"{key}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    shutil.rmtree(root, ignore_errors=True)
    partial.mkdir(parents=True)
    print(f"  building the graph through a daemon in {partial}", flush=True)
    built = build_palace(partial, corpus, args)
    built.root = root
    (partial / "built.json").write_text(json.dumps(built.to_json()))
    partial.rename(root)
    return built


# Timing reads through HTTP ---------------------------------------------------------------------


@dataclass
class Cell:
    label: str
    requests: list[tuple[str, dict[str, Any]]]  # (path, params)
    samples: list[float] = field(default_factory=list)
    check: Callable[[int, dict[str, Any]], list[str]] | None = None
    problems: list[str] = field(default_factory=list)
    answers: list[dict[str, Any]] = field(default_factory=list)


def time_cells(client: httpx.Client, cells: Sequence[Cell], passes: int) -> None:
    """One untimed pass (whose answers are kept and checked), then `passes` timed ones, the
    cells interleaved request by request."""
    count = len(cells[0].requests)
    for timed in [False] + [True] * passes:
        for n in range(count):
            for cell in cells:
                path, params = cell.requests[n]
                started = time.perf_counter()
                answer = ok(client.get(path, params=params))
                elapsed = (time.perf_counter() - started) * 1000
                if timed:
                    cell.samples.append(elapsed)
                else:
                    cell.answers.append(answer)


def queries(corpus: Plan, count: int, seed: int) -> list[str]:
    rng = random.Random(seed + 2)
    found = []
    for _ in range(count):
        words = rng.choice(corpus.drawers)[1].rstrip(".").split()[:-1]
        found.append(" ".join(rng.sample(words, rng.choice((1, 1, 2)))))
    return found


def check_expanded(plain: Cell) -> Callable[[int, dict[str, Any]], list[str]]:
    def check(n: int, answer: dict[str, Any]) -> list[str]:
        direct = [hit["id"] for hit in plain.answers[n]["results"]]
        hits = answer["results"]
        found = [hit["id"] for hit in hits]
        problems = []
        if found[: len(direct)] != direct:
            problems.append("the direct hits changed")
        tail = hits[len(direct) :]
        if len(tail) > LIMIT:
            problems.append(f"{len(tail)} appended hits")
        if any("via" not in hit or "graph" not in hit.get("signals", {}) for hit in tail):
            problems.append("an appended hit without via or a graph signal")
        if set(found[len(direct) :]) & set(direct):
            problems.append("an appended hit repeats a direct one")
        return problems

    return check


@dataclass
class ReadRun:
    cells: list[Cell]
    appended: list[int]  # hits appended per expanded query (current)
    start_secs: float
    log_problems: list[str]


def run_reads(built: Built, corpus: Plan, root: Path, args: argparse.Namespace) -> ReadRun:
    root.mkdir(parents=True)
    shutil.copytree(built.root / "palace", root / "palace")
    daemon = Daemon(root)
    try:
        start_secs = start_daemon(daemon)
        rng = random.Random(args.seed + 3)
        sample = rng.sample(built.entity_ids, min(args.sample, len(built.entity_ids)))
        texts = queries(corpus, args.queries, args.seed)
        relationships = [
            Cell("relationships now", [(f"/api/entities/{e}/relationships", {}) for e in sample]),
            Cell(
                "relationships as_of",
                [(f"/api/entities/{e}/relationships", {"as_of": built.as_of}) for e in sample],
            ),
            Cell(
                "relationships include_expired",
                [(f"/api/entities/{e}/relationships", {"include_expired": "true"}) for e in sample],
            ),
            Cell("health", [("/api/health", {}) for _ in sample]),
        ]

        def search(**extra: str) -> list[tuple[str, dict[str, Any]]]:
            base = {"ranking": "lexical", "limit": str(LIMIT)}
            return [("/api/search", {"q": text, **base, **extra}) for text in texts]

        plain = Cell("search plain", search())
        expanded = Cell("search expand", search(expand="true"))
        expanded.check = check_expanded(plain)
        plain_as_of = Cell("search plain as_of", search(as_of=built.as_of))
        expanded_as_of = Cell("search expand as_of", search(expand="true", as_of=built.as_of))
        expanded_as_of.check = check_expanded(plain_as_of)
        searches = [plain, expanded, plain_as_of, expanded_as_of]
        with httpx.Client(base_url=daemon.base_url, timeout=300) as client:
            print("  timing relationships", flush=True)
            time_cells(client, relationships, args.passes)
            print("  timing searches", flush=True)
            time_cells(client, searches, args.passes)
        for cell in searches:
            if cell.check is not None:
                for n, answer in enumerate(cell.answers):
                    cell.problems += [f"{texts[n]!r}: {p}" for p in cell.check(n, answer)]
        appended = [
            len(answer["results"]) - len(plain.answers[n]["results"])
            for n, answer in enumerate(expanded.answers)
        ]
    finally:
        stop(daemon)
    return ReadRun(relationships + searches, appended, start_secs, log_problems(daemon.log()))


# Reporting -------------------------------------------------------------------------------------


def ms(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def report(
    built: Built,
    reads: ReadRun,
    load_before: Sequence[float],
    probes: tuple[float, float],
    args: argparse.Namespace,
) -> None:
    print_machine(load_before, probes)

    ingest = built.ingest
    print(
        f"\nGraph: {len(set(built.entity_ids)):,} entities, {built.relationships:,} relationships "
        f"({ingest.supersessions:,} closed by a supersession), {built.drawers:,} drawers with "
        f"{args.mentions} mentions each ({ingest.mentions:,}), plus "
        f"{ingest.facts + ingest.supersessions:,} checkpoint drawers as evidence"
    )
    print(
        f"  relationships per entity (either end, open or closed, 200 sampled): median "
        f"{built.degrees.get('median', 0):g}, p95 {built.degrees.get('p95', 0):g}, max "
        f"{built.degrees.get('max', 0):g}"
    )
    print(
        f"  built in {ingest.wall_secs:.0f} s: drawers "
        f"{per_sec(ingest.drawers / ingest.drawer_secs)}/s (checkpoint jobs, server), mentions "
        f"{per_sec(ingest.mentions / ingest.mention_secs)}/s ({ingest.mention_clients} clients), "
        f"facts {per_sec(ingest.facts / ingest.fact_secs)}/s, supersessions "
        f"{per_sec(ingest.supersessions / max(ingest.supersession_secs, 1e-9))}/s (checkpoint "
        f"jobs, server); palace {directory_size(built.root / 'palace') / 1024**2:,.0f} MiB"
    )

    print(
        f"\nReads: {len(reads.cells[0].requests)} entities, {args.queries} queries, "
        f"{args.passes} timed passes, one client; daemon ready in {reads.start_secs:.1f} s"
    )
    print(f"  {'cell':<32} {'n':>5} {'median ms':>10} {'p95 ms':>8} {'max ms':>8}  target")
    for cell in reads.cells:
        samples = cell.samples
        target = TARGET_MS.get(cell.label) or TARGET_MS.get(
            "relationships" if cell.label == "relationships now" else ""
        )
        median = statistics.median(samples)
        verdict = (
            "" if target is None else f"< {target:g}: " + ("met" if median < target else "MISSED")
        )
        print(
            f"  {cell.label:<32} {len(samples):>5} {ms(median):>10} "
            f"{ms(quantile(samples, 95)):>8} {ms(max(samples)):>8}  {verdict}"
        )
    appended = Counter(reads.appended)
    print(
        "  expanded answers appended "
        + ", ".join(f"{n} hits x{count}" for n, count in sorted(appended.items()))
    )
    problems = [p for cell in reads.cells for p in cell.problems]
    print(f"  answer checks: {'all passed' if not problems else f'{len(problems)} problems'}")
    for problem in problems[:10]:
        print(f"    {problem}")
    for line in reads.log_problems[:10]:
        print(f"  daemon log: {line}")


# Running ---------------------------------------------------------------------------------------


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entities", type=int, default=10_000, help="entities (10,000)")
    parser.add_argument("--relationships", type=int, default=50_000, help="relationships (50,000)")
    parser.add_argument("--drawers", type=int, default=10_000, help="drawers mentioning (10,000)")
    parser.add_argument("--mentions", type=int, default=3, help="entities per drawer (3)")
    parser.add_argument("--sample", type=int, default=200, help="entities whose reads are timed")
    parser.add_argument("--queries", type=int, default=100, help="search queries (100)")
    parser.add_argument("--passes", type=int, default=3, help="timed passes (3)")
    parser.add_argument("--clients", type=int, default=4, help="parallel clients for mentions")
    parser.add_argument(
        "--extract-drawers", type=int, default=500, help="drawers for the extraction figure"
    )
    parser.add_argument("--no-extract", action="store_true", help="skip the extraction figure")
    parser.add_argument(
        "--fuzzy", action="store_true", help="build with entity resolution's one-typo rule on"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cache-dir", type=Path, default=CACHE_DIR)
    parser.add_argument("--rebuild", action="store_true", help="build the palace again")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="1,000 entities, 5,000 relationships, 1,000 drawers, 50 of each read, one pass",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.entities, args.relationships, args.drawers = 1000, 5000, 1000
        args.sample, args.queries, args.passes, args.extract_drawers = 50, 50, 1, 200
    if args.entities < 10 or args.drawers * args.mentions < args.entities:
        parser.error("every entity needs a mention: drawers x mentions >= entities >= 10")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    probe_before = cpu_probe()
    corpus = plan(args)
    built = cached_palace(corpus, args)
    with tempfile.TemporaryDirectory(prefix="memcastle-bench-graph-") as scratch:
        reads = run_reads(built, corpus, Path(scratch) / "daemon", args)
        report(built, reads, load_before, (probe_before, cpu_probe()), args)
        if not args.no_extract:
            from bench import extract

            print(f"\nExtraction (bench/extract.py, --drawers {args.extract_drawers})", flush=True)
            try:
                figures = extract.run(args.extract_drawers, args.seed, Path(scratch) / "extract")
            except Exception as exc:  # the reads above are reported whatever happens here
                print(f"  failed: {type(exc).__name__}: {exc}")
            else:
                extract.report(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
