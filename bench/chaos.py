"""Crash safety, measured: rounds of writes and jobs ended by `kill -9` of the daemon, then a
check that nothing acknowledged was lost and nothing was filed twice.

Run from the repository root: `.venv/bin/python bench/chaos.py` (`--rounds 100`, `--writers 4`,
`--seed 1`). It measures and reports; it is not a test, so it exits 0 whatever the figures are
(`tests/test_chaos.py` runs a short version and asserts them).

One embedded palace for every round. A share of the rounds (`--startup-kills`, 0.2) kills the
daemon while it starts, at a random moment of its first `--max-startup-kill` seconds (2);
another share (`--migration-kills`, 0.1) starts a new palace (a new database on the same server
with `--remote`), kills it while its schema migrations are applied (within
`--max-migration-kill`, 0.02 s, of its log saying the first is being applied) and checks that it
starts again fully migrated; the report says how many of those kills landed before the last
migration was recorded; another
(`--claim-kills`, 0.1) submits a job and kills the daemon within 10 ms, while the job is being
claimed. Any other round starts the daemon (`memcastle serve`), and
`--writers` client threads send, back to back: drawers filed directly (`POST .../drawers`, each
with a unique text), supersedes of drawers they filed, and checkpoint jobs of 1 to 40 items
(unique texts), some paused and resumed; at a random moment from `--min-kill` to `--max-kill`
seconds the daemon is killed with SIGKILL, and the writers stop at their first failure. A
request counts as acknowledged when its success answer arrived. After the last round the daemon
starts once more and every job is waited for, then the palace is read through the API:

- acknowledged drawers and supersedes lost (a drawer not found by id, a replacement without its
  `supersedes`);
- items stored twice (a text of the round's writers found in more than one current drawer);
- jobs left non-terminal, and acknowledged checkpoint jobs whose items are not all filed;
- search indexes out of step (the drawers the indexes hold against a count of the store's, read
  from the store itself once the daemon has stopped); the status' drawer count, which the
  database keeps in an aggregate view, is reported beside it as its drift from that count;
- restarts that failed, and how long each took to serve.

With `--remote` the palace is a SurrealDB server (the tests' loopback one,
`tests.support.remote_surreal`) shared by the daemon and a `memcastle worker`, with a Redis
broker; each round kills the daemon, the worker or both (the worker is restarted at the next
round), and jobs a dead process held are taken over when their leases expire.

A thread of each round changes a directory tree (files added and rewritten, some of several
chunks) and asks for mines of it as it goes; after the last round, one more mine, then every
file's current chunks must be its current drawers (`documents behind`) and every current drawer
of the tree's room a file's current chunk (`left behind`).

Every figure should be 0.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from kernel.config import load_config  # noqa: E402
from kernel.store import Store  # noqa: E402
from palace.search.repository import SearchRepository  # noqa: E402
from tests.support.daemon import Daemon  # noqa: E402
from tests.support.http import TERMINAL, watch  # noqa: E402
from tests.support.redis_server import redis_server  # noqa: E402
from tests.support.surreal_server import remote_surreal  # noqa: E402
from tests.support.waits import wait_for  # noqa: E402
from tests.support.workers import Worker, write_config  # noqa: E402

WING = "chaos"
DIRECT_ROOM = "direct"
JOB_ROOM = "entries"  # where a checkpoint files a project item of a named wing
TREE_WING = "chaos-tree"
TREE_ROOM = "files"  # where a mine files a directory's documents
# Words of 32 hex digits a paragraph of a long file: 4,950 characters, under a chunk's 6,000.
PARAGRAPH_WORDS = 150


@dataclass
class Acknowledged:
    """What the writers were told was written, over every round."""

    drawers: dict[str, str] = field(default_factory=dict)  # id -> content
    replaced: list[tuple[str, str]] = field(default_factory=list)  # (old id, replacement id)
    jobs: dict[str, list[str]] = field(default_factory=dict)  # job id -> its item contents
    mines: list[str] = field(default_factory=list)  # mine job ids
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class Tree:
    """A directory the rounds mine while they change it: files are added and rewritten (each
    write a rename, as editors save), never removed. A write makes a file of one short line,
    or (one in four) of two or three paragraphs of about 5,000 characters, each a chunk of its
    own, so a rewrite may change, add or drop the chunks after the first."""

    root: Path
    versions: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def change(self, rng: random.Random) -> None:
        with self.lock:
            if not self.versions or rng.random() < 0.4:
                name = f"notes/n{len(self.versions)}.md"
            else:
                name = rng.choice(sorted(self.versions))
            version = self.versions.get(name, 0) + 1
            self.versions[name] = version
            path = self.root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            head = f"chaos file {name} version {version} {uuid.uuid4()}\n"
            parts = rng.choice((1, 1, 1, 2, 3))
            draft = path.with_suffix(".tmp")
            draft.write_text(
                head
                if parts == 1
                else "".join(
                    f"{head.strip()} part {part} "
                    + " ".join(uuid.uuid4().hex for _ in range(PARAGRAPH_WORDS))
                    + "\n\n"
                    for part in range(parts)
                )
            )
            draft.replace(path)

    def chunks(self) -> dict[str, list[str]]:
        """Each file's chunks as a mine files them: a paragraph each."""
        with self.lock:
            texts = {name: (self.root / name).read_text() for name in self.versions}
        return {
            name: [part + "\n\n" for part in text.split("\n\n")[:-1]] if "\n\n" in text else [text]
            for name, text in texts.items()
        }


