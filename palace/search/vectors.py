"""The semantic leg: an exact cosine search over one embedding profile's vectors, in numpy.

SurrealDB's HNSW index took about 400 ms for a 384-d query over 100,000 vectors here, an exact
numpy product 8.7 ms (ARCHITECTURE.md "Search"); exact also means a scoped query gets every
neighbour in scope. A drawer may have several vectors (the windows of a long text); it scores
by its best one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_GROW = 1024
# Candidates within this of the cut are scored again exactly: float32 noise is far smaller.
_NOISE = 1e-4
# Below this share of the rows in scope, the product runs on the scoped rows only.
_GATHER_SHARE = 0.3


class VectorIndex:
    def __init__(self, dimensions: int) -> None:
        self.dimensions = dimensions
        self.matrix = np.zeros((0, dimensions), dtype=np.float32)
        self.drawer = np.zeros(0, dtype=np.int64)  # the catalog row of each vector
        self.alive = np.zeros(0, dtype=bool)
        self.count = 0
        self._rows: dict[int, list[int]] = {}  # catalog row -> its vectors

    def __len__(self) -> int:
        return len(self._rows)

    def put(self, drawer_row: int, vectors: list[list[float]]) -> None:
        """Set a drawer's vectors (unit length; normalised again here), replacing any it had."""
        self.remove(drawer_row)
        block = np.asarray(vectors, dtype=np.float32).reshape(-1, self.dimensions)
        norms = np.linalg.norm(block, axis=1, keepdims=True)
        block = block / np.where(norms == 0, 1, norms)
        while self.count + len(block) > len(self.matrix):
            self._grow()
        start = self.count
        self.matrix[start : start + len(block)] = block
        self.drawer[start : start + len(block)] = drawer_row
        self.alive[start : start + len(block)] = True
        self.count += len(block)
        self._rows[drawer_row] = list(range(start, self.count))

    def remove(self, drawer_row: int) -> None:
        for row in self._rows.pop(drawer_row, ()):
            self.alive[row] = False

    def _grow(self) -> None:
        size = len(self.matrix) + max(_GROW, len(self.matrix))
        matrix = np.zeros((size, self.dimensions), dtype=np.float32)
        matrix[: self.count] = self.matrix[: self.count]
        drawer = np.zeros(size, dtype=np.int64)
        drawer[: self.count] = self.drawer[: self.count]
        alive = np.zeros(size, dtype=bool)
        alive[: self.count] = self.alive[: self.count]
        self.matrix, self.drawer, self.alive = matrix, drawer, alive

    def search(
        self, query: np.ndarray, in_scope: np.ndarray, limit: int
    ) -> list[tuple[int, float]]:
        """The best `limit` drawers whose catalog row is set in `in_scope`, as (catalog row,
        cosine similarity), best first; each drawer by its best vector."""
        if self.count == 0 or limit <= 0:
            return []
        drawers = self.drawer[: self.count]
        usable = self.alive[: self.count] & in_scope[np.minimum(drawers, len(in_scope) - 1)]
        usable &= drawers < len(in_scope)
        chosen = np.flatnonzero(usable)
        if len(chosen) == 0:
            return []
        if len(chosen) < _GATHER_SHARE * self.count:
            scores = self.matrix[chosen] @ query
        else:
            scores = (self.matrix[: self.count] @ query)[chosen]
        positions = _candidates(scores, drawers[chosen], limit)
        # The product's last bits depend on where a row sits in the matrix, so identical
        # vectors could score a float32 ulp apart: the candidates are scored again, row by row
        # in float64, so that equal vectors tie exactly and ties order by drawer id.
        rows = chosen[positions]
        exact = (self.matrix[rows].astype(np.float64) * query.astype(np.float64)).sum(axis=1)
        best = _best_of(exact, drawers[rows], np.arange(len(rows)))
        return sorted(best.items(), key=lambda hit: -hit[1])

    def state(self) -> dict[str, Any]:
        return {
            "dimensions": self.dimensions,
            "matrix": self.matrix[: self.count],
            "drawer": self.drawer[: self.count],
            "alive": self.alive[: self.count],
        }

    @classmethod
    def restore(cls, state: dict[str, Any]) -> VectorIndex:
        index = cls(state["dimensions"])
        index.matrix = np.array(state["matrix"], dtype=np.float32)
        index.drawer = np.array(state["drawer"], dtype=np.int64)
        index.alive = np.array(state["alive"], dtype=bool)
        index.count = len(index.matrix)
        for row in np.flatnonzero(index.alive):
            index._rows.setdefault(int(index.drawer[row]), []).append(int(row))
        return index


def _candidates(scores: np.ndarray, drawers: np.ndarray, limit: int) -> np.ndarray:
    """The positions of the vectors that may hold the top `limit` distinct drawers, and every
    vector scoring within float noise of the last of them. The windows of one drawer collapse
    into one hit, so the best vectors are taken, widening until enough drawers are among them."""
    wanted = min(len(scores), limit * 4)
    while True:
        if wanted < len(scores):
            top = np.argpartition(-scores, wanted - 1)[:wanted]
        else:
            top = np.arange(len(scores))
        best = _best_of(scores, drawers, top)
        if len(best) >= limit or wanted >= len(scores):
            break
        wanted = min(len(scores), wanted * 4)
    if len(best) < limit:
        return top
    floor = sorted(best.values(), reverse=True)[limit - 1]
    return np.flatnonzero(scores >= floor - _NOISE)


def _best_of(scores: np.ndarray, drawers: np.ndarray, positions: np.ndarray) -> dict[int, float]:
    best: dict[int, float] = {}
    for position in positions:
        drawer = int(drawers[position])
        score = float(scores[position])
        if score > best.get(drawer, -2.0):
            best[drawer] = score
    return best
