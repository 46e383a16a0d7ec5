"""The semantic leg: an exact cosine search over one embedding profile's vectors, in numpy.

SurrealDB's HNSW index took about 400 ms for a 384-d query over 100,000 vectors here, an exact
numpy product 8.7 ms (docs/benchmarks.md, "Search"); exact also means a scoped query gets
every neighbour in scope. A drawer may have several vectors (the windows of a long text); it scores
by its best one.

The float32 product is bound by memory bandwidth: 160 MB at 100,000 x 384, 8-16 ms here and
far worse while other processes load the machine (docs/benchmarks.md "Search"). So a first pass
reads an int8 copy of the vectors (a quarter of the bytes) against an int8 copy of the query,
with SimSIMD's integer dot product (1.5 ms for 104,000 x 384 here, where numpy has no fast int8
product: converting to float32 block by block for BLAS took 8.2 ms). Each row keeps a bound on
the error of its approximate score; only the rows whose bound reaches the best drawers' are
scored again from the float32 vectors, exactly as before. The bound makes the answer the exact
one whatever the data, not most of the time: about 20-40 rows were re-scored per query on the
benchmark's 104,000 vectors.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import simsimd

_GROW = 1024
# Below this share of the rows in scope, the first pass gathers the scoped rows and reads only
# them; above it, gathering costs more than reading every row (see _first_pass).
_GATHER_SHARE = 0.1
# At or above this share of the rows in scope, those out of it are masked rather than gathered
# away after the first pass: at a million vectors masking cost 2-6 ms a query with 20-80% of
# them in scope (the candidates are then picked among every row) and saved 1.5-8 with 92-96%.
_MASK_SHARE = 0.9
_CODE_MAX = 127
# The stride of the sample that sets the first cut of the best lower bounds (see _largest).
_SAMPLE = 8
# Added to every row's error bound: the integer products are exact and their scaling is done in
# float64 (rounding some 1e-16), as is the exact pass (a 384-term sum, some 1e-13); a margin
# far above both costs a few more rows scored exactly, never a wrong answer.
_ROUNDING = 1e-6
# Rows quantized at a time when a whole matrix is (restore): bounds the temporaries.
_QUANTIZE_ROWS = 8192


class VectorIndex:
    def __init__(self, dimensions: int) -> None:
        self.dimensions = dimensions
        self.matrix = np.zeros((0, dimensions), dtype=np.float32)
        self.drawer = np.zeros(0, dtype=np.int64)  # the catalog row of each vector
        self.alive = np.zeros(0, dtype=bool)
        # The first pass: row ≈ scale * codes, within `error` (Euclidean) of the float32 row.
        self.codes = np.zeros((0, dimensions), dtype=np.int8)
        self.scale = np.zeros(0, dtype=np.float32)
        self.error = np.zeros(0, dtype=np.float32)
        self.count = 0
        # A drawer's vectors are the rows `first[d]` to `first[d] + width[d]` (d its catalog
        # row; width 0: none): `put` writes them together and `remove` ends them together. In
        # arrays, not a dict of lists: at a million drawers the dict held about 250 MB.
        self._first = np.zeros(0, dtype=np.int64)
        self._width = np.zeros(0, dtype=np.int32)
        self._drawers = 0
        self._top = 0  # one past the highest catalog row ever given vectors

    def __len__(self) -> int:
        return self._drawers

    def put(self, drawer_row: int, vectors: list[list[float]]) -> None:
        """Set a drawer's vectors (unit length; normalised again here), replacing any it had."""
        self.remove(drawer_row)
        block = np.asarray(vectors, dtype=np.float32).reshape(-1, self.dimensions)
        norms = np.linalg.norm(block, axis=1, keepdims=True)
        unit = block / np.where(norms == 0, 1, norms)
        while self.count + len(unit) > len(self.matrix):
            self._grow()
        start, end = self.count, self.count + len(unit)
        self.matrix[start:end] = unit
        self.codes[start:end], self.scale[start:end], self.error[start:end] = _quantize(unit)
        self.drawer[start:end] = drawer_row
        self.alive[start:end] = True
        self.count = end
        if drawer_row >= len(self._width):
            self._grow_drawers(drawer_row + 1)
        self._first[drawer_row], self._width[drawer_row] = start, len(unit)
        self._top = max(self._top, drawer_row + 1)
        self._drawers += len(unit) > 0

    def remove(self, drawer_row: int) -> None:
        if drawer_row >= len(self._width) or not self._width[drawer_row]:
            return
        start = self._first[drawer_row]
        self.alive[start : start + self._width[drawer_row]] = False
        self._width[drawer_row] = 0
        self._drawers -= 1

    def _grow_drawers(self, at_least: int) -> None:
        size = max(at_least, len(self._width) + max(_GROW, len(self._width)))
        first, width = np.zeros(size, dtype=np.int64), np.zeros(size, dtype=np.int32)
        first[: len(self._first)], width[: len(self._width)] = self._first, self._width
        self._first, self._width = first, width

    def _grow(self) -> None:
        size = len(self.matrix) + max(_GROW, len(self.matrix))
        for name in ("matrix", "codes", "drawer", "alive", "scale", "error"):
            old = getattr(self, name)
            new = np.zeros((size, *old.shape[1:]), dtype=old.dtype)
            new[: self.count] = old[: self.count]
            setattr(self, name, new)

    def search(
        self, query: np.ndarray, in_scope: np.ndarray, limit: int
    ) -> list[tuple[int, float]]:
        """The best `limit` drawers whose catalog row is set in `in_scope`, as (catalog row,
        cosine similarity), best first; each drawer by its best vector."""
        if self.count == 0 or limit <= 0:
            return []
        count = self.count
        drawers = self.drawer[:count]
        usable = self.alive[:count] & np.take(in_scope, drawers, mode="clip")
        if self._top > len(in_scope):  # a vector of a drawer the mask does not reach yet
            usable &= drawers < len(in_scope)
        in_use = int(np.count_nonzero(usable))
        if in_use == 0:
            return []
        vector = np.asarray(query, dtype=np.float32)
        query_codes, query_scale, query_error = _quantize(vector[None, :])
        # The rows in scope, unless nearly all are (those out of it are masked below).
        chosen = np.flatnonzero(usable) if in_use < _MASK_SHARE * count else None
        if chosen is not None and in_use < _GATHER_SHARE * count:
            dots = _dots(self.codes[chosen], query_codes[0])
            scale, error, owners = self.scale[chosen], self.error[chosen], drawers[chosen]
        else:
            dots = _dots(self.codes[:count], query_codes[0])
            scale, error, owners = self.scale[:count], self.error[:count], drawers
            if chosen is not None:
                dots, scale, error = dots[chosen], scale[chosen], error[chosen]
                owners = owners[chosen]
        approximate = dots * (scale.astype(np.float64) * float(query_scale[0]))
        if chosen is None and in_use < count:
            # Nearly every row in scope (an `as_of` window over a palace): those out of it get
            # no upper bound, so never become candidates, for less than gathering the rest.
            approximate[~usable] = -np.inf
        # q.x - x'.q' = (x - x').q + x'.(q - q'), where x' and q' are the int8 approximations:
        # at most |x - x'| |q| + (|x| + |x - x'|) |q - q'|, with |x| = 1.
        query_length = float(np.linalg.norm(vector.astype(np.float64)))
        query_off = float(query_error[0])
        slack = error * (query_length + query_off) + (query_off + _ROUNDING)
        positions = _candidates(approximate, slack, owners, limit)
        # Scored again row by row in float64, so that equal vectors tie exactly (whatever
        # their place in the matrix) and ties order by drawer id.
        rows = positions[usable[positions]] if chosen is None else chosen[positions]
        exact = (self.matrix[rows].astype(np.float64) * query.astype(np.float64)).sum(axis=1)
        best = _best_of(exact, drawers[rows], np.arange(len(rows)))
        return sorted(best.items(), key=lambda hit: -hit[1])

    def state(self) -> dict[str, Any]:
        """What a snapshot keeps: the int8 copy is derived, and made again on restore. The
        index's later changes leave it as it is while the snapshot is written: a row below
        `count` is never written again (a drawer's new vectors are new rows), and only the
        flags of which rows are alive are copied."""
        return {
            "dimensions": self.dimensions,
            "matrix": self.matrix[: self.count],
            "drawer": self.drawer[: self.count],
            "alive": self.alive[: self.count].copy(),
        }

    @classmethod
    def restore(cls, state: dict[str, Any]) -> VectorIndex:
        index = cls(state["dimensions"])
        # The snapshot's own arrays, not copies: a copy of a million drawers' float32 vectors
        # held 1.5 GB twice while a restart loaded them (3.6 GB at the peak, 1.9 without; 5.7-10
        # s against 2.3-2.7, docs/benchmarks.md "A million drawers").
        index.matrix = np.require(state["matrix"], dtype=np.float32, requirements=["C", "W"])
        index.drawer = np.require(state["drawer"], dtype=np.int64, requirements=["C", "W"])
        index.alive = np.require(state["alive"], dtype=bool, requirements=["C", "W"])
        index.count = len(index.matrix)
        index.codes = np.zeros(index.matrix.shape, dtype=np.int8)
        index.scale = np.zeros(index.count, dtype=np.float32)
        index.error = np.zeros(index.count, dtype=np.float32)
        for start in range(0, index.count, _QUANTIZE_ROWS):
            end = min(start + _QUANTIZE_ROWS, index.count)
            quantized = _quantize(index.matrix[start:end])
            index.codes[start:end], index.scale[start:end], index.error[start:end] = quantized
        rows = np.flatnonzero(index.alive)
        drawers, firsts, widths = np.unique(
            index.drawer[rows], return_index=True, return_counts=True
        )
        if len(drawers):
            index._top = int(index.drawer[: index.count].max()) + 1
            index._grow_drawers(int(drawers[-1]) + 1)
            index._first[drawers], index._width[drawers] = rows[firsts], widths
        index._drawers = len(drawers)
        return index


