"""Turns found in their context (issue 26 item 3): the drawers of one room filed with one
`source.uri` are a conversation, and the lexical index holds each with the turn before it.

In-process, on the real engine and the real indexes (`tests.support.search_palace`); the
figures on the conversational benchmark are in docs/retrieval.md, "Turns in their context".
"""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from palace.filing import Filing
from palace.search.turns import Place, chunk_index, conversation, in_order, to_index
from tests.support.clock import Clock
from tests.support.search_palace import CTX, SearchPalace, instant

CHAT = "chat://lisbon"


@pytest.fixture
def palace(tmp_path: Path) -> Iterator[SearchPalace]:
    opened = SearchPalace(tmp_path, Clock(instant(400)))
    yield opened
    opened.close()


def say(
    palace: SearchPalace, minute: int, text: str, *, uri: str = CHAT, room: str = "chats"
) -> dict[str, Any]:
    """A turn of a conversation at `minute` past the first day."""
    return palace.file(
        "friends", room, text, valid_from=instant(1 + minute / 1440), uri=uri, kind="transcript"
    )


def lexical(palace: SearchPalace, text: str) -> list[str]:
    return palace.ids(q=text, ranking="lexical", wing="friends")


# The place of a turn --------------------------------------------------------------------------


def order(minute: int, drawer_id: str, chunk: int = -1) -> tuple[tuple[int, int, int, str], str]:
    return (minute, 0, chunk, drawer_id), drawer_id


def test_a_conversation_is_one_room_and_one_uri() -> None:
    assert conversation("room-1", "chat://a") == ("room-1", "chat://a")
    assert conversation("room-1", None) is None
    assert conversation("room-1", "") is None


def test_a_chunk_index_is_read_from_the_origin_or_is_minus_one() -> None:
    assert chunk_index({"chunk": 3}) == 3
    assert chunk_index(2) == 2
    assert chunk_index({"document": "x"}) == -1
    assert chunk_index(None) == -1
    assert chunk_index(True) == -1


def test_a_changed_turn_is_indexed_again_with_the_turns_on_each_side() -> None:
    members = [order(3, "c"), order(1, "a"), order(2, "b"), order(4, "d")]
    assert to_index(members, {"b"}) == {
        "a": Place(None, True),
        "b": Place("a", True),
        "c": Place("b", True),
    }
    assert to_index(members, {"d"}) == {"c": Place("b", True), "d": Place("c", False)}
    assert to_index(members, {"gone"}) == {}


def test_equal_instants_are_ordered_by_chunk_then_id() -> None:
    members = [order(1, "z", chunk=0), order(1, "a", chunk=1), order(1, "m")]
    assert to_index(members, {"z"}) == {
        "m": Place(None, True),
        "z": Place("m", True),
        "a": Place("z", False),
    }


def test_a_rebuild_places_every_turn_of_a_conversation() -> None:
    turns = [{"id": i, "order": (n, 0, -1, i)} for n, i in ((2, "b"), (1, "a"), (3, "c"))]
    placed = [
        (turn["id"], before and before["id"], answered)
        for turn, before, answered in in_order(turns)
    ]
    assert placed == [("a", None, True), ("b", "a", True), ("c", "b", False)]


# Search ---------------------------------------------------------------------------------------


def chat(palace: SearchPalace) -> dict[str, str]:
    lines = {
        "hi": "Melanie: hi all",
        "weekend": "Caroline: hey! how was the weekend?",
        "garden": "Melanie: quiet, mostly gardening",
        "question": "Melanie: which hotel did you book in Lisbon?",
        "answer": "Caroline: the Avenida Palace, right by the square",
        "nice": "Melanie: nice",
        "bye": "Caroline: I have to run, talk soon",
    }
    return {
        key: say(palace, minute, text)["id"] for minute, (key, text) in enumerate(lines.items())
    }


def test_a_question_in_the_turn_before_finds_the_answer_first(palace: SearchPalace) -> None:
    turns = chat(palace)
    # None of these words is in the answer's own text.
    assert lexical(palace, "which hotel did you book in Lisbon")[:2] == [
        turns["answer"],
        turns["question"],
    ]
    assert lexical(palace, "Lisbon hotel")[:2] == [turns["answer"], turns["question"]]


def test_the_turn_before_counts_less_than_a_turns_own_words(palace: SearchPalace) -> None:
    turns = chat(palace)
    # "gardening" is Melanie's own turn; the turn after it holds it only as its context.
    assert lexical(palace, "gardening")[:2] == [turns["garden"], turns["question"]]


def test_without_a_uri_drawers_are_no_conversation(palace: SearchPalace) -> None:
    palace.file("friends", "notes", "which hotel did you book in Lisbon?", valid_from=instant(1))
    alone = palace.file("friends", "notes", "the Avenida Palace", valid_from=instant(2))
    assert alone["id"] not in lexical(palace, "Lisbon hotel")


def test_one_uri_in_two_rooms_is_two_conversations(palace: SearchPalace) -> None:
    say(palace, 0, "Melanie: which hotel did you book in Lisbon?", room="trips")
    other = say(palace, 1, "Caroline: the Avenida Palace", room="hotels")
    assert other["id"] not in lexical(palace, "Lisbon hotel")


