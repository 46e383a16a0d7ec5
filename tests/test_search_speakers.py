"""The semantic leg's question without the names that speak throughout the scope's
conversations (`palace.search.speakers`, docs/retrieval.md "Names in the question"): who speaks
in a drawer, how the catalog counts them by wing and conversation, and, on a real daemon whose
embedding command logs what it is asked, the text the query is embedded as."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from palace.search.catalog import Catalog
from palace.search.scope import OPEN
from palace.search.speakers import THROUGHOUT, voices, without
from tests.support.daemon import Daemon
from tests.support.embed_stub import stub_argv, stub_calls
from tests.support.waits import wait_for


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("Priya: sold the Fiat\nOmar: nice\nPriya: got a Vespa", ("priya", "omar")),
        ("Diego: wow", ("diego",)),
        (
            "[2026-01-31 12:00 UTC] user: fix the build\n[2026-01-31 12:01 UTC] assistant: done",
            (
                "user",
                "assistant",
            ),
        ),
        ("The deploy runs on Fridays.\nDiego: not this one", ()),
        ("", ()),
    ],
)
def test_a_drawers_voices_are_the_labels_of_its_turns(
    content: str, expected: tuple[str, ...]
) -> None:
    assert voices(content) == expected


@pytest.mark.parametrize(
    ("text", "names", "expected"),
    [
        ("What does Priya get around in now?", {"priya"}, "What does get around in now?"),
        ("What is Leila's usual coffee order?", {"leila"}, "What is usual coffee order?"),
        ("What is Leila\u2019s job?", {"leila"}, "What is job?"),
        ("Did PRIYA and omar meet?", {"priya", "omar"}, "Did and meet?"),
        ("What did Priyanka say?", {"priya"}, "What did Priyanka say?"),
        ("What does Priya drive?", set(), "What does Priya drive?"),
        ("Priya?", {"priya"}, "Priya?"),
    ],
)
def test_the_names_are_left_out_as_whole_words(text: str, names: set[str], expected: str) -> None:
    assert without(text, names) == expected


def _drawer(drawer_id: str, wing: str, content: str, uri: str | None = None) -> dict[str, Any]:
    return {
        "id": drawer_id,
        "wing": wing,
        "room": "chat",
        "source_kind": "transcript",
        "valid_from": 1,
        "valid_to": OPEN,
        "chatter": False,
        "tags": [],
        "conversation": None if uri is None else ("chat", uri),
        "voices": voices(content),
    }


def test_the_catalog_counts_conversations_not_drawers() -> None:
    catalog = Catalog()
    # Wing a: two sessions filed whole, and one filed turn by turn (three drawers, one URI).
    catalog.put(_drawer("s1", "a", "Priya: hi\nOmar: hey\nPriya: bye"))
    catalog.put(_drawer("s2", "a", "Omar: hi\nChloe: hey\nOmar: bye"))
    for number, line in enumerate(["Priya: hi", "Chloe: yo", "Priya: ok"]):
        catalog.put(_drawer(f"t{number}", "a", line, uri="conv://a/s3"))
    catalog.put(_drawer("note", "a", "no one speaks here"))
    # Wing b: four conversations of other people.
    for number in range(4):
        catalog.put(_drawer(f"b{number}", "b", "Ana: hi\nBen: hey\nAna: bye"))

    # Priya speaks in 2 of wing a's 3 conversations, Omar in 2, Chloe in 2: the three turns of
    # s3 are one conversation, not three.
    assert catalog.speakers_throughout("a", THROUGHOUT) == {"priya", "omar", "chloe"}
    assert catalog.speakers_throughout("a", 0.9) == set()
    assert catalog.speakers_throughout("b", THROUGHOUT) == {"ana", "ben"}
    assert catalog.speakers_throughout("nowhere", THROUGHOUT) == set()
    # Across the palace Ana and Ben speak in 4 of 7 conversations, the others in 2.
    assert catalog.speakers_throughout(None, THROUGHOUT) == {"ana", "ben"}

    # A drawer changed or removed no longer counts.
    catalog.put(_drawer("s1", "a", "Grace: hi\nHannah: hey\nGrace: bye"))
    catalog.remove("t0")
    catalog.remove("t2")
    assert catalog.speakers_throughout("a", 0.6) == {"chloe"}
    catalog.remove("t1")
    catalog.remove("s2")
    assert catalog.speakers_throughout("a", 1.0) == {"grace", "hannah"}

    restored = Catalog.restore(catalog.state())
    for wing in ("a", "b", None):
        for share in (THROUGHOUT, 1.0):
            assert restored.speakers_throughout(wing, share) == catalog.speakers_throughout(
                wing, share
            )


def test_a_drawer_where_two_or_more_speak_is_a_dialogue() -> None:
    catalog = Catalog()
    catalog.put(_drawer("session", "a", "Priya: hi\nOmar: hey\nPriya: bye"))
    catalog.put(_drawer("monologue", "a", "Priya: hi\nPriya: anyone?"))
    catalog.put(_drawer("turn", "a", "Omar: hey", uri="conv://a/s1"))
    catalog.put(_drawer("note", "a", "no one speaks here"))
    every = ["session", "monologue", "turn", "note", "unknown"]
    assert catalog.dialogues_among(every) == {"session"}
    assert Catalog.restore(catalog.state()).dialogues_among(every) == {"session"}
    catalog.put(_drawer("session", "a", "Priya: it was a note after all"))
    catalog.put(_drawer("note", "a", "Omar: hi\nChloe: hey"))
    catalog.remove("note")
    assert catalog.dialogues_among(every) == set()


# On a real daemon: the query text the embedding command is given.


@pytest.fixture(scope="module")
def stubbed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Daemon, Path]]:
    root = tmp_path_factory.mktemp("speakers")
    stub = root / "stub"
    stub.mkdir()
    argv = ", ".join(f'"{part}"' for part in stub_argv(stub))
    config = root / "config" / "memcastle" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        f"""