@dataclass
class Report:
    rounds: int = 0
    startup_kills: int = 0
    migration_kills: int = 0
    kills_mid_migration: int = 0
    claim_kills: int = 0
    worker_kills: int = 0
    restarts_failed: int = 0
    restart_secs: list[float] = field(default_factory=list)
    lost_drawers: int = 0
    lost_supersedes: int = 0
    stored_twice: int = 0
    jobs_lost: int = 0
    jobs_not_terminal: int = 0
    jobs_incomplete: int = 0
    jobs_failed: int = 0
    index_gap: int = 0
    count_drift: int = 0
    mines: int = 0
    documents_behind: int = 0
    drawers_left_behind: int = 0
    acknowledged: int = 0

    def problems(self) -> int:
        return (
            self.restarts_failed
            + self.lost_drawers
            + self.lost_supersedes
            + self.stored_twice
            + self.jobs_lost
            + self.jobs_not_terminal
            + self.jobs_incomplete
            + self.index_gap
            + self.documents_behind
            + self.drawers_left_behind
        )


def writer(base_url: str, seed: int, done: threading.Event, acknowledged: Acknowledged) -> None:
    """Requests back to back until the daemon dies (the first failure) or the round ends."""
    rng = random.Random(seed)
    mine: list[str] = []
    with httpx.Client(base_url=base_url, timeout=30) as http:
        while not done.is_set():
            try:
                draw = rng.random()
                if draw < 0.55:
                    content = f"chaos drawer {uuid.uuid4()}"
                    answer = http.post(
                        f"/api/wings/{WING}/rooms/{DIRECT_ROOM}/drawers",
                        json={"content": content},
                    )
                    if answer.status_code != 201:
                        return
                    with acknowledged.lock:
                        acknowledged.drawers[answer.json()["id"]] = content
                    mine.append(answer.json()["id"])
                elif draw < 0.7 and mine:
                    old = mine.pop(rng.randrange(len(mine)))
                    content = f"chaos revision {uuid.uuid4()}"
                    answer = http.post(f"/api/drawers/{old}/supersede", json={"content": content})
                    if answer.status_code != 200:
                        return
                    new = answer.json()["replacement"]["id"]
                    with acknowledged.lock:
                        acknowledged.replaced.append((old, new))
                        acknowledged.drawers[new] = content
                else:
                    job_id = submit_checkpoint(http, rng, acknowledged)
                    if job_id is None:
                        return
                    if rng.random() < 0.2:
                        http.post(f"/api/jobs/{job_id}/pause")
                        http.post(f"/api/jobs/{job_id}/resume")
            except httpx.HTTPError:
                return


