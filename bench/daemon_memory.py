"""A daemon's resident memory while jobs read its whole palace, and whether the embedded engine
gives that back (`kernel.memory`).

The engine keeps what it reads; the daemon releases it once opening a large palace is done, and
again whenever it has grown by a gibibyte (checked once a minute). This runs a daemon on a copy
of a palace that `bench/search.py --keep` left in its cache and prints the daemon's resident
memory once search is ready, after each audit job (an audit reads every drawer), and after the
next check, with the releases its log reports:

    .venv/bin/python -m bench.daemon_memory /tmp/memcastle-bench/search-1-100000-seed1-services

It measures and reports; it is not a test.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from bench.jobs import resident_gib
from bench.search import running
from kernel.memory import EVERY_SECS
from tests.support.http import submit, wait_job
from tests.support.waits import wait_for

RELEASED = "the database engine gave back memory it had read"


def measure(cached: Path, audits: int) -> None:
    with tempfile.TemporaryDirectory(prefix="memcastle-daemon-memory-") as scratch:
        root = Path(scratch)
        started = time.perf_counter()
        shutil.copytree(cached / "palace", root / "palace")
        print(f"{cached}: copied in {time.perf_counter() - started:.0f} s", flush=True)
        with running(root) as daemon:
            assert daemon.process is not None
            pid = daemon.process.pid

            def show(what: str) -> None:
                releases = daemon.log().count(RELEASED)
                print(f"  {what}: {resident_gib(pid):.2f} GiB, releases {releases}", flush=True)

            wait_for(daemon.search_ready, timeout=3600, what="search", interval=1)
            show("search ready")
            with daemon.client() as client:
                client.timeout = 3600
                for number in range(1, audits + 1):
                    started = time.perf_counter()
                    job = wait_job(client, submit(client, {"type": "audit"})["id"], timeout=3600)
                    took = time.perf_counter() - started
                    show(
                        f"audit {number} ({job['result']['drawers_without_embedding']:,} "
                        f"drawers without a vector, {took:.1f} s)"
                    )
            time.sleep(EVERY_SECS + 5)
            show("a check later")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cached", type=Path, help="a palace bench/search.py --keep left")
    parser.add_argument("--audits", type=int, default=3)
    args = parser.parse_args()
    measure(args.cached, args.audits)


if __name__ == "__main__":
    main()
