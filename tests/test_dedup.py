"""How alike two drawers are (palace.md section 7): the pure functions of `palace.dedup`.

No store here: normalization, edit and trigram similarity, the verdict `judge` gives, the
blocking keys that find candidates by index, and the `dedup.*` settings.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.config import DedupConfig, load_config
from kernel.errors import ConfigInvalid
from palace import dedup, drawers

# Deterministic and quick: the same examples every run, and no example database on disk.
PROPERTY = settings(derandomize=True, database=None, max_examples=150, deadline=None)
# A small alphabet makes shared letters, transpositions and repeats likely.
SHORT_TEXT = st.text(alphabet="abcde ", max_size=24)
LONG = "We deploy the backend service every Tuesday morning."
NORMALIZED_LONG = "we deploy the BACKEND service, every tuesday morning"


def drawer(content: str) -> dict[str, Any]:
    """What `judge` reads of a drawer."""
    return {
        "content": content,
        "content_hash": drawers.content_hash(content),
        "fingerprint": drawers.fingerprint(content),
    }


def verdict(new: str, old: str, threshold: float = 0.9) -> dedup.Verdict | None:
    return dedup.judge(drawer(new), drawer(old), threshold, dedup.normalize(new))


def osa_distance(a: str, b: str) -> int:
    """Optimal string alignment distance, the textbook full-matrix way (the reference)."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


# normalize ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Hello WORLD", "hello world"),
        ("Straße", "strasse"),
        ("Hello, world! (again)... ok?", "hello world again ok"),
        ("  a \t\n\n b  ", "a b"),
        ("one,two;three", "one two three"),
        ("Résumé au CAFÉ", "résumé au café"),
        ("snake_case_name", "snake case name"),
        ("version 2.0 — final", "version 2 0 final"),
        ("", ""),
        ("?!... ---", ""),
    ],
    ids=[
        "case",
        "casefold",
        "punctuation",
        "whitespace",
        "punct-splits",
        "accents",
        "underscore",
        "digits",
        "empty",
        "only-punct",
    ],
)
def test_normalize(raw: str, expected: str) -> None:
    assert dedup.normalize(raw) == expected


def test_normalize_keeps_accents_apart() -> None:
    assert dedup.normalize("resume") != dedup.normalize("résumé")
    assert drawers.fingerprint("resume") != drawers.fingerprint("résumé")


@pytest.mark.parametrize("raw", ["a _ b", "_a b_", "a __ b"])
def test_normalize_collapses_whitespace_around_underscores(raw: str) -> None:
    assert dedup.normalize(raw) == "a b"


def test_decomposed_accents_are_not_folded() -> None:
    decomposed = unicodedata.normalize("NFD", "résumé")
    assert decomposed != "résumé", "the test needs combining characters"
    assert " " not in dedup.normalize(decomposed)
    assert dedup.normalize(decomposed) != dedup.normalize("resume")
    assert drawers.fingerprint(decomposed) != drawers.fingerprint("resume")


# blocking keys -----------------------------------------------------------------------------


def test_blocking_keys_are_the_ends_of_the_normalized_text() -> None:
    text = "We DEPLOY the backend service, every Tuesday morning -- after the standup!"
    normalized = dedup.normalize(text)
    assert len(normalized) > 2 * dedup.KEY_CHARS
    assert dedup.blocking_keys(text) == {
        "dedup_head": normalized[: dedup.KEY_CHARS],
        "dedup_tail": normalized[-dedup.KEY_CHARS :],
    }
    assert dedup.blocking_keys(text)["dedup_head"] == "we deploy the backend se"
    assert dedup.blocking_keys(text)["dedup_tail"] == "orning after the standup"


def test_blocking_keys_of_a_short_text_are_the_whole_text() -> None:
    assert dedup.blocking_keys("Buy milk!") == {"dedup_head": "buy milk", "dedup_tail": "buy milk"}
    assert dedup.blocking_keys("") == {"dedup_head": "", "dedup_tail": ""}


def test_blocking_keys_ignore_case_punctuation_and_spacing() -> None:
    assert dedup.blocking_keys(LONG) == dedup.blocking_keys(NORMALIZED_LONG)


