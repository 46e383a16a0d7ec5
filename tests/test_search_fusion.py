"""The hybrid ranking's fusion (palace.search.fusion): the formula, and what it is for.

The service's wiring (pools, the lexical mass from the index) is checked against the brute-force
oracle in `tests/test_search_oracle.py`; the figures that chose the method are in
docs/retrieval.md, "Fusion".
"""

from __future__ import annotations

import pytest

from palace.search.chatter import is_chatter
from palace.search.fusion import (
    CHATTER_SHARE,
    DIALOGUE_SHARE,
    LEXICAL_HIGH,
    LEXICAL_LOW,
    fuse,
    lexical_weight,
)


def test_the_formula_on_two_small_pools() -> None:
    lexical = [("a", 4.0), ("b", 2.0)]
    semantic = [("b", 0.9), ("c", 0.7), ("a", 0.2)]
    weight = LEXICAL_LOW + (LEXICAL_HIGH - LEXICAL_LOW) * 0.5  # BM25 4 of a mass of 8
    share = {d: s / 0.9 for d, s in semantic}  # of the best cosine
    expected = {
        "a": weight * 1.0 + (1 - weight) * share["a"],
        "b": weight * 0.0 + (1 - weight) * share["b"],
        "c": (1 - weight) * share["c"],  # not found lexically: 0 there
    }
    fused = fuse(lexical, semantic, 8.0)
    assert [d for d, _, _ in fused] == ["b", "c", "a"]
    assert {d: s for d, s, _ in fused} == pytest.approx(expected)
    assert {d: signals for d, _, signals in fused} == {
        "a": {"lexical": 4.0, "semantic": 0.2},
        "b": {"lexical": 2.0, "semantic": 0.9},
        "c": {"semantic": 0.7},
    }


def test_the_lexical_weight_follows_its_first_hits_coverage() -> None:
    assert lexical_weight([], 5.0) == LEXICAL_LOW
    assert lexical_weight([("a", 3.0)], 0.0) == LEXICAL_LOW
    assert lexical_weight([("a", 0.0)], 5.0) == LEXICAL_LOW
    assert lexical_weight([("a", 9.0)], 5.0) == LEXICAL_HIGH
    assert LEXICAL_LOW < lexical_weight([("a", 2.0)], 5.0) < LEXICAL_HIGH


def test_the_lexical_weight_is_less_when_its_first_hit_is_a_dialogue() -> None:
    assert lexical_weight([("session", 9.0)], 5.0, {"session"}) == LEXICAL_HIGH * DIALOGUE_SHARE
    assert lexical_weight([("turn", 9.0), ("session", 8.0)], 5.0, {"session"}) == LEXICAL_HIGH
    assert lexical_weight([], 5.0, {"session"}) == LEXICAL_LOW


def test_a_sessions_lexical_match_does_not_outrank_the_passage_that_answers() -> None:
    """Sessions of one conversation: the one that mentions the question's words most leads
    the lexical leg; the semantic leg's first hit, whose best passage answers, stays first. The
    same pools of short drawers go the lexical leg's way."""
    lexical = [("chatty", 6.0), ("answer", 5.0), ("other", 2.0)]
    semantic = [("answer", 0.62), ("chatty", 0.58), ("other", 0.40)]
    sessions = {"chatty", "answer", "other"}
    assert fuse(lexical, semantic, 6.0, dialogues=sessions)[0][0] == "answer"
    assert fuse(lexical, semantic, 6.0)[0][0] == "chatty"


def test_a_match_on_common_words_leaves_the_semantic_order() -> None:
    """A paraphrase: the lexical leg found drawers by "at" alone, a small share of the query's
    mass, and the semantic leg's clear first hit stays first."""
    lexical = [("x", 0.4), ("y", 0.3), ("answer", 0.1)]
    semantic = [("answer", 0.62), ("y", 0.31), ("x", 0.30), ("z", 0.29)]
    assert fuse(lexical, semantic, 9.0)[0][0] == "answer"


def test_a_drawer_holding_the_rare_words_is_first() -> None:
    """The lexical leg's first hit holds every rare word of the query; the semantic leg barely
    separates its candidates, and lexical wins."""
    lexical = [("answer", 7.5), ("x", 1.0)]
    semantic = [("x", 0.51), ("answer", 0.50), ("y", 0.49), ("z", 0.30)]
    assert fuse(lexical, semantic, 7.0)[0][0] == "answer"


def test_equal_scores_rank_by_id_and_empty_legs_fuse() -> None:
    fused = fuse([("d2", 1.0), ("d1", 1.0)], [], 1.0)
    assert [(d, s) for d, s, _ in fused] == [("d1", LEXICAL_HIGH), ("d2", LEXICAL_HIGH)]
    only_semantic = fuse([], [("s1", 0.8), ("s2", 0.4)], 0.0)
    assert [d for d, _, _ in only_semantic] == ["s1", "s2"]
    assert fuse([], [], 0.0) == []


def test_chatter_keeps_its_share_of_the_fused_score() -> None:
    lexical = [("wow", 3.0), ("fact", 2.0)]
    semantic = [("wow", 0.8), ("fact", 0.7)]
    plain = {d: s for d, s, _ in fuse(lexical, semantic, 8.0)}
    weighed = fuse(lexical, semantic, 8.0, {"wow"})
    assert [d for d, _, _ in weighed] == ["fact", "wow"]
    assert {d: s for d, s, _ in weighed} == pytest.approx(
        {"wow": plain["wow"] * CHATTER_SHARE, "fact": plain["fact"]}
    )
    assert {d: signals for d, _, signals in weighed} == {
        "wow": {"lexical": 3.0, "semantic": 0.8},
        "fact": {"lexical": 2.0, "semantic": 0.7},
    }


@pytest.mark.parametrize(
    "content",
    [
        "wow",
        "Diego: yep",
        "haha ok",
        "that's what I said",
        "right??",
        "👍",
        "",
        "Dr. Ng: thanks!",
        "Diego: heyyy",
        "noooo",
        "Priya: later!",
    ],
)
def test_a_drawer_of_function_words_and_interjections_is_chatter(content: str) -> None:
    assert is_chatter(content)


@pytest.mark.parametrize(
    "content",
    [
        "Diego: yep! a corgi named Waffles",
        "Adelaide, right by the harbour",
        "oui, merci",
        "ok: deploy at 5",
        "42",
        "the cache",
        "evening folks",
        "www.example.com",
    ],
)
def test_a_drawer_with_a_word_of_its_own_is_not(content: str) -> None:
    assert not is_chatter(content)