def submit_checkpoint(
    http: httpx.Client, rng: random.Random, acknowledged: Acknowledged
) -> str | None:
    """A checkpoint job of 1 to 40 unique items; its id once acknowledged, None if refused."""
    contents = [f"chaos item {uuid.uuid4()}" for _ in range(rng.randint(1, 40))]
    items = [{"destination": "project", "wing": WING, "content": c, "tags": []} for c in contents]
    answer = http.post("/api/jobs", json={"type": "checkpoint", "payload": {"items": items}})
    if answer.status_code != 201:
        return None
    job_id: str = answer.json()["id"]
    with acknowledged.lock:
        acknowledged.jobs[job_id] = contents
    return job_id


def tree_changer(
    base_url: str, seed: int, done: threading.Event, tree: Tree, acknowledged: Acknowledged
) -> None:
    """Changes the tree every 50-150 ms and asks for a mine of it about every third change,
    until the daemon dies or the round ends: mines start while files are being rewritten."""
    rng = random.Random(seed)
    with httpx.Client(base_url=base_url, timeout=30) as http:
        while not done.is_set():
            tree.change(rng)
            if rng.random() < 0.3:
                try:
                    answer = http.post(
                        "/api/jobs",
                        json={"type": "mine", "path": str(tree.root), "wing": TREE_WING},
                    )
                except httpx.HTTPError:
                    return
                if answer.status_code != 201:
                    return
                with acknowledged.lock:
                    acknowledged.mines.append(answer.json()["id"])
            done.wait(rng.uniform(0.05, 0.15))


def run_round(
    daemon: Daemon,
    worker: Worker | None,
    palaces: Palaces,
    tree: Tree,
    rng: random.Random,
    args: argparse.Namespace,
    acked: Acknowledged,
    report: Report,
) -> None:
    draw = rng.random()
    if draw < args.startup_kills:
        # Killed while it starts: opening the palace, recovering jobs, building or loading the
        # search indexes.
        daemon.start(wait=False)
        time.sleep(rng.uniform(0.0, args.max_startup_kill))
        daemon.kill()
        report.startup_kills += 1
        return
    if draw < args.startup_kills + args.migration_kills:
        kill_while_migrating(palaces.fresh(f"fresh_{report.rounds}"), rng, args, report)
        return
    started = time.perf_counter()
    try:
        daemon.start()
    except (RuntimeError, TimeoutError) as exc:
        report.restarts_failed += 1
        print(f"  round {report.rounds}: the daemon did not start: {exc}", flush=True)
        return
    report.restart_secs.append(time.perf_counter() - started)
    if worker is not None and not running(worker):
        # After the daemon: a worker refuses a palace whose migrations are pending.
        worker.start()
    with httpx.Client(base_url=daemon.base_url, timeout=30) as http:
        http.post(f"/api/wings/{WING}/rooms", json={"name": DIRECT_ROOM})
        if rng.random() < args.claim_kills:
            # Killed while the job just submitted is being claimed (a claim takes a few ms).
            submit_checkpoint(http, rng, acked)
            time.sleep(rng.uniform(0.0, 0.01))
            daemon.kill()
            report.claim_kills += 1
            return
    done = threading.Event()
    threads = [
        threading.Thread(
            target=writer, args=(daemon.base_url, rng.randrange(2**32), done, acked), daemon=True
        )
        for _ in range(args.writers)
    ]
    threads.append(
        threading.Thread(
            target=tree_changer,
            args=(daemon.base_url, rng.randrange(2**32), done, tree, acked),
            daemon=True,
        )
    )
    for thread in threads:
        thread.start()
    time.sleep(rng.uniform(args.min_kill, args.max_kill))
    victims = "daemon" if worker is None else rng.choice(("daemon", "worker", "both"))
    if victims != "daemon":
        assert worker is not None
        worker.kill()
        report.worker_kills += 1
    if victims == "worker":
        # The daemon lives on: the round's writers stop, and it stops cleanly.
        done.set()
        for thread in threads:
            thread.join(timeout=60)
        daemon.stop()
        return
    daemon.kill()
    done.set()
    for thread in threads:
        thread.join(timeout=60)