def test_a_candidate_shares_a_key() -> None:
    def keyed(content: str) -> dict[str, Any]:
        return {**drawer(content), **dedup.blocking_keys(content)}

    def shares_a_key(a: dict[str, Any], b: dict[str, Any]) -> bool:
        return bool(dedup.keys(a) & dedup.keys(b))

    base = keyed(LONG)
    assert shares_a_key(base, keyed(LONG))
    assert shares_a_key(base, keyed(NORMALIZED_LONG))
    # A typo at the end keeps the head; one at the start keeps the tail.
    assert shares_a_key(base, keyed(LONG.replace("morning", "mornign")))
    assert shares_a_key(base, keyed(LONG.replace("We deploy", "We depoly")))
    assert not shares_a_key(base, keyed(LONG.replace("We", "Wee").replace("ing.", "ign.")))
    assert not shares_a_key(base, keyed("Something else entirely, start to finish."))
    # A stored drawer from before the keys existed shares only what it has.
    assert not shares_a_key(base, {"content_hash": "0" * 64})


# edit_similarity ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("identical text", "identical text", 1.0),
        ("", "", 1.0),
        ("", "abc", 0.0),
        ("abc", "", 0.0),
        ("kitten", "sitten", 1 - 1 / 6),  # one substitution
        ("abcd", "abdc", 0.75),  # one adjacent transposition is one edit, not two
        ("tuesday", "tuesady", 1 - 1 / 7),
        ("abc", "abcd", 0.75),  # one insertion
        ("abcd", "acd", 0.75),  # one deletion
        ("kitten", "sitting", 4 / 7),  # two substitutions and an insertion
        ("abc", "xyz", 0.0),
        # Optimal string alignment, not unrestricted Damerau-Levenshtein: a transposed pair is
        # not edited again, so "ca" -> "abc" takes 3 edits (Damerau-Levenshtein: 2).
        ("ca", "abc", 0.0),
    ],
)
def test_edit_similarity(a: str, b: str, expected: float) -> None:
    assert dedup.edit_similarity(a, b) == pytest.approx(expected)


@PROPERTY
@given(SHORT_TEXT, SHORT_TEXT)
def test_edit_similarity_is_one_minus_osa_distance_over_the_longer(a: str, b: str) -> None:
    longer = max(len(a), len(b))
    expected = 1.0 if longer == 0 else 1 - osa_distance(a, b) / longer
    assert dedup.edit_similarity(a, b) == pytest.approx(expected)


# trigram_similarity ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("abcdef", "abcdef", 1.0),
        ("abcd", "abce", 1 / 3),  # {abc, bcd} vs {abc, bce}
        ("abcdef", "uvwxyz", 0.0),
        ("aaaa", "aaa", 1.0),  # sets: repeats count once
        ("abc", "abcd", 1 / 2),
        ("ab", "ab", 1.0),  # shorter than a trigram: the whole text is its one gram
        ("ab", "ac", 0.0),
        ("", "", 1.0),
        ("", "abc", 0.0),
    ],
)
def test_trigram_similarity(a: str, b: str, expected: float) -> None:
    assert dedup.trigram_similarity(a, b) == pytest.approx(expected)


# similarity --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lengths", "measure"),
    [
        ((10, 12), "edit"),
        ((2000, 2000), "edit"),
        ((1999, 2000), "edit"),
        ((2000, 2001), "trigram"),
        ((2001, 2001), "trigram"),
        ((5, 3000), "trigram"),
    ],
)
def test_similarity_switches_to_trigrams_beyond_2000_chars(
    monkeypatch: pytest.MonkeyPatch, lengths: tuple[int, int], measure: str
) -> None:
    """Which measure runs is decided by the longer text (the measures are stubbed: a real edit
    similarity of 2000-character texts takes seconds)."""
    called: list[str] = []
    monkeypatch.setattr(dedup, "edit_similarity", lambda a, b: called.append("edit") or 0.25)
    monkeypatch.setattr(dedup, "trigram_similarity", lambda a, b: called.append("trigram") or 0.5)
    a, b = "a" * lengths[0], "b" * lengths[1]
    assert dedup.similarity(a, b) == (0.25 if measure == "edit" else 0.5)
    assert called == [measure]
    assert dedup.EDIT_LIMIT == 2000


def test_similarity_of_long_texts_is_trigram_jaccard() -> None:
    a = "x" * 2001
    b = "x" * 2000 + "y"
    # One edit in 2001 would be 0.9995; the trigram sets are {xxx} and {xxx, xxy}.
    assert dedup.similarity(a, b) == 0.5
    assert dedup.similarity(a, a) == 1.0


def test_similarity_of_short_texts_is_edit_similarity() -> None:
    assert dedup.similarity("abcd", "abdc") == 0.75


