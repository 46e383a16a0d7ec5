"""What the database console costs: a query through it against the same query in process, and
the daemon's REST latency while a console client reads the whole drawer table in a loop.

Run from the repository root: `.venv/bin/python bench/db_console.py` (`--drawers`, `--repeat`).
It measures and reports; it is not a test, so it exits 0 whatever the figures are.

A daemon (`memcastle serve`, embedded palace, port 0) gets `--drawers` drawers over REST and
opens its console on a free port. Then:

1. One drawer by id, `SELECT * FROM $id`, `--repeat` times each, as a client would send it:
   a CBOR frame over a WebSocket to the console (the client's encode and decode included). The
   daemon is then stopped and the same palace opened in this process, where the same statement
   runs through `Store.query` (the SDK, as the daemon's own reads) and the same CBOR frame
   through `Store.rpc` (the engine alone). Target: the console adds at most 2 ms a query.
2. `GET /api/drawers/{id}` p50 over HTTP, `--repeat` requests, with the console idle and with
   a console client (a process of its own, as Studio would be) running `SELECT * FROM drawer`
   in a loop, alternated twice. Target: the
   REST p50 at most doubled.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from multiprocessing import Event, Process, Value
from pathlib import Path
from typing import Any

sys.path[0] = str(Path(__file__).resolve().parent.parent)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memcastle_project.settings")

import httpx  # noqa: E402
from surrealdb import RecordID  # noqa: E402
from surrealdb.data.cbor import decode, encode  # noqa: E402
from websockets.sync.client import ClientConnection  # noqa: E402
from websockets.sync.client import connect as ws_connect  # noqa: E402
from websockets.typing import Subprotocol  # noqa: E402

from bench.hierarchy import measure  # noqa: E402
from bench.jobs import quantile  # noqa: E402
from kernel.store import Store  # noqa: E402
from tests.support.daemon import Daemon  # noqa: E402

STATEMENT = "SELECT * FROM $id"


WARMUP = 20


def timed(call: Callable[[], object], repeat: int) -> list[float]:
    return measure(call, WARMUP, repeat)


def line(label: str, samples: list[float]) -> str:
    return (
        f"  {label:<44} p50 {statistics.median(samples):7.3f}  p90 {quantile(samples, 90):7.3f} ms"
    )


def file_drawers(client: httpx.Client, count: int) -> list[str]:
    client.post("/api/wings", json={"name": "bench"})
    client.post("/api/wings/bench/rooms", json={"name": "console"})
    ids = []
    for n in range(count):
        filed = client.post(
            "/api/wings/bench/rooms/console/drawers",
            json={"content": f"drawer {n}: " + "the console reads what the daemon filed " * 8},
        )
        filed.raise_for_status()
        ids.append(filed.json()["id"])
    return ids


def frame(drawer_id: str) -> bytes:
    return encode(
        {
            "id": uuid.uuid4().hex,
            "method": "query",
            "params": [STATEMENT, {"id": RecordID("drawer", drawer_id)}],
        }
    )


def ask(ws: ClientConnection, request: bytes) -> Any:
    ws.send(request)
    answer = decode(ws.recv(timeout=60))
    if answer.get("error"):
        raise RuntimeError(answer["error"])
    return answer


def console_reads(url: str, drawer_id: str, repeat: int) -> list[float]:
    with ws_connect(f"{url}/rpc", subprotocols=[Subprotocol("cbor")]) as ws:
        ask(ws, encode({"id": 1, "method": "signin", "params": [{"user": "b", "pass": "b"}]}))
        return timed(lambda: ask(ws, frame(drawer_id)), repeat)


def rest_p50(client: httpx.Client, drawer_id: str, repeat: int) -> list[float]:
    return timed(lambda: client.get(f"/api/drawers/{drawer_id}").raise_for_status(), repeat)


def read_the_table(url: str, statement: str, stop: Event, reads: Value) -> None:  # type: ignore[type-arg]
    """A console client reading the whole drawer table, again and again, as SurrealDB Studio
    would from a process of its own."""
    with ws_connect(f"{url}/rpc", subprotocols=[Subprotocol("cbor")], max_size=None) as ws:
        ask(ws, encode({"id": 1, "method": "signin", "params": [{"user": "b", "pass": "b"}]}))
        request = encode({"id": 2, "method": "query", "params": [statement]})
        while not stop.is_set():
            ask(ws, request)
            with reads.get_lock():
                reads.value += 1


class TableLoop:
    """`read_the_table` in another process, for as long as the block runs."""

    def __init__(self, url: str, statement: str) -> None:
        self.stop = Event()
        self.reads = Value("i", 0)
        self.process = Process(target=read_the_table, args=(url, statement, self.stop, self.reads))

    def __enter__(self) -> TableLoop:
        self.process.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.process.join(timeout=120)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drawers", type=int, default=2000, help="drawers filed (2000)")
    parser.add_argument("--repeat", type=int, default=500, help="timed calls a figure (500)")
    parser.add_argument(
        "--loop-statement",
        default="SELECT * FROM drawer",
        help="what the console client runs in a loop (SELECT * FROM drawer)",
    )
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="bench-console-"))
    daemon = Daemon(root).start()
    try:
        with daemon.client() as client:
            print(f"filing {args.drawers} drawers ...", flush=True)
            ids = file_drawers(client, args.drawers)
            opened = client.post("/api/db", json={"port": 0}).json()
            url = opened["url"]
            target = ids[len(ids) // 2]

            print("\n1. One drawer by id through the console (client side)")
            through_console = console_reads(url, target, args.repeat)
            print(line("console: CBOR frame over ws://.../rpc", through_console))

            print("\n2. GET /api/drawers/{id} while a console client reads every drawer")
            idle: list[float] = []
            loaded: list[float] = []
            table_reads = 0
            started = time.perf_counter()
            for _ in range(2):
                idle += rest_p50(client, target, args.repeat)
                with TableLoop(url, args.loop_statement) as loop:
                    loaded += rest_p50(client, target, args.repeat)
                table_reads += loop.reads.value
            elapsed = time.perf_counter() - started
            print(line("console idle", idle))
            print(line("console reading the whole table in a loop", loaded))
            ratio = statistics.median(loaded) / statistics.median(idle)
            verdict = "met" if ratio <= 2 else "MISSED"
            print(f"  REST p50 ratio loaded/idle: {ratio:.2f} (target at most 2: {verdict})")
            print(f"  full-table reads meanwhile: {table_reads} in {elapsed:.1f} s of the run")
    finally:
        daemon.stop()

    store = Store(f"surrealkv://{daemon.palace}/db")
    store.open()
    try:
        record = RecordID("drawer", target)
        sdk = timed(lambda: store.query(STATEMENT, {"id": record}), args.repeat)
        engine = timed(lambda: decode(store.rpc(frame(target))), args.repeat)
    finally:
        store.close()
    print("\n1. (cont.) The same read in this process, on the same palace")
    print(line("in process: Store.query (the SDK)", sdk))
    print(line("in process: Store.rpc (the same CBOR frame)", engine))
    added = statistics.median(through_console) - statistics.median(sdk)
    added_engine = statistics.median(through_console) - statistics.median(engine)
    verdict = "met" if added <= 2 else "MISSED"
    print(
        f"  added by the console: {added:.3f} ms over Store.query, {added_engine:.3f} ms over "
        f"Store.rpc (target at most 2 ms: {verdict})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
