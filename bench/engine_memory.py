"""What the embedded SurrealDB engine holds of what it reads, and what gives it back.

Issue 26 part 6 bounds the daemon's resident memory at a million drawers (4 GiB). The search
indexes' share is measured by `bench/million.py`; this measures the engine's, on a palace filed
by `bench/search.py` (`--fill services` keeps one at a million drawers under its cache directory):

    .venv/bin/python -m bench.engine_memory <palace>/db [--reads 30000] [--url-options ...]

In a process of its own it opens the store (`surrealkv://<db>`, with `--url-options` appended,
for example `?surrealkv_block_cache_capacity=67108864`) and prints the process's resident memory
over its baseline:

1. after reading `--reads` drawers picked at random, ten a query by record id, as search reads
   its hits (the ids are listed first by a child process, so that listing them costs this one
   nothing);
2. after `Store.release_memory`, and the time it took;
3. after one scan of the drawer table (`SELECT count() ... GROUP ALL`, as the indexes check
   themselves at opening), then after `release_memory` again.

It measures and reports; it is not a test.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from surrealdb import RecordID

from bench.jobs import resident_gib
from kernel.store import Store

SEED = 5
AT_ONCE = 10
STEPS = (100, 1_000, 3_000, 10_000, 30_000, 100_000)


def list_ids(db: Path, count: int) -> list[str]:
    """`count` drawer ids at random, listed by a child process."""
    listed = subprocess.run(
        [sys.executable, "-m", "bench.engine_memory", str(db), "--list", str(count)],
        capture_output=True,
        text=True,
        check=True,
    )
    ids: list[str] = json.loads(listed.stdout)
    return ids


def print_ids(db: Path, count: int) -> None:
    store = Store(f"surrealkv://{db}")
    store.open()
    try:
        ids = store.one("SELECT VALUE record::id(id) FROM drawer")
    finally:
        store.close()
    print(json.dumps(random.Random(SEED).sample(ids, min(count, len(ids)))))


def measure(db: Path, reads: int, url_options: str) -> None:
    ids = list_ids(db, reads)
    base = resident_gib()

    def show(what: str) -> None:
        print(f"  {what}: {resident_gib() - base:+.2f} GiB", flush=True)

    store = Store(f"surrealkv://{db}{url_options}")
    store.open()
    try:
        print(f"{db}{url_options}: {len(ids):,} drawers to read", flush=True)
        show("opened")
        done = 0
        for step in (*(s for s in STEPS if s < len(ids)), len(ids)):
            started = time.perf_counter()
            for start in range(done, step, AT_ONCE):
                chosen = ids[start : min(start + AT_ONCE, step)]
                store.one(
                    "SELECT id, content FROM $ids", {"ids": [RecordID("drawer", d) for d in chosen]}
                )
            done = step
            show(f"{step:,} drawers read at random ({time.perf_counter() - started:.1f} s)")
        released(store, show)
        started = time.perf_counter()
        counted = store.one("SELECT count() AS n FROM drawer GROUP ALL")
        show(f"one scan of {counted[0]['n']:,} drawers ({time.perf_counter() - started:.1f} s)")
        released(store, show)
    finally:
        store.close()


def released(store: Store, show: Callable[[str], None]) -> None:
    started = time.perf_counter()
    store.release_memory()
    show(f"after release_memory ({time.perf_counter() - started:.2f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("db", type=Path, help="a palace's db directory")
    parser.add_argument("--reads", type=int, default=30_000)
    parser.add_argument("--url-options", default="", help="appended to the store's URL")
    parser.add_argument("--list", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.list:
        print_ids(args.db, args.list)
        return
    measure(args.db, args.reads, args.url_options)


if __name__ == "__main__":
    main()