def _quantize(block: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row as int8 codes times a scale (its largest magnitude over 127), and the
    Euclidean distance from the row to that approximation (in float32, rounded up: its own
    rounding is some 1e-9 here, far inside `_ROUNDING`). A query is quantized the same way."""
    rows = np.asarray(block, dtype=np.float32)
    largest = np.abs(rows).max(axis=1) if rows.shape[1] else np.zeros(len(rows), np.float32)
    scale = np.where(largest == 0, 1, largest / _CODE_MAX).astype(np.float32)
    codes = np.clip(np.rint(rows / scale[:, None]), -_CODE_MAX, _CODE_MAX).astype(np.int8)
    error = np.linalg.norm(rows - codes * scale[:, None], axis=1)
    return codes, scale, np.nextafter(error, np.float32(np.inf))


def _dots(codes: np.ndarray, query_codes: np.ndarray) -> np.ndarray:
    """codes @ query_codes as float64, exact: SimSIMD sums the int8 products as integers."""
    if len(codes) == 0:
        return np.zeros(0)
    return np.asarray(simsimd.cdist(query_codes[None, :], codes, metric="dot"))[0]


def _candidates(
    approximate: np.ndarray, slack: np.ndarray, drawers: np.ndarray, limit: int
) -> np.ndarray:
    """The positions of every vector whose exact score may reach the top `limit` distinct
    drawers. Each exact score is within `slack` of its approximate one, so the `limit`-th best
    drawer by lower bound sets a floor, and a vector whose upper bound is under it can be
    neither among the best nor tied with them. The windows of one drawer collapse into one
    hit, so the best lower bounds are taken, widening until enough drawers are among them;
    with fewer drawers than `limit` in scope, every vector is a candidate."""
    lower = approximate - slack
    wanted = limit * 4
    while True:
        top = _largest(lower, wanted)
        floor = _floor(lower[top], drawers[top], limit)
        if floor is not None:
            return np.flatnonzero(approximate + slack >= floor)
        if len(top) == len(lower):
            return top
        wanted *= 4


def _largest(values: np.ndarray, count: int) -> np.ndarray:
    """The positions of the `count` largest values and usually some more: every value that
    reaches the `count`-th largest of every `_SAMPLE`-th value (at least `count` do). A floor
    taken over some of the positions is never above the one over all of them, so more only
    lets in a few more candidates. Partitioning the sample took 0.1 ms at 100,000 vectors
    here, an argpartition of every value 1.2-1.8 ms."""
    if count * _SAMPLE >= len(values):
        return np.arange(len(values))
    sample = values[::_SAMPLE]
    cut = np.partition(sample, len(sample) - count)[len(sample) - count]
    return np.flatnonzero(values >= cut)


def _floor(lower: np.ndarray, drawers: np.ndarray, limit: int) -> float | None:
    """The `limit`-th best drawer's best lower bound, or None with fewer drawers than that."""
    order = np.lexsort((-lower, drawers))  # by drawer, best first within each
    ordered = drawers[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    best = lower[order][first]
    if len(best) < limit:
        return None
    return float(np.partition(best, len(best) - limit)[len(best) - limit])


def _best_of(scores: np.ndarray, drawers: np.ndarray, positions: np.ndarray) -> dict[int, float]:
    best: dict[int, float] = {}
    for position in positions:
        drawer = int(drawers[position])
        score = float(scores[position])
        if score > best.get(drawer, -np.inf):
            best[drawer] = score
    return best