@PROPERTY
@given(SHORT_TEXT, SHORT_TEXT)
def test_similarity_is_a_symmetric_fraction(a: str, b: str) -> None:
    score = dedup.similarity(a, b)
    assert 0.0 <= score <= 1.0
    assert score == dedup.similarity(b, a)


@PROPERTY
@given(
    st.text(alphabet="abc ", max_size=40),
    st.text(alphabet="abc ", max_size=40),
    st.sampled_from([0.5, 0.75, 0.8, 0.9, 0.95, 1.0]),
)
def test_the_length_bound_never_drops_a_pair_that_reaches_the_threshold(
    a: str, b: str, threshold: float
) -> None:
    if dedup.similarity(a, b) >= threshold:
        assert dedup.could_reach(a, b, threshold)


@PROPERTY
@given(
    st.text(alphabet="abcd", min_size=2001, max_size=2400),
    st.text(alphabet="abcd", min_size=1500, max_size=2400),
    st.sampled_from([0.5, 0.9, 1.0]),
)
def test_the_trigram_bound_never_drops_a_pair_that_reaches_the_threshold(
    a: str, b: str, threshold: float
) -> None:
    if dedup.similarity(a, b) >= threshold:
        assert dedup.could_reach(a, b, threshold)


def test_lengths_too_far_apart_cannot_reach_the_threshold() -> None:
    assert not dedup.could_reach("a" * 80, "a" * 100, 0.9)
    assert dedup.could_reach("a" * 90, "a" * 100, 0.9)


@PROPERTY
@given(st.text(max_size=60))
def test_similarity_of_a_text_with_itself_is_one(a: str) -> None:
    assert dedup.similarity(a, a) == 1.0
    assert dedup.edit_similarity(a, a) == 1.0
    assert dedup.trigram_similarity(a, a) == 1.0


@PROPERTY
@given(st.text(alphabet="abc", max_size=80), st.text(alphabet="abc", max_size=80))
def test_trigram_similarity_is_a_symmetric_fraction(a: str, b: str) -> None:
    score = dedup.trigram_similarity(a, b)
    assert 0.0 <= score <= 1.0
    assert score == dedup.trigram_similarity(b, a)


# judge -------------------------------------------------------------------------------------


def test_an_exact_copy_has_the_same_hash() -> None:
    found = verdict(LONG, LONG, 0.9)
    assert found == dedup.Verdict(
        "exact",
        1.0,
        {"same_hash": True, "same_fingerprint": True, "similarity": 1.0, "threshold": 0.9},
    )


def test_a_normalized_copy_has_the_same_fingerprint_only() -> None:
    found = verdict(NORMALIZED_LONG, LONG, 0.95)
    assert found is not None
    assert found.kind == "normalized"
    assert found.similarity == 1.0
    assert found.signals == {
        "same_hash": False,
        "same_fingerprint": True,
        "similarity": 1.0,
        "threshold": 0.95,
    }


def test_a_near_copy_is_at_least_the_threshold_similar() -> None:
    typo = "We deploy the backend service every Tuesady morning."
    expected = round(1 - 1 / len(dedup.normalize(LONG)), 4)
    found = verdict(typo, LONG, 0.9)
    assert found is not None
    assert found.kind == "near"
    assert found.similarity == expected == 0.9804
    assert found.signals == {
        "same_hash": False,
        "same_fingerprint": False,
        "similarity": expected,
        "threshold": 0.9,
    }


def test_a_near_copy_is_judged_on_normalized_text() -> None:
    """Case and punctuation differences cost nothing: only the typo counts."""
    found = verdict("WE DEPLOY THE BACKEND SERVICE, EVERY TUESADY MORNING!", LONG, 0.9)
    assert found is not None
    assert (found.kind, found.similarity) == ("near", 0.9804)


def test_similarity_equal_to_the_threshold_is_near() -> None:
    old = "abcdefghijklmnopqrst"  # 20 characters: two edits is exactly 0.9
    new = "abcdefghijklmnopqrXY"
    found = verdict(new, old, 0.9)
    assert found is not None
    assert (found.kind, found.similarity) == ("near", 0.9)
    assert verdict(new, old, 0.91) is None