class Palaces:
    """Where the rounds' new palaces are made: a directory each, or with `--remote` a database
    each on the rounds' SurrealDB server."""

    def __init__(self, root: Path, remote: tuple[str, str] | None = None) -> None:
        self.root = root
        self.remote = remote

    def fresh(self, name: str) -> Daemon:
        root = self.root / name
        root.mkdir(parents=True)
        if self.remote is None:
            return Daemon(root)
        store_url, broker_url = self.remote
        config = write_config(root / "config", store_url, broker_url, database=name)
        return Daemon(root, env={"MEMCASTLE_CONFIG": str(config)})


def kill_while_migrating(
    fresh: Daemon, rng: random.Random, args: argparse.Namespace, report: Report
) -> None:
    """A new palace killed while its schema migrations are applied, then started again: it
    must start with every migration applied (the rounds' own palace migrated once, long ago).

    The kill follows the log's first "applying schema migration" line: the eleven migrations
    take about 120 ms of a three-second start on an embedded palace and 20 ms on a remote one,
    so a kill at a random moment of the start would seldom land in them. Whether it landed
    before the last one was recorded is read from the log as the kill left it."""
    fresh.start(wait=False)
    assert fresh.process is not None
    process = fresh.process
    try:
        wait_for(
            lambda: "applying schema migration" in fresh.log() or process.poll() is not None,
            timeout=60,
            what="the new palace to migrate",
            interval=0.002,
        )
        time.sleep(rng.uniform(0.0, args.max_migration_kill))
    finally:
        fresh.kill()
    report.migration_kills += 1
    if "schema at migration" not in fresh.log():
        report.kills_mid_migration += 1
    try:
        fresh.start()
        with fresh.client() as http:
            migrations = http.get("/api/status").json()["migrations"]
        if migrations["applied"] != migrations["available"]:
            raise RuntimeError(f"migrations {migrations} after the restart")
    except (RuntimeError, TimeoutError) as exc:
        report.restarts_failed += 1
        print(f"  round {report.rounds}: a palace killed while migrating: {exc}", flush=True)
    finally:
        if fresh.process is not None and fresh.process.poll() is None:
            fresh.stop()


def running(worker: Worker) -> bool:
    return worker.process is not None and worker.process.poll() is None


def check(
    daemon: Daemon, worker: Worker | None, tree: Tree, acked: Acknowledged, report: Report
) -> None:
    """The palace after the last restart, against what was acknowledged."""
    daemon.start()
    if worker is not None and not running(worker):
        worker.start()
    with httpx.Client(base_url=daemon.base_url, timeout=120) as http:
        known = []
        for job_id in [*acked.jobs, *acked.mines]:
            answer = http.get(f"/api/jobs/{job_id}")
            if answer.status_code == 404:
                report.jobs_lost += 1
                print(f"  job {job_id}: acknowledged, not found", flush=True)
                continue
            known.append(job_id)
            # A kill between a writer's pause and its resume leaves the job paused, as asked.
            if answer.json()["status"] == "paused":
                http.post(f"/api/jobs/{job_id}/resume")
        for job_id in known:
            job = watch(http, job_id, ended, f"job {job_id} to end", timeout=600)
            if job["status"] == "failed":
                report.jobs_failed += 1
                print(f"  job {job_id} ({job['kind']}) failed: {job.get('error')}", flush=True)
        report.documents_behind, report.drawers_left_behind = documents_behind(http, tree)
        listed = http.get("/api/jobs", params={"limit": 200}).json()["jobs"]
        report.jobs_not_terminal = sum(job["status"] not in TERMINAL for job in listed)
        for drawer_id in acked.drawers:
            if http.get(f"/api/drawers/{drawer_id}").status_code != 200:
                report.lost_drawers += 1
        for old, new in acked.replaced:
            replacement = http.get(f"/api/drawers/{new}")
            if replacement.status_code != 200 or replacement.json().get("supersedes") != old:
                report.lost_supersedes += 1
        current = Counter(
            content_of_room(http, WING, DIRECT_ROOM)
            + content_of_room(http, WING, JOB_ROOM)
            + content_of_room(http, TREE_WING, TREE_ROOM)
        )
        report.stored_twice = sum(count - 1 for count in current.values() if count > 1)
        report.jobs_incomplete = sum(
            any(current[c] == 0 for c in contents) for contents in acked.jobs.values()
        )
        wait_for(daemon.search_ready, timeout=300, what="the search indexes")
        status = http.get("/api/status").json()
    report.acknowledged = len(acked.drawers) + sum(len(c) for c in acked.jobs.values())
    report.mines = len(acked.mines)
    daemon.stop()
    stored = drawers_stored(daemon)
    report.index_gap = abs(status["search"]["drawers"] - stored)
    report.count_drift = abs(status["drawers"] - stored)


