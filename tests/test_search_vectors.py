"""The semantic leg's int8 first pass gives the exact answer (palace/search/vectors.py).

Each answer is compared with a brute-force oracle: every vector in scope scored in float64, each
drawer by its best vector, the best `limit` by score then drawer row. The corpora are seeded and
made hard for a quantized pass: clusters of near copies whose scores differ by less than the
int8 error, drawers of several windows, exact copies that must tie.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from palace.search.vectors import VectorIndex


def oracle(
    vectors: dict[int, np.ndarray], query: np.ndarray, in_scope: np.ndarray, limit: int
) -> list[tuple[int, float]]:
    """The exact top `limit` (drawer row, score), ties by drawer row: each stored vector (made
    unit length in float32, as the index stores it) scored in float64, summed as the index
    sums, so that equal answers are equal to the last bit."""
    scores = []
    for drawer, rows in vectors.items():
        if drawer < len(in_scope) and in_scope[drawer]:
            block = rows.astype(np.float32)
            stored = block / np.linalg.norm(block, axis=1, keepdims=True)
            best = (stored.astype(np.float64) * query.astype(np.float64)).sum(axis=1).max()
            scores.append((drawer, float(best)))
    scores.sort(key=lambda hit: (-hit[1], hit[0]))
    return scores[:limit]


def answer(
    index: VectorIndex, query: np.ndarray, in_scope: np.ndarray, limit: int
) -> list[tuple[int, float]]:
    """What the search service makes of the index's hits: ties by drawer, cut at `limit`."""
    hits = index.search(query, in_scope, limit)
    return sorted(hits, key=lambda hit: (-hit[1], hit[0]))[:limit]


def clustered(rng: np.random.Generator, drawers: int, dimensions: int) -> dict[int, np.ndarray]:
    """Drawers around a few centres, some very close to each other, one in five with several
    windows."""
    centres = rng.standard_normal((8, dimensions))
    vectors = {}
    for drawer in range(drawers):
        windows = 3 if drawer % 5 == 0 else 1
        centre = centres[rng.integers(len(centres))]
        spread = 10.0 ** -rng.integers(1, 5)  # down to 1e-4: far below the int8 error
        vectors[drawer] = centre + spread * rng.standard_normal((windows, dimensions))
    return vectors


def build(vectors: dict[int, np.ndarray], dimensions: int) -> VectorIndex:
    index = VectorIndex(dimensions)
    for drawer, rows in vectors.items():
        index.put(drawer, rows.tolist())
    return index


def close_query(rng: np.random.Generator, vectors: dict[int, np.ndarray]) -> np.ndarray:
    """A query near one drawer's vector, so that the best scores crowd together."""
    rows = vectors[int(rng.integers(len(vectors)))]
    query = rows[0] + 1e-3 * rng.standard_normal(rows.shape[1])
    return (query / np.linalg.norm(query)).astype(np.float32)


@pytest.mark.parametrize(("dimensions", "drawers"), [(384, 2500), (1000, 900), (8, 300)])
def test_the_quantized_search_is_exact(dimensions: int, drawers: int) -> None:
    """Unscoped, scoped to all but a few rows, to a third and to a few (the gathered first
    pass), several limits: all but a few and a third read every row (the rows out of scope are
    masked, or gathered away), a few only theirs."""
    rng = np.random.default_rng(dimensions)
    vectors = clustered(rng, drawers, dimensions)
    index = build(vectors, dimensions)
    scopes = {
        "all": np.ones(drawers, dtype=bool),
        "all but a few": np.arange(drawers) % 13 != 0,
        "a third": np.arange(drawers) % 3 == 0,
        "a few": np.arange(drawers) % 97 == 0,
    }
    for _ in range(12):
        query = close_query(rng, vectors)
        for in_scope in scopes.values():
            for limit in (1, 10, 50):
                assert answer(index, query, in_scope, limit) == oracle(
                    vectors, query, in_scope, limit
                )


def test_identical_vectors_tie_exactly_and_order_by_drawer() -> None:
    """Forty copies of one vector, far apart in the matrix: every copy is a hit with the same
    score, so the cut at the limit is by drawer row, whatever the rows' places."""
    rng = np.random.default_rng(7)
    dimensions = 384
    shared = rng.standard_normal(dimensions)
    vectors = {drawer: rng.standard_normal((1, dimensions)) for drawer in range(3000)}
    copies = [int(drawer) for drawer in rng.choice(3000, size=40, replace=False)]
    for drawer in copies:
        vectors[drawer] = shared[None, :]
    index = build(vectors, dimensions)
    query = (shared / np.linalg.norm(shared)).astype(np.float32)

    hits = index.search(query, np.ones(3000, dtype=bool), 10)

    tied = {drawer: score for drawer, score in hits if drawer in copies}
    assert set(tied) == set(copies)
    assert len(set(tied.values())) == 1
    assert answer(index, query, np.ones(3000, dtype=bool), 10) == [
        (drawer, tied[drawer]) for drawer in sorted(copies)[:10]
    ]


def test_the_query_s_own_int8_error_is_in_the_bound() -> None:
    """Drawer 0 is the better match, but the query's int8 copy rounds its two shared components
    down to nothing and drawer 1's up: approximately, drawer 1 leads by a whole int8 step. The
    drawers' own copies are exact, so only the query's error keeps drawer 0 a candidate."""
    index = VectorIndex(4)
    index.put(0, [[0.0, 1.0, 1.0, 0.0]])
    index.put(1, [[0.0, 0.0, 0.0, 1.0]])
    # In steps of the query's int8 scale (its largest component over 127): 0.49, 0.49, 0.51.
    query = np.array([127.0, 0.49, 0.49, 0.51])
    query = (query / np.linalg.norm(query)).astype(np.float32)

    [(drawer, score)] = answer(index, query, np.ones(2, dtype=bool), 1)

    assert drawer == 0
    assert score == pytest.approx(0.98 / np.sqrt(2) / np.linalg.norm([127, 0.49, 0.49, 0.51]))


