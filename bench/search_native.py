"""The same searches answered by SurrealDB's own indexes, in this process: the comparison.

ARCHITECTURE.md chose derived in-process indexes because the engine's own full-text and HNSW
indexes were slow here; this module measures that choice on the benchmark's corpus. An embedded
SurrealDB (`surrealkv://`, the palace's engine, opened by this process) holds the same drawers
(text, wing, room, validity, the same 384-d vectors) with the engine's own indexes:

    DEFINE ANALYZER bench_en TOKENIZERS class FILTERS lowercase, snowball(english);
    DEFINE INDEX drawer_content ON drawer FIELDS content FULLTEXT ANALYZER bench_en BM25;
    DEFINE INDEX drawer_embedding ON drawer FIELDS embedding HNSW DIMENSION 384 DIST COSINE;
    DEFINE INDEX drawer_wing ON drawer FIELDS wing;

and the queries follow search.md: lexical is `@1@` (every word) and, when that finds nothing
for two words or more, `@1,OR@` (any word), ranked by `search::score`; semantic is the KNN
operator `<|k,ef|>` with `k = limit`, `ef = max(4k, 64)` unless `ef` is given (a wider search
finds more of the exact neighbours, slower), and the scope and time in the same WHERE (the
engine filters during the traversal); hybrid is `search::rrf` (k = 60) over a pool of
`max(2 limit, 20)` from each leg, the lexical one in OR mode. Each answer carries the drawers
without their vectors, as the daemon's hits do.

The drawers' validity follows a fixed timeline of the benchmark's own (filed 10 ms apart from
2025-01-01, the changes an hour after the last filing), not the daemon's clock: the shape of the
data (which drawers are valid at the `as_of` instant and now) is the same, the instants are not.
These timings have no HTTP in them: the report sets them against the daemon's HTTP floor.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from surrealdb import Surreal

from bench.search_corpus import DIMENSIONS, Corpus, Projection, as_json

NATIVE_VERSION = "native-1"
NAMESPACE, DATABASE = "bench", "search"
INSERT_BATCH = 500
TIMELINE_START = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
FILING_STEP = dt.timedelta(milliseconds=10)
CHANGE_GAP = dt.timedelta(hours=1)
SCHEMA = """
DEFINE TABLE drawer SCHEMALESS;
DEFINE ANALYZER bench_en TOKENIZERS class FILTERS lowercase, snowball(english);
"""
INDEXES = (
    ("wing", "DEFINE INDEX drawer_wing ON drawer FIELDS wing;"),
    (
        "full-text (BM25)",
        "DEFINE INDEX drawer_content ON drawer FIELDS content FULLTEXT ANALYZER bench_en BM25;",
    ),
    (
        "vectors (HNSW)",
        f"DEFINE INDEX drawer_embedding ON drawer FIELDS embedding HNSW DIMENSION {DIMENSIONS} "
        "DIST COSINE;",
    ),
)
VALID_AT = "valid_from <= $t AND (valid_to IS NONE OR valid_to > $t)"


@dataclass(frozen=True)
class Timeline:
    """Instants of the comparison's palace: filings, changes, and `as_of` between them."""

    size: int

    def filed(self, index: int) -> dt.datetime:
        return TIMELINE_START + FILING_STEP * index

    @property
    def as_of(self) -> dt.datetime:
        return self.filed(self.size) + CHANGE_GAP / 2

    def changed(self, order: int) -> dt.datetime:
        return self.filed(self.size) + CHANGE_GAP + FILING_STEP * order


@dataclass
class NativeBuild:
    """What building the comparison's palace cost; cached with it."""

    drawers: int  # rows, replacements included
    insert_secs: float  # rows without their full-text and HNSW indexes
    index_secs: dict[str, float]  # each index built over the rows present
    mib: float
    cached: bool = False


def connect(path: Path) -> Any:
    db = Surreal(f"surrealkv://{path}")
    db.connect()
    db.use(NAMESPACE, DATABASE)
    return db


def query(db: Any, sql: str, variables: dict[str, Any] | None = None) -> Any:
    """The result of the last statement of `sql`."""
    return db.query(sql, variables or {}).execute()[-1]


def rows(corpus: Corpus, projection: Projection) -> Iterator[list[dict[str, Any]]]:
    """Every drawer the daemon's palace holds, originals and replacements, with its vector, in
    batches (the vectors of 100,000 drawers as Python floats would take a gigabyte)."""
    timeline = Timeline(corpus.size)
    changed = {change.index: order for order, change in enumerate(corpus.changes)}
    texts = [drawer.content for drawer in corpus.drawers]
    replacements = [
        (order, change) for order, change in enumerate(corpus.changes) if change.content
    ]
    texts += [change.content or "" for _order, change in replacements]
    vectors = projection.vectors(texts)
    made: list[dict[str, Any]] = []
    for drawer in corpus.drawers:
        row: dict[str, Any] = {
            "id": drawer.index,
            "content": drawer.content,
            "wing": drawer.wing,
            "room": drawer.room,
            "tags": [drawer.kind],
            "source": {"kind": "manual"},
            "valid_from": timeline.filed(drawer.index),
            "embedding": as_json(vectors[drawer.index]),
        }
        if drawer.index in changed:
            row["valid_to"] = timeline.changed(changed[drawer.index])
        made.append(row)
        if len(made) == INSERT_BATCH:
            yield made
            made = []
    for n, (order, change) in enumerate(replacements):
        old = corpus.drawers[change.index]
        made.append(
            {
                "id": corpus.size + order,
                "content": change.content,
                "wing": old.wing,
                "room": old.room,
                "tags": [old.kind],
                "source": {"kind": "manual"},
                "valid_from": timeline.changed(order),
                "supersedes": change.index,
                "embedding": as_json(vectors[corpus.size + n]),
            }
        )
        if len(made) == INSERT_BATCH:
            yield made
            made = []
    if made:
        yield made


