"""Which texts are conversations, and the passages of turns they are also embedded as."""

from __future__ import annotations

from kernel.profiles import LOCAL_PASSAGE_TURNS
from palace.embeddings.passages import MAX_PASSAGES, passages

SESSION = [
    "Ana: morning!",
    "Ben: hey, how was the trip?",
    "Ana: long, the train broke down twice",
    "Ben: oh no",
    "Ana: got a new job though, at the library",
    "Ben: congrats!!",
    "Ana: thanks, starts in May",
    "Ben: what about the flat?",
    "Ana: still looking, talk later",
]


def test_a_session_is_a_passage_starting_at_each_turn() -> None:
    found = passages("\n".join(SESSION))
    assert LOCAL_PASSAGE_TURNS == 6
    assert len(found) == len(SESSION) - 6 + 1
    for start, passage in enumerate(found):
        assert passage == "\n".join(SESSION[start : start + 6])


def test_a_conversation_no_longer_than_one_passage_has_none() -> None:
    assert passages("\n".join(SESSION[:6])) == []
    assert len(passages("\n".join(SESSION[:7]))) == 2


def test_turns_run_on_over_lines_without_a_label() -> None:
    """A mined transcript's turn: a time stamp, a role, and lines of text and tool markers."""
    turns = [
        "[2026-01-31 12:00 UTC] user: the build fails\non the linker step",
        "[2026-01-31 12:01 UTC] assistant: looking\n[tool: Bash make]\nit is the -lm flag",
        "[2026-01-31 12:03 UTC] user: fixed, thanks",
        "[2026-01-31 12:04 UTC] assistant: good",
        "[2026-01-31 12:05 UTC] user: and the tests?\n- unit\n- e2e",
        "[2026-01-31 12:06 UTC] assistant: both pass",
        "[2026-01-31 12:07 UTC] user: ship it",
    ]
    found = passages("\n".join(turns))
    assert found == ["\n".join(turns[:6]), "\n".join(turns[1:])]


def test_a_text_that_does_not_begin_with_a_turn_is_not_a_conversation() -> None:
    assert passages("Notes from the meeting\n" + "\n".join(SESSION)) == []
    assert passages(" ".join(SESSION)) == []


def test_one_speaker_is_not_a_conversation() -> None:
    assert passages("\n".join(f"Note: item {n}" for n in range(12))) == []


def test_a_list_of_fields_is_not_a_conversation() -> None:
    fields = ["name: memcastle", "version: 0.1.0", "license: MIT", "python: 3.12"]
    fields += ["entry: manage.py", "owner: team", "status: active", "name: again"]
    assert passages("\n".join(fields)) == []


def test_prose_with_colons_is_not_a_conversation() -> None:
    prose = "\n".join(
        [
            "The plan: move the cache to Redis.",
            "Why: the daemon restarts often.",
            "Risk: none we know of.",
            "Owner: Priya.",
            "Deadline: Friday.",
            "Status: agreed.",
            "Next: write it down.",
        ]
    )
    assert passages(prose) == []


def test_a_long_conversation_has_at_most_so_many_passages_evenly_spread() -> None:
    turns = [f"{'Ana' if n % 2 else 'Ben'}: turn {n}" for n in range(1000)]
    found = passages("\n".join(turns))
    stride = 8  # 995 starts over at most 128 passages
    assert MAX_PASSAGES == 128 and len(found) == 125
    assert found[0].startswith("Ben: turn 0\n") and found[1].startswith("Ben: turn 8\n")
    assert found[-1].startswith(f"Ben: turn {124 * stride}\n")
    at_the_limit = [f"{'Ana' if n % 2 else 'Ben'}: turn {n}" for n in range(128 + 5)]
    assert len(passages("\n".join(at_the_limit))) == 128
