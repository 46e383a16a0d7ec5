"""What MCP adds to a call: `memcastle_search` and `memcastle_status` over MCP against the same
call over REST, on a palace of 10,000 drawers, through a real daemon.

Run from the repository root: `.venv/bin/python bench/mcp.py` (`--size`, `--queries`,
`--passes`). It measures and reports; it is not a test, so it exits 0 whatever the figures are.

The palace is the one `bench/search.py` builds and caches (`/tmp/memcastle-bench-search/`,
built through a daemon on first use), copied for this run. One daemon (`manage.py serve` in a
subprocess) serves both sides. REST is one keep-alive `httpx` client; MCP is one session of the
SDK's own client (`mcp.Client` over streamable HTTP, the initialize handshake). Each of
`--queries` queries (1 to 4 words of a drawer, as bench/search.py draws them) is sent as
`GET /api/search?q=...&limit=10` and as `memcastle_search {"query": ..., "limit": 10}` (the
palace has no default embedding profile, so `auto` ranks lexically on both sides); `status` is
`GET /api/status` and `memcastle_status`. One untimed pass checks that both sides give the same
hits; then `--passes` timed passes, REST and MCP alternating call by call so that a slow moment
of the machine hits both. Each call is timed in the client, around the whole call: for MCP that
includes the JSON-RPC framing, the SSE response and parsing the tool's text back into JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import httpx

# Python puts this script's directory first on the path, where this file would stand in for the
# `mcp` package; the repository root takes its place.
sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench import search as search_bench  # noqa: E402
from bench.search_corpus import Corpus, Projection  # noqa: E402
from tests.support.mcp_client import call, connect  # noqa: E402

Timings = dict[str, list[float]]


async def timed(timings: Timings, cell: str, work: Awaitable[Any]) -> Any:
    start = time.perf_counter()
    answer = await work
    timings.setdefault(cell, []).append(time.perf_counter() - start)
    return answer


async def rest_get(client: httpx.AsyncClient, path: str, **params: Any) -> Any:
    response = await client.get(path, params=params)
    response.raise_for_status()
    return response.json()


async def measure(base_url: str, queries: Sequence[str], passes: int) -> Timings:
    timings: Timings = {}
    async with (
        httpx.AsyncClient(base_url=base_url, timeout=60) as rest,
        connect(base_url) as mcp,
    ):
        calls: list[tuple[str, Callable[[], Awaitable[Any]], Callable[[], Awaitable[Any]]]] = [
            (
                "search",
                lambda q=query: rest_get(rest, "/api/search", q=q, limit=10),
                lambda q=query: call(mcp, "memcastle_search", {"query": q, "limit": 10}),
            )
            for query in queries
        ]
        calls += [
            (
                "status",
                lambda: rest_get(rest, "/api/status"),
                lambda: call(mcp, "memcastle_status"),
            )
        ] * len(queries)
        for cell, over_rest, over_mcp in calls:
            rest_answer, mcp_answer = await over_rest(), await over_mcp()
            if cell == "search" and _ids(rest_answer) != _ids(mcp_answer):
                raise SystemExit(f"REST and MCP disagree on {rest_answer['query']!r}")
        for _ in range(passes):
            for cell, over_rest, over_mcp in calls:
                await timed(timings, f"{cell} REST", over_rest())
                await timed(timings, f"{cell} MCP", over_mcp())
    return timings


def _ids(answer: dict[str, Any]) -> list[str]:
    return [hit["id"] for hit in answer["results"]]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def report(timings: Timings, args: argparse.Namespace, load: tuple[float, float]) -> None:
    print(f"\n{args.size:,} drawers, {args.queries} queries x {args.passes} passes")
    print(
        f"machine: {os.cpu_count()} cores, load average {load[0]:.2f} before, {load[1]:.2f} after"
    )
    print(f"{'call':<16}{'median':>12}{'p95':>12}{'mean':>12}")
    for cell, values in timings.items():
        values = sorted(values)
        p95 = values[min(len(values) - 1, int(len(values) * 0.95))]
        print(
            f"{cell:<16}{ms(statistics.median(values)):>12}{ms(p95):>12}"
            f"{ms(statistics.fmean(values)):>12}"
        )
    for name in ("search", "status"):
        added = statistics.median(timings[f"{name} MCP"]) - statistics.median(
            timings[f"{name} REST"]
        )
        verdict = "met" if added < 0.005 else "missed"
        print(f"MCP adds {ms(added)} to the REST median of {name} (target < 5 ms: {verdict})")


def arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000, help="drawers in the palace (10000)")
    parser.add_argument("--queries", type=int, default=100, help="queries (100)")
    parser.add_argument("--passes", type=int, default=5, help="timed passes (5)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the corpus (1)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    build = search_bench.arguments(["--sizes", str(args.size), "--seed", str(args.seed)])
    build.cache_dir.mkdir(parents=True, exist_ok=True)
    corpus = Corpus(args.size, args.seed)
    built = search_bench.cached_palace(corpus, Projection(args.seed), build)
    queries = [query.text for query in corpus.queries(args.queries, args.seed)]
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="memcastle-bench-mcp-") as scratch:
        root = Path(scratch) / "daemon"
        search_bench.copy_palace(built, root)
        with search_bench.running(root) as daemon:
            timings = asyncio.run(measure(daemon.base_url, queries, args.passes))
    report(timings, args, (load_before, os.getloadavg()[0]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
