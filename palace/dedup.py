"""How alike two drawers are: exact, normalized and near copies (docs/concepts.md, "Deduplication").

Decided here, in the domain, never by a database constraint. An exact copy is the same bytes; a
normalized copy has the same text once case, punctuation and whitespace are ignored; a near
copy is at least `dedup.near_threshold` similar. Only exact unnamed copies are not stored: the
others are stored and linked with `similar_to`, never merged.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from rapidfuzz.distance import OSA

# Beyond this many normalized characters, edit similarity is too slow; trigrams stand in.
EDIT_LIMIT = 2000
# Shorter normalized texts can only be exact or normalized copies: a typo is half of them.
NEAR_MIN_CHARS = 12
DEFAULT_NEAR_THRESHOLD = 0.9
# Near-copy candidates are the drawers whose normalized text starts or ends with the same
# characters: one indexed lookup each. The engine's full-text search took 34 ms for one word and
# about 1 s for a twelve-word query in a room of 20,000 drawers here, far too slow for a check
# made on every write; a copy with a few edits keeps at least one of its ends.
KEY_CHARS = 24
# How many of the newest drawers a key lists: a key shared by many drawers of a room (a licence
# header) keeps only the newest as candidates.
KEY_DRAWERS = 50

# Letters and digits: an underscore is punctuation here.
_WORD = re.compile(r"[^\W_]+")
_ASCII_SEPARATORS = str.maketrans(
    {chr(code): " " for code in range(128) if not chr(code).isalnum()}
)


@dataclass(frozen=True)
class Verdict:
    kind: str  # "exact", "normalized" or "near"
    similarity: float
    signals: dict[str, Any]


@lru_cache(maxsize=512)
def normalize(content: str) -> str:
    """Case folded, punctuation dropped, whitespace collapsed; accents kept (composed first, so
    a decomposed `é` is not read as `e` and a mark)."""
    if content.isascii():
        # The same words, ten times faster: ASCII is its own NFC and folds by lowercasing.
        return " ".join(content.lower().translate(_ASCII_SEPARATORS).split())
    return " ".join(_WORD.findall(unicodedata.normalize("NFC", content).casefold()))


def blocking_keys(content: str) -> dict[str, str]:
    """`dedup_head` and `dedup_tail`: the first and last characters of the normalized text,
    stored on every drawer so that candidates are found by index."""
    text = normalize(content)
    return {"dedup_head": text[:KEY_CHARS], "dedup_tail": text[-KEY_CHARS:]}


# What a candidate copy shares with a drawer (the same bytes always have the same fingerprint).
LOOKUP_KEYS = ("fingerprint", "dedup_head", "dedup_tail")


def keys(drawer: dict[str, Any]) -> set[tuple[str, str]]:
    """The `(kind, value)` keys a drawer is found by; a drawer stored before the blocking keys
    existed has only some of them."""
    return {(kind, drawer[kind]) for kind in LOOKUP_KEYS if drawer.get(kind) is not None}


def edit_similarity(a: str, b: str) -> float:
    """1 - optimal string alignment distance / longer length (a transposition is 1 edit).

    rapidfuzz computes it bit-parallel in C++: 0.3 ms for two texts of 2,000 characters, where
    the pure-Python table took 2 to 7 s (a write into a room of 15 such look-alikes took 30 s).
    """
    longer = max(len(a), len(b))
    if longer == 0:
        return 1.0
    return 1 - OSA.distance(a, b) / longer


def trigram_similarity(a: str, b: str) -> float:
    """Jaccard similarity of the two texts' character trigrams."""
    grams_a = _trigrams(a)
    grams_b = _trigrams(b)
    shared = len(grams_a & grams_b)
    return shared / (len(grams_a) + len(grams_b) - shared)


@lru_cache(maxsize=256)
def _trigrams(text: str) -> frozenset[str]:
    # Cached: a long drawer is compared with each of its candidates in turn.
    return frozenset(text[i : i + 3] for i in range(max(len(text) - 2, 1)))


def similarity(a: str, b: str) -> float:
    """How alike two normalized texts are, from 0 to 1."""
    if max(len(a), len(b)) <= EDIT_LIMIT:
        return edit_similarity(a, b)
    return trigram_similarity(a, b)


def could_reach(a: str, b: str, threshold: float) -> bool:
    """Whether two normalized texts' lengths allow a similarity of `threshold`: both measures
    are at most the shorter over the longer (edits must cover the difference; the smaller
    trigram set bounds the shared ones), so most comparisons end before either is computed."""
    if max(len(a), len(b)) <= EDIT_LIMIT:
        small, large = sorted((len(a), len(b)))
    else:
        small, large = sorted((len(_trigrams(a)), len(_trigrams(b))))
    # The margin keeps a pair whose similarity rounds to exactly the threshold.
    return large == 0 or small / large >= threshold - 1e-9


def judge(
    new: Mapping[str, Any], old: Mapping[str, Any], threshold: float, new_normalized: str
) -> Verdict | None:
    """The verdict on `new` against an existing drawer `old`, or None when they are distinct."""
    same_hash = new["content_hash"] == old["content_hash"]
    same_fingerprint = new["fingerprint"] == old.get("fingerprint")
    if same_hash or same_fingerprint:
        score = 1.0
    else:
        old_normalized = normalize(old["content"])
        if min(len(new_normalized), len(old_normalized)) < NEAR_MIN_CHARS:
            return None
        if not could_reach(new_normalized, old_normalized, threshold):
            return None
        exact_score = similarity(new_normalized, old_normalized)
        if exact_score < threshold:
            return None
        score = round(exact_score, 4)
    signals = {
        "same_hash": same_hash,
        "same_fingerprint": same_fingerprint,
        "similarity": score,
        "threshold": threshold,
    }
    kind = "exact" if same_hash else "normalized" if same_fingerprint else "near"
    return Verdict(kind, score, signals)


class EarlierInBatch:
    """The drawers filed before this one in the same batch, found as the stored ones are: by
    room and key (a batch of a long file's chunks can hold thousands), and by room and name."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        self._by_name: dict[tuple[str, str], dict[str, Any]] = {}
        self._order: dict[str, int] = {}

    def add(self, record: dict[str, Any]) -> None:
        self._order[record["id"]] = len(self._order)
        for kind, value in keys(record):
            self._by_key.setdefault((record["room"], kind, value), []).append(record)
        if record.get("name") is not None:
            self._by_name[(record["room"], record["name"])] = record

    def candidates(self, record: dict[str, Any], agent: str | None) -> list[dict[str, Any]]:
        """The earlier drawers of `record`'s room (of `agent`, for a diary) among the newest
        `KEY_DRAWERS` sharing each of its keys, in filing order."""
        found: dict[str, dict[str, Any]] = {}
        for kind, value in keys(record):
            for pending in self._by_key.get((record["room"], kind, value), [])[-KEY_DRAWERS:]:
                if agent is None or pending["source"].get("agent") == agent:
                    found[pending["id"]] = pending
        return sorted(found.values(), key=lambda pending: self._order[pending["id"]])

    def named(self, room: str, name: str) -> dict[str, Any] | None:
        return self._by_name.get((room, name))
