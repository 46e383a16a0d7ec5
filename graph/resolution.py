"""Entity resolution: which entity a name, as a drawer wrote it, names (docs/graph.md,
"Entities and spellings").

Pure functions; the repository finds the entities they judge. Among the entities of the same kind
(an `other` observation may match any kind), in order:

1. `exact`: the same name;
2. `normalized`: the same key (`key`): `Node.js`, `NodeJS` and `nodejs` are one;
3. `alias`: a spelling recorded on the entity (its key);
4. `typo`: exactly one entity at edit distance 1, for a name of at least 6 characters;
5. `new`: a new entity, with `possibly_same_as` candidates to the entities it resembles (2 edits,
   or 1 edit in a short name, similarity at least 0.75), or to every entity when it is 1 edit
   from two of them.

Rule 4 and the candidates are off with `dedup.entity_fuzzy = false`. Distances are between
keys, with an adjacent transposition counted as one edit, as for drawers (docs/concepts.md,
"Deduplication").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

RULES = ("exact", "normalized", "alias", "typo", "new")
CONFIDENCE = {"exact": 1.0, "normalized": 0.95, "alias": 0.9, "new": 1.0}
# Rule 4 applies to names whose key has at least this many characters.
TYPO_MIN_CHARS = 6
# A candidate resembles the new name at least this much (1 - edits / longer key).
CANDIDATE_SIMILARITY = 0.75
# Keys up to this length are given their two-deletion variants (`fuzzy_terms`): every pair of
# keys within two edits shares one. Longer keys get their one-deletion variants only, so a
# candidate two edits from a very long name can be missed (a review aid, never a match).
FULL_VARIANTS_MAX = 20
# Keys shorter than this can only be one edit from a candidate at similarity 0.75 or more.
TWO_EDIT_MIN_CHARS = 8
OTHER = "other"


def key(name: str) -> str:
    """The name normalized: lowercase; letters, digits, `+` and `#` kept; `.` and `'` dropped;
    every other run of characters one space; no space at either end.

    `Node.js`, `NodeJS` and `nodejs` share the key `nodejs`; `C++` is `c++`, `C#` is `c#`;
    `O'Reilly` is `oreilly`; `foo-bar` and `foo  bar` are `foo bar`.
    """
    kept: list[str] = []
    pending_space = False
    for char in name.lower():
        if char.isalnum() or char in "+#":
            if pending_space and kept:
                kept.append(" ")
            pending_space = False
            kept.append(char)
        elif char in ".'\u2019":
            continue
        else:
            pending_space = True
    return "".join(kept)


def distance(a: str, b: str, limit: int = 2) -> int:
    """Edit distance (insertions, deletions, substitutions, adjacent transpositions), or
    `limit + 1` when it is more than `limit`."""
    if a == b:
        return 0
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                value = min(value, previous2[j - 2] + 1)
            current[j] = value
        if min(current) > limit:
            return limit + 1
        previous2, previous = previous, current
    return min(previous[-1], limit + 1)


def similarity(a: str, b: str, edits: int) -> float:
    longer = max(len(a), len(b))
    return 1.0 if longer == 0 else round(1.0 - edits / longer, 4)


def deletions(text: str, depth: int) -> set[str]:
    """`text` and every string made from it by deleting up to `depth` characters."""
    found = {text}
    frontier = {text}
    for _ in range(depth):
        frontier = {item[:i] + item[i + 1 :] for item in frontier for i in range(len(item))}
        found |= frontier
    return found


def fuzzy_terms(entity_key: str) -> set[str]:
    """What an entity is filed under for rule 4 and the candidates (see `lookup_terms`)."""
    if not entity_key:
        return set()
    depth = 2 if TWO_EDIT_MIN_CHARS <= len(entity_key) <= FULL_VARIANTS_MAX else 1
    return deletions(entity_key, depth)


def lookup_terms(observed_key: str) -> set[str]:
    """The terms to look an observed key up with: every stored key within two edits of it
    (within one for a key under 8 characters, as no closer candidate exists) shares one."""
    if not observed_key:
        return set()
    return deletions(observed_key, 2 if len(observed_key) <= FULL_VARIANTS_MAX else 1)


def kinds_matched(kind: str) -> tuple[str, ...] | None:
    """The entity kinds an observation of `kind` may match; None for any (an `other`)."""
    return None if kind == OTHER else (kind,)


def eligible(entity: Mapping[str, Any], kind: str) -> bool:
    allowed = kinds_matched(kind)
    return allowed is None or entity["kind"] in allowed


def _order(entity: Mapping[str, Any], kind: str) -> tuple:
    """Which of several matching entities wins: the observation's own kind first, then the
    oldest, then the id, so a resolution never depends on the order rows come back in."""
    return (entity["kind"] != kind, str(entity.get("created_at") or ""), entity["id"])


@dataclass(frozen=True)
class Candidate:
    entity: Mapping[str, Any]
    similarity: float


@dataclass(frozen=True)
class Decision:
    """What the rules made of a name: the entity matched (None for `new`), the rule, its
    confidence, and for `new` the candidates to link."""

    rule: str
    confidence: float
    entity: Mapping[str, Any] | None = None
    candidates: list[Candidate] = field(default_factory=list)


def decide(
    name: str,
    kind: str,
    *,
    by_name: Iterable[Mapping[str, Any]] = (),
    by_key: Iterable[Mapping[str, Any]] = (),
    by_alias: Iterable[Mapping[str, Any]] = (),
    nearby: Iterable[Mapping[str, Any]] = (),
    fuzzy: bool = True,
) -> Decision:
    """Apply the five rules to the entities found for `name`: those with that name (`by_name`),
    that key (`by_key`), an alias of that key (`by_alias`) and, for rule 4 and the candidates,
    those filed under one of its `lookup_terms` (`nearby`). Entities of other kinds are ignored
    here, so the lookups need not filter them."""
    observed = key(name)
    for rule, found, test in (
        ("exact", by_name, lambda e: e["name"] == name),
        ("normalized", by_key, lambda e: e.get("key") == observed),
        (
            "alias",
            by_alias,
            lambda e: observed in (e.get("alias_keys") or [key(a) for a in e.get("aliases", [])]),
        ),
    ):
        matches = [e for e in found if eligible(e, kind) and test(e)]
        if matches:
            best = min(matches, key=lambda e: _order(e, kind))
            return Decision(rule, CONFIDENCE[rule], best)
    if not fuzzy or not observed:
        return Decision("new", CONFIDENCE["new"])
    seen: dict[str, tuple[int, Mapping[str, Any]]] = {}
    for entity in nearby:
        if entity["id"] in seen or not eligible(entity, kind):
            continue
        edits = distance(observed, entity.get("key") or key(entity["name"]))
        if edits <= 2:
            seen[entity["id"]] = (edits, entity)
    one_edit = sorted((e for d, e in seen.values() if d == 1), key=lambda e: _order(e, kind))
    if len(observed) >= TYPO_MIN_CHARS and len(one_edit) == 1:
        entity = one_edit[0]
        return Decision("typo", similarity(observed, entity["key"], 1), entity)
    candidates = []
    for edits, entity in seen.values():
        score = similarity(observed, entity.get("key") or key(entity["name"]), edits)
        ambiguous = edits == 1 and len(one_edit) >= 2
        if edits == 0 or not (ambiguous or score >= CANDIDATE_SIMILARITY):
            continue
        candidates.append(Candidate(entity, score))
    candidates.sort(key=lambda c: (-c.similarity, c.entity["id"]))
    return Decision("new", CONFIDENCE["new"], None, candidates)


def entity_terms(entity_key: str, alias_keys: Iterable[str]) -> list[tuple[str, str]]:
    """The `(role, term)` rows an entity is found by: its aliases' keys and its fuzzy terms."""
    rows = {("alias", alias) for alias in alias_keys if alias}
    rows |= {("fuzzy", term) for term in fuzzy_terms(entity_key)}
    return sorted(rows)


__all__ = [
    "RULES",
    "Candidate",
    "Decision",
    "decide",
    "deletions",
    "distance",
    "entity_terms",
    "fuzzy_terms",
    "key",
    "lookup_terms",
    "similarity",
]
