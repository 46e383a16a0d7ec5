"""How alike two drawers are: exact, normalized and near copies (palace.md section 7).

Decided here, in the domain, never by a database constraint. An exact copy is the same bytes; a
normalized copy has the same text once case, punctuation and whitespace are ignored; a near
copy is at least `dedup.near_threshold` similar. Only exact unnamed copies are not stored: the
others are stored and linked with `similar_to`, never merged.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
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


# What a candidate copy shares with a drawer. The stored ones are looked up by the last three:
# the same bytes always have the same fingerprint.
KEYS = ("content_hash", "fingerprint", "dedup_head", "dedup_tail")
LOOKUP_KEYS = KEYS[1:]


def shares_a_key(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether `b` is a candidate copy of `a`: what the index lookups find, for drawers not
    stored yet."""
    return any(a[key] == b.get(key) for key in KEYS)


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
    grams_a = {a[i : i + 3] for i in range(max(len(a) - 2, 1))}
    grams_b = {b[i : i + 3] for i in range(max(len(b) - 2, 1))}
    return len(grams_a & grams_b) / len(grams_a | grams_b)


def similarity(a: str, b: str) -> float:
    """How alike two normalized texts are, from 0 to 1."""
    if max(len(a), len(b)) <= EDIT_LIMIT:
        return edit_similarity(a, b)
    return trigram_similarity(a, b)


def judge(
    new: dict[str, Any], old: dict[str, Any], threshold: float, new_normalized: str
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