def drawers_stored(daemon: Daemon) -> int:
    """Every drawer of the palace, counted by a scan of the store itself (the daemon stopped,
    so an embedded palace can be opened)."""
    store = Store.from_config(load_config(env=daemon.env))
    store.open()
    try:
        return SearchRepository(store).drawer_count()
    finally:
        store.close()


def documents_behind(http: httpx.Client, tree: Tree) -> tuple[int, int]:
    """After one more mine of the tree, the files whose current text is not in their current
    drawers (the first chunk in the drawer named by the file, every other chunk in one valid
    now): a cursor that had moved past a document its drawers did not reach; and the current
    drawers of the tree's room that hold no file's current chunk (left by a run that did not
    finish, beside the drawers of the next)."""
    if not tree.versions:
        return 0, 0
    answer = http.post(
        "/api/jobs", json={"type": "mine", "path": str(tree.root), "wing": TREE_WING}
    )
    watch(http, answer.json()["id"], ended, "the last mine to end", timeout=600)
    chunks = tree.chunks()
    current = Counter(content_of_room(http, TREE_WING, TREE_ROOM))
    behind = 0
    for name, parts in chunks.items():
        drawer = http.get(f"/api/wings/{TREE_WING}/rooms/{TREE_ROOM}/drawers/{name}")
        found = drawer.json().get("content", drawer.json())
        if found == parts[0] and all(current[part] for part in parts):
            continue
        behind += 1
        print(f"  {name}: its drawer holds {str(found)[:80]!r}, the file {parts[0][:80]!r}")
    expected = Counter(part for parts in chunks.values() for part in parts)
    left = current - expected
    for text in left:
        print(f"  a current drawer that is no file's chunk: {text[:80]!r}", flush=True)
    return behind, sum(left.values())


def ended(job: dict[str, Any]) -> bool:
    return job["status"] in TERMINAL


def content_of_room(http: httpx.Client, wing: str, room: str) -> list[str]:
    """The texts of the room's current drawers, every page (a listing shows the start of each,
    and the superseded and retired ones too; a text longer than that is read by id)."""
    contents: list[str] = []
    offset = 0
    while True:
        page = http.get(
            f"/api/wings/{wing}/rooms/{room}/drawers", params={"limit": 200, "offset": offset}
        )
        if page.status_code == 404:
            return contents
        drawers = page.json()["drawers"]
        contents += [
            d["preview"]
            if d["length"] == len(d["preview"])
            else http.get(f"/api/drawers/{d['id']}").json()["content"]
            for d in drawers
            if d["valid_to"] is None
        ]
        if len(drawers) < 200:
            return contents
        offset += 200


def chaos(root: Path, args: argparse.Namespace) -> Report:
    """Run the rounds on one palace under `root` and check it; the figures."""
    with contextlib.ExitStack() as servers:
        if not args.remote:
            return rounds(Daemon(root), None, Palaces(root / "fresh"), args)
        store = servers.enter_context(remote_surreal(root / "surreal"))
        broker = servers.enter_context(redis_server(root / "redis"))
        config = write_config(root / "config", store.url, broker)
        (root / "daemon").mkdir()
        daemon = Daemon(root / "daemon", env={"MEMCASTLE_CONFIG": str(config)})
        palaces = Palaces(root / "fresh", remote=(store.url, broker))
        return rounds(daemon, Worker(root / "worker", config), palaces, args)


