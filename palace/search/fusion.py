"""How the hybrid ranking fuses its two legs: a weighted sum of normalised scores.

Reciprocal rank fusion gave a weak leg's guesses the weight of a strong leg's certainties: a
paraphrase's lexical matches on "at" or "during" outranked the semantic leg's first hit, and hybrid
fell below its best leg in most cells of the retrieval benchmarks (issue 26, docs/retrieval.md,
"Fusion"). Measured against rank fusion with other constants and weights, min-max, z-score and
max normalisations, and leg weights that follow how peaked each leg's scores are, this one came
closest to its best leg with the local model (`bench/fusion.py` replays them all):

- the lexical leg's BM25 is min-max normalised over its pool, the semantic leg's cosine is
  divided by the pool's best cosine;
- the lexical weight follows the lexical leg's *coverage*: its first hit's BM25 over the query's
  lexical mass (the sum of its terms' IDF, about what a drawer holding each term once scores).
  A drawer holding the query's rare words makes the lexical leg worth up to `LEXICAL_HIGH`; one
  sharing only common words ("what", "at") leaves it `LEXICAL_LOW`;
- when that first hit is a dialogue (a drawer in which two or more people speak: a session of a
  conversation, a mined transcript), the lexical share is `DIALOGUE_SHARE` of that. A whole
  session holds most of a question's words somewhere among its dozens of turns, and its sessions
  share their speakers and their small talk, so BM25 tells them apart poorly, where the semantic
  leg scores a dialogue by its best passage of a few turns (`palace.embeddings.passages`). On
  the conversational benchmark's sessions with the local model hybrid any@5 went from 0.948 to
  0.955 (the semantic leg alone 0.957, the lexical leg 0.707; 0.945 to 0.950 with the local
  graph since), nothing else moved with the local model, and the stand-in's bag-of-words vectors
  lost what a weaker semantic leg needs from the lexical one (docs/retrieval.md, "Dialogues").

The semantic leg was a z-score over its pool until the lexical index learned to hold a turn
with the turn before it (`palace.search.turns`): on the conversational benchmark's turns a
z-score's spread of 3 or more against the lexical leg's 1 left hybrid where the semantic leg
was, the lexical leg's new finds unused (any@10 0.688 against 0.720 now, all@10 0.609 against
0.659, the judged set alike but for one question; docs/retrieval.md, "Fusion").

A drawer the lexical leg did not find gets 0 there (a pool of one, or of equal scores, is all 1);
one the semantic leg did not find gets the pool's lowest share. A drawer that is chatter
(`palace.search.chatter`: "wow", "Diego: yep") keeps `CHATTER_SHARE` of its fused score: it
matches a question by its function words and its speaker's name, and answers none. Everything
is arithmetic over the two pools: no store round trip.
"""

from __future__ import annotations

from collections.abc import Container

LEXICAL_LOW = 0.2
LEXICAL_HIGH = 0.3
# The part of the lexical share left when the lexical leg's first hit is a dialogue. 0.5 left
# the fewest cells below the best leg over the six runs of the retrieval benchmarks, and it is
# the lowest share at which the stand-in's sessions keep hybrid at or above both legs overall;
# from 0.2 to 0.85 the local model's sessions met their target (docs/retrieval.md, "Dialogues").
DIALOGUE_SHARE = 0.5
# The candidates each leg gives the fusion: the page, and at least `POOL_MIN`. Not a multiple
# of the page, as it was (twice the page): a page's first hits are then the same whatever its
# length up to `POOL_MIN`, where a page of 20 fused pools of 40 and its first ten were not the
# page of 10; and pools of 20 measured better than pools of 40 on the conversational turns
# (docs/retrieval.md, "Chatter").
POOL_MIN = 20
# 0.5 and 0.7 measured alike on the conversational benchmark, 0.85 a little worse
# (docs/retrieval.md, "Chatter").
CHATTER_SHARE = 0.5

Leg = list[tuple[str, float]]


def fuse(
    lexical: Leg,
    semantic: Leg,
    mass: float,
    chatter: Container[str] = (),
    dialogues: Container[str] = (),
) -> list[tuple[str, float, dict[str, float]]]:
    """(drawer id, fused score, each leg's own score), best first, equal scores by id.
    `lexical` and `semantic` are the legs' pools, best first; `mass` is the query's lexical
    mass (`LexicalIndex.mass`); `chatter` holds the pools' drawers that are chatter, `dialogues`
    those that are dialogues (the lexical leg's first hit is the one that counts)."""
    weight = lexical_weight(lexical, mass, dialogues)
    lexical_values, semantic_values = _min_max(lexical), _of_best(semantic)
    semantic_floor = min(semantic_values.values(), default=0.0)
    signals: dict[str, dict[str, float]] = {}
    for leg, hits in (("lexical", lexical), ("semantic", semantic)):
        for drawer_id, score in hits:
            signals.setdefault(drawer_id, {})[leg] = score
    fused = {
        drawer_id: (
            weight * lexical_values.get(drawer_id, 0.0)
            + (1.0 - weight) * semantic_values.get(drawer_id, semantic_floor)
        )
        * (CHATTER_SHARE if drawer_id in chatter else 1.0)
        for drawer_id in signals
    }
    ranked = sorted(fused.items(), key=lambda item: (-item[1], item[0]))
    return [(drawer_id, score, signals[drawer_id]) for drawer_id, score in ranked]


def pool(limit: int) -> int:
    """How many candidates each leg gives a page of `limit` hits."""
    return max(limit, POOL_MIN)


def lexical_weight(lexical: Leg, mass: float, dialogues: Container[str] = ()) -> float:
    """The lexical leg's share, from `LEXICAL_LOW` to `LEXICAL_HIGH` with its coverage, and
    `DIALOGUE_SHARE` of that when its first hit is one of `dialogues`."""
    if not lexical or mass <= 0:
        return LEXICAL_LOW
    coverage = min(1.0, max(0.0, lexical[0][1] / mass))
    weight = LEXICAL_LOW + (LEXICAL_HIGH - LEXICAL_LOW) * coverage
    return weight * DIALOGUE_SHARE if lexical[0][0] in dialogues else weight


def _min_max(hits: Leg) -> dict[str, float]:
    """Scores mapped onto [0, 1] over the pool; a pool of equal scores is all 1."""
    if not hits:
        return {}
    scores = [score for _, score in hits]
    low, span = min(scores), max(scores) - min(scores)
    return {d: (s - low) / span if span > 0 else 1.0 for d, s in hits}


def _of_best(hits: Leg) -> dict[str, float]:
    """Scores as shares of the pool's best; a pool whose best is not above 0 is all 0."""
    if not hits or hits[0][1] <= 0:
        return {d: 0.0 for d, _ in hits}
    best = hits[0][1]
    return {d: s / best for d, s in hits}
