"""The search indexes at 10,000, 100,000 and 1,000,000 drawers, in process: how each cost grows.

Issue 26 part 6 asks for `bench/search.py` at a million drawers through HTTP. Filing that many
through the API takes this machine hours (100,000 took 58 minutes, `docs/benchmarks.md`), so this
benchmark measures, for each size, the part of a search and of a restart that grows with the
palace: the daemon's own indexes (`palace.search`: the catalog, the tantivy index and the vector
index), built in this process from the drawers of `bench/search_corpus.py` (the same texts and
stand-in vectors as `bench/search.py`, every drawer current, one vector each).

For each size it prints:

- the build time of each index;
- search latency as the search service ranks (`SearchService._rank`, without the store read of
  the hits and without HTTP): lexical (every word, then any word when nothing matched), semantic
  (the catalog's scope mask and the vector search) and hybrid (both legs over pools of 20, the
  query's lexical mass, the chatter look-up and the fusion), unscoped and scoped to a wing, over
  `--queries` queries and `--passes` timed passes after an untimed one; median and p95;
- the snapshot (catalog and vectors, as the daemon saves it): bytes, save time, and what a
  restart takes: a new process that loads the snapshot, opens the tantivy index and answers one
  query of each ranking, its time to that first answer and its resident memory then;
- this process's resident memory after the build.

    .venv/bin/python -m bench.million [--sizes 10000 100000 1000000] [--queries 100] [--passes 3]
"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.jobs import resident_gib
from bench.search_corpus import Corpus, Projection
from palace.search import fusion, lexical
from palace.search.catalog import Catalog
from palace.search.chatter import is_chatter
from palace.search.lexical import LexicalIndex
from palace.search.scope import OPEN, Scope
from palace.search.vectors import VectorIndex

SEED = 1
QUERY_SEED = 7
NOW = time.time_ns()
POOL = fusion.pool(10)


class Indexes:
    """The three indexes of one palace, and the three rankings over them."""

    def __init__(self, catalog: Catalog, text: LexicalIndex, vectors: VectorIndex) -> None:
        self.catalog, self.text, self.vectors = catalog, text, vectors

    def lexical(self, words: list[str], scope: Scope) -> list[tuple[str, float]]:
        hits = self.text.search(words, scope, 10, every_word=True)
        if not hits and len(words) >= 2:
            hits = self.text.search(words, scope, 10, every_word=False)
        return hits

    def semantic(self, vector: np.ndarray, scope: Scope, limit: int) -> list[tuple[str, float]]:
        ids = self.catalog.ids
        found = self.vectors.search(vector, self.catalog.mask(scope), limit)
        return sorted(((ids[row], score) for row, score in found), key=lambda h: (-h[1], h[0]))

    def hybrid(self, words: list[str], vector: np.ndarray, scope: Scope) -> list[Any]:
        lexical_hits = self.text.search(words, scope, POOL, every_word=False)
        semantic_hits = self.semantic(vector, scope, POOL)
        chatter = self.catalog.chatter_among(d for d, _ in lexical_hits + semantic_hits)
        return fusion.fuse(lexical_hits, semantic_hits, self.text.mass(words), chatter)[:10]


def fields(drawer: Any) -> dict[str, Any]:
    return {
        "id": f"d{drawer.index}",
        "wing": drawer.wing,
        "room": drawer.room,
        "content": drawer.content,
        "chatter": is_chatter(drawer.content),
        "tags": [],
        "source_kind": "other",
        "valid_from": 0,
        "valid_to": OPEN,
    }


def timed(label: str, work: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    result = work()
    print(f"  {label}: {time.perf_counter() - started:.2f} s", flush=True)
    return result


def build(size: int, directory: Path) -> tuple[Indexes, Corpus, Projection]:
    corpus, projection = Corpus(size, SEED), Projection(SEED)
    drawers = timed("texts generated", lambda: corpus.drawers)
    vectors = timed("vectors generated", lambda: projection.vectors([d.content for d in drawers]))
    rows = [fields(drawer) for drawer in drawers]
    catalog = Catalog()
    timed("catalog built", lambda: [catalog.put(row) for row in rows])
    text = LexicalIndex.fresh(directory / "lexical")

    def fill_text() -> None:
        for row in rows:
            text.put(row)
        text.commit()

    timed("tantivy index built", fill_text)
    index = VectorIndex(vectors.shape[1])

    def fill_vectors() -> None:
        for row, vector in zip(rows, vectors, strict=True):
            index.put(catalog.row(row["id"]), vector[None, :])

    timed("vector index built", fill_vectors)
    return Indexes(catalog, text, index), corpus, projection


def latencies(indexes: Indexes, corpus: Corpus, projection: Projection, args: Any) -> None:
    queries = corpus.queries(args.queries, QUERY_SEED)
    asked = [(lexical.terms(q.text), projection.vector(q.text), q.wing) for q in queries]
    cells: dict[str, Callable[[list[str], np.ndarray, Scope], Any]] = {
        "lexical": lambda words, vector, scope: indexes.lexical(words, scope),
        "semantic": lambda words, vector, scope: indexes.semantic(vector, scope, 10),
        "hybrid": indexes.hybrid,
    }
    for name, rank in cells.items():
        for scoped in (False, True):
            samples = []
            for timed_pass in range(args.passes + 1):
                for words, vector, wing in asked:
                    scope = Scope(wing=wing if scoped else None, window=(NOW, NOW + 1))
                    started = time.perf_counter()
                    rank(words, vector, scope)
                    if timed_pass:
                        samples.append((time.perf_counter() - started) * 1000)
            samples.sort()
            print(
                f"  {name}, {'wing' if scoped else 'unscoped'}: median "
                f"{statistics.median(samples):.2f} ms, p95 {samples[int(len(samples) * 0.95)]:.2f}"
                f" ms ({len(samples)} searches)",
                flush=True,
            )


def snapshot(indexes: Indexes, directory: Path) -> Path:
    path = directory / "snapshot.pickle"
    state = {"catalog": indexes.catalog.state(), "vectors": indexes.vectors.state()}

    def save() -> None:
        path.write_bytes(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))

    timed("snapshot saved", save)
    print(f"  snapshot: {path.stat().st_size / 2**20:.0f} MiB", flush=True)
    return path


def restart(directory: Path, corpus: Corpus, projection: Projection) -> None:
    """A new process loads what a restart loads and answers a query of each ranking."""
    (query,) = corpus.queries(1, QUERY_SEED + 1)
    probe = {"words": lexical.terms(query.text), "vector": projection.vector(query.text).tolist()}
    (directory / "probe.json").write_text(json.dumps(probe))
    answer = subprocess.run(
        [sys.executable, "-m", "bench.million", "--restart", str(directory)],
        capture_output=True,
        text=True,
    )
    print(answer.stdout, end="", flush=True)
    if answer.returncode != 0:
        sys.exit(f"the restarted process failed:\n{answer.stderr}")


def restarted(directory: Path) -> None:
    started = time.perf_counter()
    probe = json.loads((directory / "probe.json").read_text())
    with (directory / "snapshot.pickle").open("rb") as handle:
        state = pickle.load(handle)
    catalog = Catalog.restore(state["catalog"])
    vectors = VectorIndex.restore(state["vectors"])
    del state
    loaded = time.perf_counter() - started
    indexes = Indexes(catalog, LexicalIndex(directory / "lexical"), vectors)
    vector = np.asarray(probe["vector"], dtype=np.float32)
    scope = Scope(window=(NOW, NOW + 1))
    found = (
        indexes.lexical(probe["words"], scope),
        indexes.semantic(vector, scope, 10),
        indexes.hybrid(probe["words"], vector, scope),
    )
    answered = time.perf_counter() - started
    assert all(found), "a restarted index answered nothing"
    print(
        f"  restart: snapshot loaded in {loaded:.2f} s, first answer of each ranking at "
        f"{answered:.2f} s, resident memory {resident_gib():.2f} GiB "
        f"(at the peak {resident_gib(field='VmHWM'):.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--restart", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.restart:
        restarted(Path(args.restart))
        return
    for size in args.sizes:
        print(f"{size:,} drawers", flush=True)
        with tempfile.TemporaryDirectory(prefix="memcastle-million-") as scratch:
            directory = Path(scratch)
            indexes, corpus, projection = build(size, directory)
            print(f"  resident memory after the build: {resident_gib():.2f} GiB", flush=True)
            latencies(indexes, corpus, projection, args)
            snapshot(indexes, directory)
            indexes.text.close()  # the restarted process takes the index's writer lock
            del indexes
            restart(directory, corpus, projection)


if __name__ == "__main__":
    main()