def rounds(
    daemon: Daemon, worker: Worker | None, palaces: Palaces, args: argparse.Namespace
) -> Report:
    rng = random.Random(args.seed)
    tree = Tree(daemon.root / "tree")
    acked = Acknowledged()
    report = Report()
    try:
        for number in range(args.rounds):
            report.rounds = number + 1
            run_round(daemon, worker, palaces, tree, rng, args, acked, report)
            if args.verbose:
                print(
                    f"  round {number + 1}: {len(acked.drawers)} drawers and "
                    f"{len(acked.jobs)} jobs acknowledged so far",
                    flush=True,
                )
        check(daemon, worker, tree, acked, report)
    finally:
        if daemon.process is not None and daemon.process.poll() is None:
            daemon.kill()
        if worker is not None and running(worker):
            worker.kill()
    return report


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=100, help="kill -9 rounds (100)")
    parser.add_argument("--writers", type=int, default=4, help="client threads (4)")
    parser.add_argument("--min-kill", type=float, default=0.5, help="earliest kill, s (0.5)")
    parser.add_argument("--max-kill", type=float, default=4.0, help="latest kill, s (4)")
    parser.add_argument(
        "--startup-kills", type=float, default=0.2, help="share of rounds killed at start-up (0.2)"
    )
    parser.add_argument(
        "--max-startup-kill", type=float, default=2.0, help="latest start-up kill, s (2)"
    )
    parser.add_argument(
        "--migration-kills",
        type=float,
        default=0.1,
        help="share of rounds killing a new palace while it migrates (0.1)",
    )
    parser.add_argument(
        "--max-migration-kill",
        type=float,
        default=0.02,
        help="latest kill after the first migration starts, s (0.02)",
    )
    parser.add_argument(
        "--claim-kills",
        type=float,
        default=0.1,
        help="share of rounds killed while a job just submitted is claimed (0.1)",
    )
    parser.add_argument(
        "--remote", action="store_true", help="a SurrealDB server, Redis and a worker"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--verbose", action="store_true", help="a line a round")
    return parser.parse_args(argv)


def main() -> int:
    args = arguments()
    report = chaos(Path(tempfile.mkdtemp(prefix="memcastle-bench-chaos-")), args)
    restarts = sorted(report.restart_secs)
    print(
        f"\n{report.rounds} rounds of kill -9 ({report.startup_kills} of them while starting, "
        f"{report.migration_kills} while a new palace migrates ({report.kills_mid_migration} "
        f"before its last migration was recorded), {report.claim_kills} while a "
        f"job is claimed, {report.worker_kills} of a worker"
        f"{' (remote palace)' if args.remote else ''}), "
        f"{args.writers} writers, seed {args.seed}"
    )
    print(f"  acknowledged: {report.acknowledged:,} drawers and checkpoint items")
    print(f"  lost drawers {report.lost_drawers}, lost supersedes {report.lost_supersedes}")
    print(f"  items stored twice {report.stored_twice}")
    print(
        f"  jobs lost {report.jobs_lost}, left non-terminal {report.jobs_not_terminal}, "
        "acknowledged jobs with items "
        f"missing {report.jobs_incomplete} (failed {report.jobs_failed})"
    )
    print(
        f"  search index drawers differing from the store's {report.index_gap} (the status' "
        f"count, an aggregate view, off by {report.count_drift})"
    )
    print(
        f"  mines of a changing tree {report.mines}; files whose drawer is behind them "
        f"after one more mine {report.documents_behind}, current drawers that are no file's "
        f"chunk {report.drawers_left_behind}"
    )
    if restarts:
        median = restarts[len(restarts) // 2]
        print(
            f"  restarts failed {report.restarts_failed}; ready in {median:.1f} s median, "
            f"{restarts[-1]:.1f} s at most"
        )
    print(f"  problems in all: {report.problems()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
