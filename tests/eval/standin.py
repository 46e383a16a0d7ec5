"""The deterministic stand-in embedding model.

The everyday benchmark measures the search engine, not a model: the daemon embeds nothing and the
harness attaches these vectors itself. They are bags of words with a synonym table (`concepts`),
hashed into a fixed number of dimensions, so two texts are similar exactly when they share words
or concepts. Integer hashing and a fixed order of float additions make the same text give the
same vector on every platform, which is what lets a quality baseline be committed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from functools import lru_cache

DIMENSIONS = 384
"""The dimension of the benchmark's external `standin` profile."""

FNV_OFFSET = 0x811C9DC5
FNV_PRIME = 0x01000193
MASK32 = 0xFFFFFFFF
MASK64 = 0xFFFFFFFFFFFFFFFF
BACKGROUND = 0.01
"""Weight of each token's pseudo-random background: small enough never to outweigh one shared
word, large enough that unrelated texts do not tie at exactly zero."""

_STOP_WORDS = (
    "a an and are as at be but by do does did for from has have had how i in is it its of on "
    "or our so that the their them they this to was we were what when where which who why "
    "will with you your"
)
STOP_WORDS = frozenset(_STOP_WORDS.split())
"""A small fixed list: the words that carry no topic."""

_SPLIT = re.compile(r"[\W_]+")
"""Non-alphanumeric runs, Unicode-aware (`é` is a letter), underscores included."""


def tokens(text: str, concepts: Mapping[str, str] | None = None) -> list[str]:
    """Lower-cased alphanumeric runs without stop words, each replaced by its concept if any."""
    table = concepts or {}
    words = (w for w in _SPLIT.split(text.lower()) if w and w not in STOP_WORDS)
    return [table.get(w, w) for w in words]


def fnv1a32(token: str) -> int:
    """FNV-1a, 32 bits, over the token's UTF-8 bytes."""
    value = FNV_OFFSET
    for byte in token.encode("utf-8"):
        value = ((value ^ byte) * FNV_PRIME) & MASK32
    return value


def xorshift64(state: int) -> int:
    """One step of Marsaglia's xorshift64 (shifts 13, 7, 17)."""
    state ^= (state << 13) & MASK64
    state ^= state >> 7
    state ^= (state << 17) & MASK64
    return state & MASK64


@lru_cache(maxsize=65536)
def _token_vector(token: str, dimensions: int) -> tuple[float, ...]:
    """One token's contribution: 1.0 on its slot plus its background stream.

    Cached because a token's contribution never changes; a text's vector is the sum of these.
    """
    hashed = fnv1a32(token)
    state = hashed | 1
    contribution = [0.0] * dimensions
    for dim in range(dimensions):
        state = xorshift64(state)
        # Top 24 bits, scaled to [-1, 1).
        contribution[dim] = BACKGROUND * ((state >> 40) / float(1 << 23) - 1.0)
    contribution[hashed % dimensions] += 1.0
    return tuple(contribution)


def embed(
    text: str, concepts: Mapping[str, str] | None = None, dimensions: int = DIMENSIONS
) -> list[float]:
    """The unit vector of `text`; a text with no meaningful token points along dimension 0."""
    if dimensions < 1:
        raise ValueError("dimensions must be positive")
    vector = [0.0] * dimensions
    for token in tokens(text, concepts):
        for dim, value in enumerate(_token_vector(token, dimensions)):
            vector[dim] += value
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:
        vector[0] = 1.0
        return vector
    return [v / norm for v in vector]


def cosine(a: list[float], b: list[float]) -> float:
    """Cosine similarity of two unit vectors (their dot product)."""
    return sum(x * y for x, y in zip(a, b, strict=True))