def test_a_turn_filed_late_between_two_others_changes_the_one_after_it(
    palace: SearchPalace,
) -> None:
    first = say(palace, 0, "Melanie: morning")
    answer = say(palace, 10, "Caroline: the Avenida Palace")
    assert lexical(palace, "Lisbon hotel") == []
    question = say(palace, 5, "Melanie: which hotel did you book in Lisbon?")
    assert lexical(palace, "Lisbon hotel") == [answer["id"], question["id"]]
    assert first["id"] not in lexical(palace, "morning")[1:]


def test_deleting_the_turn_before_takes_its_words_from_the_turn_after(
    palace: SearchPalace,
) -> None:
    turns = chat(palace)
    palace.hierarchy.delete_drawer(CTX, "friends", "chats", turns["question"])
    assert lexical(palace, "Lisbon hotel") == []
    # The answer now follows Melanie's gardening, which the question followed before.
    assert lexical(palace, "gardening") == [turns["garden"], turns["answer"]]


def test_deleting_the_answer_makes_the_question_count_whole_again(palace: SearchPalace) -> None:
    question = say(palace, 0, "Melanie: which hotel did you book in Lisbon?")
    answer = say(palace, 1, "Caroline: the Avenida Palace")
    answered = palace.search(q="Lisbon hotel", ranking="lexical")["results"]
    assert [hit["id"] for hit in answered] == [answer["id"], question["id"]]
    palace.hierarchy.delete_drawer(CTX, "friends", "chats", answer["id"])
    alone = palace.search(q="Lisbon hotel", ranking="lexical")["results"]
    assert [hit["id"] for hit in alone] == [question["id"]]
    assert alone[0]["score"] > answered[1]["score"]


def test_a_rebuilt_index_answers_as_the_followed_one(palace: SearchPalace) -> None:
    turns = chat(palace)
    late = say(palace, 3, "Caroline: did you try the pastel de nata?")
    queries = ["Lisbon hotel", "gardening", "weekend", "pastel", "square", "run"]
    followed = {q: palace.search(q=q, ranking="lexical")["results"] for q in queries}
    assert followed["gardening"][0]["id"] == turns["garden"]
    assert late["id"] in [hit["id"] for hit in followed["pastel"]]
    palace.close_indexes()
    shutil.rmtree(palace.directory / "lexical")
    palace.reopen_indexes()
    rebuilt = {q: palace.search(q=q, ranking="lexical")["results"] for q in queries}
    assert {
        q: [(h["id"], pytest.approx(h["score"])) for h in hits] for q, hits in rebuilt.items()
    } == {q: [(h["id"], h["score"]) for h in hits] for q, hits in followed.items()}


def test_turns_whose_places_cannot_be_read_are_indexed_without_them(
    palace: SearchPalace, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def unreadable(keys: list[tuple[str, str]]) -> list[list[dict[str, object]]]:
        raise ValueError("an odd record")

    monkeypatch.setattr(palace.indexes._repository, "conversations", unreadable)
    say(palace, 0, "Melanie: which hotel did you book in Lisbon?")
    answer = say(palace, 1, "Caroline: the Avenida Palace")
    assert lexical(palace, "Avenida") == [answer["id"]]
    assert answer["id"] not in lexical(palace, "Lisbon hotel")
    assert palace.indexes.status()["skipped"] >= 1
    assert "turns indexed without their context" in caplog.text


# Dates ------------------------------------------------------------------------------------------


def test_a_month_in_the_query_prefers_what_was_said_that_month(palace: SearchPalace) -> None:
    """The month and year a drawer's validity starts in count as half a word of it."""
    january = instant(0)  # the tests' epoch: 2025-01-01
    said = {
        month: palace.file(
            "friends",
            "notes",
            f"Omar: the landlord raised the rent again ({month})",
            valid_from=january + dt.timedelta(days=days),
        )["id"]
        for month, days in (("a", 10), ("b", 130), ("c", 250))
    }
    assert lexical(palace, "landlord in May")[:1] == [said["b"]]
    assert lexical(palace, "landlord in September 2025")[:1] == [said["c"]]
    assert lexical(palace, "landlord in January")[:1] == [said["a"]]
    # August is no drawer's month: the drawers are found by their words alone.
    assert set(lexical(palace, "landlord in August")) == set(said.values())


def test_chunks_filed_together_are_ordered_by_their_place_in_the_document(
    palace: SearchPalace,
) -> None:
    """A mined document's chunks share a uri, a validity start and (filed in one batch) an
    instant of filing: their index in the document orders them."""
    texts = {
        0: "the importer reads the nightly export from the bucket",
        1: "then it rewrites the ledger rows in one transaction",
        2: "and finally posts a summary to the finance channel",
    }
    source = {"kind": "file", "uri": "file:///docs/importer.md"}
    filed = palace.file_many(
        [
            (
                "work",
                "docs",
                Filing(
                    content=texts[index],
                    source={**source, "origin": {"chunk": index}},
                    valid_from=instant(1),
                ),
            )
            for index in (2, 0, 1)  # filed out of order
        ]
    )
    ids = {index: drawer["id"] for index, drawer in zip((2, 0, 1), filed, strict=True)}
    assert {drawer["created_at"] for drawer in filed} == {filed[0]["created_at"]}
    # Each chunk is indexed after the chunk before it in the document.
    found = palace.ids(q="bucket", ranking="lexical", wing="work")
    assert found == [ids[0], ids[1]]
    assert palace.ids(q="ledger transaction", ranking="lexical", wing="work") == [ids[1], ids[2]]
