"""What an installed WebAssembly source costs: one call of the host, and mining agent transcripts.

Run from the repository root after the set-up has built the bundled sources (`make run` or
`make test` does; `.venv/bin/python -m sources.building` alone): `.venv/bin/python bench/sources.py`
(`--sessions 200` for a quick run). It measures and reports; it exits 0 whatever the figures are.

1. **One call.** The bundled `claude` component is loaded once (compiled, or read from the
   compiled cache), then each call is timed as the pipeline makes it: a fresh store and instance,
   the call, its answer converted (`default-room`, which does nothing, then `normalize` of a
   generated session of 8 turns). Median and p90 of `--calls` calls each. Target: 5 ms median.
2. **Mining transcripts.** `--sessions` (1,000) generated Claude Code sessions of `--turns` (4)
   exchanges, in the layout of `~/.claude/projects` (`tests.support.transcripts`), mined through
   the bundled `claude` source by a daemon (`manage.py serve`, embedding off, deduplication on,
   `mining.max_documents` above the session count): the first mine, an unchanged re-mine (its
   cursor is past every session: nothing is discovered), and an unchanged `full` re-mine (every
   session read again and skipped because its revision is stored). Sessions a second on the
   server (`completed_at - started_at` of the job). Targets: first mine 50 sessions a second,
   unchanged re-mine 500. The daemon is stopped by its pid, on error too.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kernel.config import default_assets_dir  # noqa: E402
from sources.adapters import RawDocument  # noqa: E402
from sources.archive import sha256_hex  # noqa: E402
from sources.component_adapter import Caps, ComponentAdapter  # noqa: E402
from sources.components import ComponentRuntime  # noqa: E402
from sources.manifest import parse_manifest  # noqa: E402
from sources.packages import compiled_cache_dir  # noqa: E402
from tests.support.daemon import Daemon  # noqa: E402
from tests.support.http import TERMINAL, watch  # noqa: E402
from tests.support.transcripts import claude_tree  # noqa: E402

BUNDLED = default_assets_dir() / "sources"


def timed(function: object, count: int) -> list[float]:
    laps = []
    for _ in range(count):
        started = time.perf_counter()
        function()  # type: ignore[operator]
        laps.append((time.perf_counter() - started) * 1000)
    return laps


def figures(laps: list[float]) -> str:
    ordered = sorted(laps)
    p90 = ordered[int(len(ordered) * 0.9)]
    return f"median {statistics.median(ordered):.2f} ms, p90 {p90:.2f} ms ({len(ordered)} calls)"


def one_call(args: argparse.Namespace, scratch: Path) -> None:
    directory = BUNDLED / "claude"
    manifest = parse_manifest((directory / "memcastle-source.toml").read_text())
    runtime = ComponentRuntime(compiled_cache_dir(os.environ))
    started = time.perf_counter()
    wasm = directory / "source.wasm"
    component = runtime.load(wasm, sha256_hex(wasm.read_bytes()))
    print(f"load (compile or read the compiled form): {time.perf_counter() - started:.2f} s")
    adapter = ComponentAdapter(manifest, component, origin="bundled", caps=Caps(256, 60))
    [session] = claude_tree(scratch / "one", sessions=1, turns=8)
    raw = RawDocument(
        external_id=session.stem,
        revision="r",
        body=session.read_text(),
        metadata={"path": str(session)},
    )
    adapter.default_room()
    print(f"default-room: {figures(timed(adapter.default_room, args.calls))}")
    print(f"normalize (8 turns): {figures(timed(lambda: adapter.normalize(raw), args.calls))}")


def mine(daemon: Daemon, locator: Path, *, full: bool = False) -> dict[str, object]:
    with daemon.client() as client:
        body = {"type": "mine", "source": "claude", "locator": str(locator), "full": full}
        response = client.post("/api/jobs", json=body)
        assert response.status_code == 201, response.text
        job = watch(
            client,
            response.json()["id"],
            lambda job: job["status"] in TERMINAL,
            "the mine to end",
            timeout=3600,
            interval=0.2,
        )
    assert job["status"] == "completed", job
    return job


def seconds(job: dict[str, object]) -> float:
    started = dt.datetime.fromisoformat(str(job["started_at"]))
    completed = dt.datetime.fromisoformat(str(job["completed_at"]))
    return (completed - started).total_seconds()


def mining(args: argparse.Namespace, scratch: Path) -> None:
    projects = scratch / "projects"
    claude_tree(projects, sessions=args.sessions, turns=args.turns)
    size = sum(path.stat().st_size for path in projects.rglob("*.jsonl"))
    print(f"{args.sessions} sessions of {args.turns} exchanges, {size / 1e6:.1f} MB")
    (scratch / "daemon").mkdir()
    daemon = Daemon(
        scratch / "daemon",
        env={"MEMCASTLE_MINING_MAX_DOCUMENTS": str(args.sessions * 3)},
    ).start()
    try:
        with daemon.client() as client:
            enabled = client.post("/api/source-packages/claude/enable")
            assert enabled.status_code == 200, enabled.text
        for label, full in (("first mine", False), ("unchanged re-mine", False)):
            job = mine(daemon, projects, full=full)
            print(f"{label}: {rate(job, args.sessions)}; result {job['result']}")
        job = mine(daemon, projects, full=True)
        print(f"unchanged full re-mine: {rate(job, args.sessions)}; result {job['result']}")
    finally:
        daemon.stop()


def rate(job: dict[str, object], sessions: int) -> str:
    took = seconds(job)
    return f"{took:.2f} s, {sessions / took:.0f} sessions/s"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=4)
    args = parser.parse_args(argv)
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="memcastle-bench-sources-") as scratch:
        one_call(args, Path(scratch))
        mining(args, Path(scratch))


if __name__ == "__main__":
    main()
