"""How soon one daemon of a remote palace sees another's writes.

Two daemons share a SurrealDB server (`tests.support.remote_surreal`) and a Redis broker. Drawers
are filed one at a time through daemon A, each with a word no other drawer holds; for each, the
script measures from A's `201` to:

- B's event stream announcing the drawer (the relay through Redis), and
- B's lexical search finding it (B's indexes following the store's change feed), polled every
  5 ms.

It prints p50, p90, p99 and the maximum of both lags. The target (issue 25): the search lag within
1 s.

    .venv/bin/python bench/cluster.py [--drawers 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from tests.support.daemon import Daemon  # noqa: E402
from tests.support.events import EventStream, Frame  # noqa: E402
from tests.support.redis_server import redis_server  # noqa: E402
from tests.support.surreal_server import remote_surreal  # noqa: E402
from tests.support.workers import write_config  # noqa: E402

WING = "lag"
ROOM = "notes"
POLL_SECS = 0.005
TIMEOUT_SECS = 10.0


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def report(name: str, lags: list[float]) -> None:
    ms = [lag * 1000 for lag in lags]
    print(
        f"  {name:<28} p50 {statistics.median(ms):7.1f} ms   p90 {percentile(ms, 0.9):7.1f}"
        f"   p99 {percentile(ms, 0.99):7.1f}   max {max(ms):7.1f}   ({len(ms)} drawers)"
    )


class Announcements:
    """B's stream, read on a thread: when each drawer id was first announced."""

    def __init__(self, stream: EventStream) -> None:
        self.stream = stream
        self.seen: dict[str, float] = {}
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while not self.stream.ended.is_set():
            try:
                item = self.stream.next(1.0)
            except TimeoutError:
                continue
            if isinstance(item, Frame) and item.event == "drawer":
                with self.lock:
                    self.seen.setdefault(item.data["id"], time.monotonic())

    def wait(self, drawer_id: str) -> float:
        deadline = time.monotonic() + TIMEOUT_SECS
        while time.monotonic() < deadline:
            with self.lock:
                if drawer_id in self.seen:
                    return self.seen[drawer_id]
            time.sleep(POLL_SECS)
        raise TimeoutError(f"daemon B never announced {drawer_id}")


def found_at(client: httpx.Client, word: str, drawer_id: str) -> float:
    deadline = time.monotonic() + TIMEOUT_SECS
    while time.monotonic() < deadline:
        answer = client.get("/api/search", params={"q": word, "ranking": "lexical", "limit": 1})
        answer.raise_for_status()
        if any(hit["id"] == drawer_id for hit in answer.json()["results"]):
            return time.monotonic()
        time.sleep(POLL_SECS)
    raise TimeoutError(f"daemon B's search never found {word}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--drawers", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        with remote_surreal(root / "surreal") as server, redis_server(root / "redis") as broker:
            config = write_config(root / "config", server.url, broker)
            env = {"MEMCASTLE_CONFIG": str(config)}
            daemons = [Daemon(root / name, env=env) for name in ("a", "b")]
            try:
                for daemon in daemons:
                    daemon.root.mkdir()
                    daemon.start()
                writer, reader = (daemon.client() for daemon in daemons)
                writer.post("/api/wings", json={"name": WING}).raise_for_status()
                writer.post(f"/api/wings/{WING}/rooms", json={"name": ROOM}).raise_for_status()
                announcements = Announcements(EventStream(daemons[1]))
                event_lags: list[float] = []
                search_lags: list[float] = []
                for _ in range(args.drawers):
                    word = f"lag{uuid.uuid4().hex}"
                    answer = writer.post(
                        f"/api/wings/{WING}/rooms/{ROOM}/drawers",
                        json={"content": f"a note holding {word}"},
                    )
                    filed = time.monotonic()
                    answer.raise_for_status()
                    drawer_id = answer.json()["id"]
                    search_lags.append(found_at(reader, word, drawer_id) - filed)
                    event_lags.append(announcements.wait(drawer_id) - filed)
                announcements.stream.close()
                writer.close()
                reader.close()
            finally:
                for daemon in daemons:
                    if daemon.process is not None and daemon.process.poll() is None:
                        daemon.stop()
    print(f"two daemons on one remote palace, a drawer filed through A, {args.drawers} times:")
    report("B's stream announces it", event_lags)
    report("B's search finds it", search_lags)


if __name__ == "__main__":
    main()