def test_a_restored_index_answers_as_the_live_one() -> None:
    """The int8 copy is not in a snapshot: it is made again from the float32 vectors."""
    rng = np.random.default_rng(11)
    vectors = clustered(rng, 600, 64)
    index = build(vectors, 64)
    index.remove(5)
    del vectors[5]
    index.put(7, vectors[7].tolist())  # replaced: its old rows are dead

    restored = VectorIndex.restore(index.state())

    in_scope = np.ones(600, dtype=bool)
    for _ in range(5):
        query = close_query(rng, vectors)
        expected = oracle(vectors, query, in_scope, 10)
        assert answer(restored, query, in_scope, 10) == expected
        assert answer(index, query, in_scope, 10) == expected
    assert len(restored) == len(index) == 599


def test_a_restored_index_keeps_the_snapshots_arrays_and_changes_as_before() -> None:
    """Restoring does not copy the vectors (a million drawers' are 1.5 GB), yet the restored
    index takes new vectors and removals; an array it may not write is copied."""
    rng = np.random.default_rng(12)
    vectors = clustered(rng, 50, 16)
    state = pickle.loads(pickle.dumps(build(vectors, 16).state(), protocol=5))

    restored = VectorIndex.restore(state)
    assert np.shares_memory(restored.matrix, state["matrix"])
    restored.put(50, vectors[0].tolist())
    restored.remove(1)
    in_scope = np.ones(51, dtype=bool)
    first, second = (
        (vectors[drawer][0] / np.linalg.norm(vectors[drawer][0])).astype(np.float32)
        for drawer in (0, 1)
    )
    assert sorted(drawer for drawer, _ in answer(restored, first, in_scope, 2)) == [0, 50]
    assert 1 not in [drawer for drawer, _ in answer(restored, second, in_scope, 51)]

    frozen = build(vectors, 16).state()
    frozen["matrix"].flags.writeable = False
    assert VectorIndex.restore(frozen).matrix.flags.writeable


def test_a_drawers_vectors_end_together_before_and_after_a_restore() -> None:
    """A drawer's windows are replaced or removed as one, in the live index and in one
    restored from its snapshot; a drawer never given vectors is removed without effect."""
    rng = np.random.default_rng(13)
    windows = rng.standard_normal((3, 8)).astype(np.float32)
    index = VectorIndex(8)
    index.put(4, windows.tolist())
    index.put(9, windows[:1].tolist())
    index.remove(2)
    for current in (index, VectorIndex.restore(index.state())):
        assert len(current) == 2
        current.put(4, windows[1:2].tolist())
        assert int(current.alive[: current.count].sum()) == 2
        current.remove(4)
        current.remove(4)
        assert len(current) == 1
        assert current.drawer[np.flatnonzero(current.alive[: current.count])].tolist() == [9]


def test_a_snapshots_state_stays_as_taken_while_the_index_changes() -> None:
    """A snapshot is written outside the indexes' lock: what `state` gave must not move."""
    rng = np.random.default_rng(13)
    vectors = clustered(rng, 20, 8)
    index = build(vectors, 8)
    state = index.state()
    taken = {
        name: np.array(value, copy=True) for name, value in state.items() if name != "dimensions"
    }
    index.remove(3)
    index.put(4, vectors[5].tolist())
    for _ in range(2000):  # grows the arrays past their first size
        index.put(100, vectors[6].tolist())
    for name, value in taken.items():
        np.testing.assert_array_equal(state[name], value)


def test_a_drawer_out_of_scope_never_hides_those_in_it() -> None:
    """The query is the own vector of drawers out of scope: whether the rows out of scope are
    masked (nearly all in scope) or gathered away (a third), the answer is the best in scope."""
    rng = np.random.default_rng(5)
    vectors = {drawer: rng.standard_normal((1, 32)) for drawer in range(400)}  # far apart
    index = build(vectors, 32)
    for in_scope in (np.arange(400) % 13 != 0, np.arange(400) % 3 == 0):
        for outside in np.flatnonzero(~in_scope)[:5]:
            row = vectors[int(outside)][0]
            query = (row / np.linalg.norm(row)).astype(np.float32)
            for limit in (1, 10):
                assert answer(index, query, in_scope, limit) == oracle(
                    vectors, query, in_scope, limit
                )


def test_fewer_drawers_in_scope_than_the_limit() -> None:
    """With a few rows in scope (they are gathered), with a fifth of them (every row is scored,
    then those in scope gathered) and with nearly all (those out of scope are masked)."""
    rng = np.random.default_rng(3)
    vectors = clustered(rng, 50, 16)
    index = build(vectors, 16)
    for out in (range(3, 50), range(10, 50), range(46, 50)):
        in_scope = np.ones(50, dtype=bool)
        in_scope[list(out)] = False
        query = close_query(rng, vectors)
        assert answer(index, query, in_scope, 60) == oracle(vectors, query, in_scope, 60)


def test_a_zero_vector_scores_zero() -> None:
    index = VectorIndex(4)
    index.put(0, [[0.0, 0.0, 0.0, 0.0]])
    index.put(1, [[1.0, 0.0, 0.0, 0.0]])
    query = np.array([0.0, 1.0, 0.0, 0.0], dtype=np.float32)
    assert answer(index, query, np.ones(2, dtype=bool), 2) == [(0, 0.0), (1, 0.0)]