def test_texts_below_the_threshold_are_distinct() -> None:
    assert verdict("We deploy the frontend app every Friday evening.", LONG, 0.9) is None
    typo = "We deploy the backend service every Tuesady morning."
    assert verdict(typo, LONG, 0.99) is None


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("Buy milk", "Buy silk"),  # 7 normalized characters
        ("abcdefghijk", "abcdefghijx"),  # 11: 10/11 similar, still too short
        ("abcdefghijk", "abcdefghijkl"),  # the shorter of the two decides
        ("abcdefghijkl", "abcdefghijk"),
    ],
)
def test_short_texts_are_never_near_copies(new: str, old: str) -> None:
    assert verdict(new, old, 0.5) is None


def test_twelve_normalized_characters_may_be_a_near_copy() -> None:
    found = verdict("abcdefghijkl", "abcdefghijkm", 0.9)
    assert found is not None
    assert (found.kind, found.similarity) == ("near", round(11 / 12, 4))


@pytest.mark.parametrize(
    ("new", "old", "kind"),
    [("Buy milk", "Buy milk", "exact"), ("Buy milk!", "buy   MILK", "normalized")],
)
def test_short_texts_may_be_exact_or_normalized_copies(new: str, old: str, kind: str) -> None:
    found = verdict(new, old, 0.9)
    assert found is not None
    assert (found.kind, found.similarity) == (kind, 1.0)


def test_an_old_drawer_without_fingerprint_is_compared_by_similarity() -> None:
    """`fingerprint` is optional on stored drawers (palace.md 1)."""
    old = {"content": LONG, "content_hash": drawers.content_hash(LONG)}
    new = drawer("we deploy the backend service every tuesday morning")
    found = dedup.judge(new, old, 0.9, dedup.normalize(new["content"]))
    assert found is not None
    assert (found.kind, found.similarity) == ("near", 1.0)
    assert found.signals["same_fingerprint"] is False


def test_the_similarity_is_rounded_to_four_places() -> None:
    found = verdict("abcdefghijklmnopqrstu", "abcdefghijklmnopqrstX", 0.5)  # 20/21
    assert found is not None
    assert found.similarity == round(20 / 21, 4) == 0.9524


def test_the_verdict_is_immutable() -> None:
    found = verdict(LONG, LONG)
    assert found is not None
    with pytest.raises(AttributeError):
        found.kind = "near"  # type: ignore[misc]


# Settings ----------------------------------------------------------------------------------


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """An environment whose default config file (under XDG_CONFIG_HOME) does not exist."""
    return {"XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data")}


def test_dedup_defaults(env: dict[str, str]) -> None:
    assert load_config(env=env).dedup == DedupConfig(enabled=True, near_threshold=0.9)
    assert DedupConfig() == DedupConfig(enabled=True, near_threshold=dedup.DEFAULT_NEAR_THRESHOLD)


def test_dedup_settings_from_the_environment(env: dict[str, str]) -> None:
    env = {**env, "MEMCASTLE_DEDUP_ENABLED": "false", "MEMCASTLE_DEDUP_NEAR_THRESHOLD": "0.95"}
    assert load_config(env=env).dedup == DedupConfig(enabled=False, near_threshold=0.95)


def test_dedup_settings_from_the_file(env: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "memcastle.toml"
    path.write_text("[dedup]\nenabled = false\nnear_threshold = 0.75\n", encoding="utf-8")
    config = load_config(config_file=str(path), env=env)
    assert config.dedup == DedupConfig(enabled=False, near_threshold=0.75)


@pytest.mark.parametrize("value", ["0.5", "1", "1.0", "0.99"])
def test_near_threshold_bounds_are_inclusive(env: dict[str, str], value: str) -> None:
    env = {**env, "MEMCASTLE_DEDUP_NEAR_THRESHOLD": value}
    assert load_config(env=env).dedup.near_threshold == float(value)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("MEMCASTLE_DEDUP_NEAR_THRESHOLD", "0.49"),
        ("MEMCASTLE_DEDUP_NEAR_THRESHOLD", "1.01"),
        ("MEMCASTLE_DEDUP_NEAR_THRESHOLD", "high"),
        ("MEMCASTLE_DEDUP_NEAR_THRESHOLD", "nan"),
        ("MEMCASTLE_DEDUP_ENABLED", "maybe"),
    ],
)
def test_bad_dedup_settings_are_refused(env: dict[str, str], variable: str, value: str) -> None:
    with pytest.raises(ConfigInvalid) as caught:
        load_config(env={**env, variable: value})
    assert caught.value.code == "memcastle::config::invalid"
    assert variable in caught.value.message
