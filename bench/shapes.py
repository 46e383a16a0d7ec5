"""What rendering an answer through its shape costs (`Shape.render`, kernel/shapes.py), in
process: a drawer, a search answer of 10 and of 200 hits, a listing page of 50 drawers and a job.

Run from the repository root: `.venv/bin/python bench/shapes.py` (`--repeat`). It measures and
reports; it is not a test, so it exits 0 whatever the figures are.

The drawers are real rows: filed into an in-memory palace (`mem://`) by the filing service, a
third of them named, a third mined (their source carries an `origin`), then read back as the
services read them (`drawers_by_ids`, a room's listing). The job is a completed job's row as the
store returns it. Each cell is timed with `timeit` (as many calls as fill 0.2 s, the best of
`--repeat` runs) twice: `render` alone, on the values a service computed, and the whole step
from the stored rows (the value functions, then `render`), which is what replaced the
hand-written `*_view` functions.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import timeit
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path[0] = str(Path(__file__).resolve().parent.parent)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memcastle_project.settings")

import django  # noqa: E402

django.setup()

from jobs.services import job_values  # noqa: E402
from jobs.shapes import Job  # noqa: E402
from kernel.context import RequestContext  # noqa: E402
from kernel.store import Store  # noqa: E402
from palace.filing import Filing, FilingService  # noqa: E402
from palace.hierarchy import HierarchyService  # noqa: E402
from palace.repositories.filing import FilingRepository  # noqa: E402
from palace.repositories.hierarchy import HierarchyRepository  # noqa: E402
from palace.search.shapes import SearchResults  # noqa: E402
from palace.shapes import Drawer, DrawerList, drawer_values, listing_values  # noqa: E402

WORDS = ("deploy", "formatter", "database", "postgres", "release")
WORDS += ("friday", "review", "cache", "queue", "index")


def filed_drawers(count: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """`count` drawers filed in one room, read back by id, and the first page of the room's
    listing."""
    store = Store("mem://")
    store.open()
    store.migrate()
    repository = HierarchyRepository(store)
    hierarchy = HierarchyService(repository)
    filing = FilingService(FilingRepository(store), hierarchy)
    entries = []
    for n in range(count):
        content = " ".join(WORDS[(n + k) % len(WORDS)] for k in range(30)) + f" ref {n}"
        source: dict[str, Any] = {"kind": "manual", "agent": "bench"}
        if n % 3 == 2:
            source = {
                "kind": "file",
                "uri": f"/work/app/notes/{n}.md",
                "origin": {
                    "source_id": str(uuid.uuid4()),
                    "source": "directory",
                    "document": f"notes/{n}.md",
                    "chunk": 0,
                    "revision": "abc123",
                },
            }
        filing_ = Filing(
            content=content,
            name=f"notes/{n:06}.md" if n % 3 == 0 else None,
            tags=["ops", "bench"] if n % 2 else [],
            source=source,
        )
        entries.append(("bench", "notes", filing_))
    filed = filing.file_batch(RequestContext.build(requested_by="cli"), entries)
    ids = [outcome.drawer["id"] for outcome in filed if outcome.drawer is not None]
    by_id = hierarchy.drawers_by_ids(ids)
    rows = [by_id[drawer_id] for drawer_id in ids]
    return rows, repository.list_drawers(rows[0]["room"], limit=50, offset=0)


def job_row() -> dict[str, Any]:
    """A completed mine job as `SELECT *` returns it: keys in order, unset fields absent."""
    now = dt.datetime.now(dt.UTC)
    return {
        "attempt": 1,
        "cancel_requested": False,
        "checkpoint": {"cursor": {"mtime_ns": 1784039240000000000, "key": "notes/0199.md"}},
        "claim_rank": 50,
        "completed_at": now,
        "created_at": now,
        "id": str(uuid.uuid4()),
        "kind": {"type": "mine", "path": "/work/app", "wing": "app", "full": False},
        "max_attempts": 3,
        "pause_requested": False,
        "priority": 50,
        "progress": {"current": 200, "total": 200, "message": "200 documents"},
        "recovery_attempts": 0,
        "requested_by": "cli",
        "result": {"documents": 200, "created": 200, "superseded": 0, "unchanged": 0},
        "started_at": now,
        "status": "completed",
        "updated_at": now,
    }


def search_answer(hits: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "query": "deploy friday",
        "ranking": "hybrid",
        "profile": "local",
        "temporal": "current",
        "results": hits,
    }


def hits_of(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            **drawer_values(row),
            "score": 0.0328 - n / 10_000,
            "signals": {"lexical": 1.2, "semantic": 0.91},
        }
        for n, row in enumerate(rows)
    ]


def best_us(work: Callable[[], object], repeat: int) -> float:
    """The best time of one call, in microseconds."""
    timer = timeit.Timer(work)
    number, _ = timer.autorange()
    number = max(number, 1)
    return min(timer.repeat(repeat=repeat, number=number)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="timeit runs a cell (best kept)")
    args = parser.parse_args()

    rows, listing_rows = filed_drawers(200)
    named = {"id": str(uuid.uuid4()), "name": "bench"}
    job = job_row()

    def listing_of(page: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "wing": named,
            "room": named,
            "drawers": page,
            "total": 200,
            "limit": 50,
            "offset": 0,
        }

    drawer = drawer_values(rows[0])
    ten = search_answer(hits_of(rows[:10]))
    all_hits = search_answer(hits_of(rows))
    listing = listing_of([listing_values(row) for row in listing_rows])
    job_answer = job_values(job)
    cells: list[tuple[str, int, Callable[[], object], Callable[[], object]]] = [
        (
            "a drawer",
            1,
            lambda: Drawer.render(drawer),
            lambda: Drawer.render(drawer_values(rows[0])),
        ),
        (
            "a search answer of 10 hits",
            10,
            lambda: SearchResults.render(ten),
            lambda: SearchResults.render(search_answer(hits_of(rows[:10]))),
        ),
        (
            "a search answer of 200 hits",
            200,
            lambda: SearchResults.render(all_hits),
            lambda: SearchResults.render(search_answer(hits_of(rows))),
        ),
        (
            "a listing page of 50 drawers",
            50,
            lambda: DrawerList.render(listing),
            lambda: DrawerList.render(listing_of([listing_values(row) for row in listing_rows])),
        ),
        ("a job", 1, lambda: Job.render(job_answer), lambda: Job.render(job_values(job))),
    ]
    print(f"{'answer':<30} {'render (us)':>12} {'per object':>11} {'rows to answer (us)':>20}")
    for name, objects, render, whole in cells:
        rendered = best_us(render, args.repeat)
        total = best_us(whole, args.repeat)
        print(f"{name:<30} {rendered:>12.2f} {rendered / objects:>11.2f} {total:>20.2f}")


if __name__ == "__main__":
    main()