[embeddings.profiles.stub]
provider = "command"
command = [{argv}]
model = "stub-model"
dimensions = 4
""",
        encoding="utf-8",
    )
    daemon = Daemon(root, {"MEMCASTLE_EMBEDDINGS_DEFAULT_PROFILE": "stub"}).start()
    yield daemon, stub
    daemon.stop()


@pytest.fixture
def client(stubbed: tuple[Daemon, Path]) -> Iterator[httpx.Client]:
    with stubbed[0].client() as opened:
        yield opened


def _file(client: httpx.Client, wing: str, content: str, uri: str) -> None:
    response = client.post(
        f"/api/wings/{wing}/rooms/chat/drawers",
        json={"content": content, "source": {"kind": "transcript", "uri": uri}},
    )
    assert response.status_code == 201, response.text


def _embedded_as(client: httpx.Client, stub: Path, body: dict[str, Any]) -> list[str]:
    """The texts the command was asked to embed for this one search."""
    before = len(stub_calls(stub))
    response = client.post("/api/search", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["query"] == body["query"]
    return [text for call in stub_calls(stub)[before:] for text in call["texts"]]


def test_the_question_is_embedded_without_the_names_that_speak_throughout(
    client: httpx.Client, stubbed: tuple[Daemon, Path]
) -> None:
    stub = stubbed[1]
    for number in range(3):
        _file(
            client,
            "friends",
            f"Priya: sold the Fiat {number}\nOmar: nice\nPriya: yes",
            f"c/{number}",
        )
    for number in range(4):
        _file(client, "family", f"Ana: hi {number}\nBen: hey\nAna: bye", f"f/{number}")
    question = "What does Priya get around in now?"

    # The drawers' own embedding calls, made in the background, are over before the searches.
    filed = {f"Priya: sold the Fiat {n}\nOmar: nice\nPriya: yes" for n in range(3)}
    filed |= {f"Ana: hi {n}\nBen: hey\nAna: bye" for n in range(4)}
    wait_for(
        lambda: filed <= {text for call in stub_calls(stub) for text in call["texts"]},
        timeout=30,
        what="the drawers embedded",
    )
    in_wing = {"query": question, "filter": {"wing": "friends"}, "ranking": "hybrid"}
    assert _embedded_as(client, stub, in_wing) == ["What does get around in now?"]
    semantic = {**in_wing, "ranking": "semantic"}
    assert _embedded_as(client, stub, semantic) == ["What does get around in now?"]
    # Across the palace Priya speaks in 3 of 7 conversations: her name tells them apart.
    assert _embedded_as(client, stub, {"query": question, "ranking": "hybrid"}) == [question]
    # Omar is no speaker of the family's conversations; Grace of any.
    family = {**in_wing, "filter": {"wing": "family"}, "query": "What does Omar drive?"}
    assert _embedded_as(client, stub, family) == ["What does Omar drive?"]
    other = {**in_wing, "query": "What does Grace drive?"}
    assert _embedded_as(client, stub, other) == ["What does Grace drive?"]
    assert _embedded_as(client, stub, {**in_wing, "ranking": "lexical"}) == []