def build(path: Path, corpus: Corpus, projection: Projection) -> NativeBuild:
    """Rows first, in batched INSERTs; then each index, timed apart (a DEFINE INDEX on a table
    with rows builds the index before it returns)."""
    db = connect(path)
    inserted = 0
    try:
        query(db, SCHEMA)
        start = time.perf_counter()
        for batch in rows(corpus, projection):
            query(db, "INSERT INTO drawer $rows RETURN NONE", {"rows": batch})
            inserted += len(batch)
        insert_secs = time.perf_counter() - start
        print(f"    {inserted:,} rows inserted in {insert_secs:.0f} s", flush=True)
        index_secs = {}
        for label, statement in INDEXES:
            start = time.perf_counter()
            query(db, statement)
            index_secs[label] = time.perf_counter() - start
            print(f"    index {label} built in {index_secs[label]:.1f} s", flush=True)
    finally:
        db.close()
    mib = sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1024**2
    return NativeBuild(inserted, insert_secs, index_secs, mib)


def cached(
    cache_dir: Path, corpus: Corpus, projection: Projection, rebuild: bool
) -> tuple[Path, NativeBuild]:
    """The comparison's palace for this size and seed, built once and kept: the HNSW index of
    100,000 vectors takes a long while to build."""
    key = f"{NATIVE_VERSION}-{corpus.size}-seed{corpus.seed}"
    root = cache_dir / key
    meta = root / "built.json"
    if meta.exists() and not rebuild:
        recorded = json.loads(meta.read_text())
        return root / "db", NativeBuild(**{**recorded, "cached": True})
    partial = cache_dir / f"{key}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    shutil.rmtree(root, ignore_errors=True)
    partial.mkdir(parents=True)
    print(f"  building SurrealDB's own indexes on {corpus.size:,} drawers in {partial}", flush=True)
    built = build(partial / "db", corpus, projection)
    meta_partial = partial / "built.json"
    meta_partial.write_text(json.dumps({k: v for k, v in asdict(built).items() if k != "cached"}))
    partial.rename(root)
    return root / "db", built


# The queries


def _scope(wing: str | None) -> str:
    return f"{'wing = $wing AND ' if wing else ''}{VALID_AT}"


class Native:
    """The comparison's palace, open; one method a ranking, each returning the hits' ids."""

    def __init__(self, path: Path, limit: int, ef: int | None = None) -> None:
        self.db = connect(path)
        self.limit = limit
        self.ef = ef

    def close(self) -> None:
        self.db.close()

    def lexical(
        self, text: str, vector: list[float], wing: str | None, at: dt.datetime
    ) -> list[int]:
        variables = {"q": text, "wing": wing, "t": at, "limit": self.limit}
        sql = (
            "SELECT *, search::score(1) AS score OMIT embedding FROM drawer "
            f"WHERE content {{}} $q AND {_scope(wing)} ORDER BY score DESC, id LIMIT $limit"
        )
        hits = query(self.db, sql.format("@1@"), variables)
        if not hits and len(text.split()) > 1:
            hits = query(self.db, sql.format("@1,OR@"), variables)
        return [hit["id"].id for hit in hits]

    def semantic(
        self, text: str, vector: list[float], wing: str | None, at: dt.datetime
    ) -> list[int]:
        k = self.limit
        hits = query(
            self.db,
            "SELECT *, vector::distance::knn() AS distance OMIT embedding FROM drawer "
            f"WHERE {_scope(wing)} AND embedding <|{k},{self._breadth(k)}|> $v "
            "ORDER BY distance, id LIMIT $limit",
            {"v": vector, "wing": wing, "t": at, "limit": k},
        )
        return [hit["id"].id for hit in hits]

    def hybrid(
        self, text: str, vector: list[float], wing: str | None, at: dt.datetime
    ) -> list[int]:
        pool = max(2 * self.limit, 20)
        hits = query(
            self.db,
            f"LET $sv = (SELECT id, vector::distance::knn() AS distance FROM drawer "
            f"WHERE {_scope(wing)} AND embedding <|{pool},{self._breadth(pool)}|> $v "
            "ORDER BY distance);"
            f"LET $sl = (SELECT id, search::score(1) AS score FROM drawer "
            f"WHERE content @1,OR@ $q AND {_scope(wing)} ORDER BY score DESC LIMIT {pool});"
            f"RETURN array::slice(search::rrf([$sv, $sl], {2 * pool}, 60), 0, $limit)"
            ".map(|$h| $h.id.*.{id, content, wing, room, tags, source, valid_from, valid_to, "
            "score: $h.rrf_score});",
            {"v": vector, "q": text, "wing": wing, "t": at, "limit": self.limit},
        )
        return [hit["id"].id for hit in hits]

    def _breadth(self, k: int) -> int:
        """The HNSW search's `ef` for the `k` nearest."""
        return self.ef if self.ef is not None else max(4 * k, 64)

    def ranking(
        self, name: str
    ) -> Callable[[str, list[float], str | None, dt.datetime], list[int]]:
        return {"lexical": self.lexical, "semantic": self.semantic, "hybrid": self.hybrid}[name]
