"""The derived search indexes follow the store, survive restarts and damage, and never answer
wrongly after either (issue 5 item 7, search.md sections 2-3).

In-process tests run the real SurrealDB engine (surrealkv in a temporary directory), the real
tantivy and numpy indexes and the real `SearchService`, with a clock of their own so validity
instants are exact. The kill -9 tests at the end run a real daemon and search over HTTP.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import pickle
import random
import shutil
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from palace.embeddings.repository import EmbeddingRepository
from palace.filing import Filing
from palace.search import indexes as indexes_module
from palace.search.catalog import Catalog
from palace.search.fusion import LEXICAL_LOW
from palace.search.indexes import IndexesBuilding, SearchIndexes
from palace.search.lexical import SCHEMA_VERSION, LexicalIndex
from palace.search.query import to_ns
from palace.search.repository import SearchRepository
from palace.search.scope import OPEN
from palace.search.service import SearchService
from tests.support.clock import Clock
from tests.support.daemon import Daemon
from tests.support.instants import rfc3339
from tests.support.search_palace import (
    CTX,
    STANDIN,
    SearchPalace,
    external_profile,
    instant,
    ranked,
)
from tests.support.waits import wait_for

REBUILT = "search indexes rebuilt"
DISAGREE = "disagree with the store"
NOW = instant(400)
MICRO = dt.timedelta(microseconds=1)


def unit(*components: float) -> list[float]:
    """An 8-d vector from its first components (the rest zero)."""
    vector = [float(c) for c in components]
    return vector + [0.0] * (8 - len(vector))


@pytest.fixture
def clock() -> Clock:
    return Clock(NOW)


@pytest.fixture
def palace(tmp_path: Path, clock: Clock) -> Iterator[SearchPalace]:
    opened = SearchPalace(tmp_path, clock)
    yield opened
    opened.close()


def semantic(vector: list[float], ranking: str = "semantic", **fields: Any) -> dict[str, Any]:
    """A JSON-form search with the caller's vector in the stand-in profile."""
    return {
        "text": fields.pop("text", "words"),
        "ranking": ranking,
        "profile": STANDIN,
        "query_embedding": vector,
        **fields,
    }


# Following the store ------------------------------------------------------------------------


def test_a_new_drawer_is_found_by_the_very_next_search(palace: SearchPalace) -> None:
    drawer = palace.file("work", "db", "we run the database on postgres", valid_from=instant(1))
    assert palace.ids(q="postgres") == [drawer["id"]]
    palace.attach(drawer["id"], unit(1, 0))
    answer = palace.search_body(semantic(unit(1, 0)))
    assert ranked(answer) == [(drawer["id"], pytest.approx(1.0, abs=1e-6))]


def test_a_supersession_closes_the_old_drawer_in_every_leg(palace: SearchPalace) -> None:
    old = palace.file("work", "db", "we run the database on postgres", valid_from=instant(1))
    palace.attach(old["id"], unit(1, 0))
    at = instant(50)
    new = palace.supersede(old["id"], "we run the database on surrealdb", at)
    assert new is not None
    palace.attach(new["id"], unit(0.8, 0.6))
    palace.clock.set(NOW)

    assert palace.ids(q="database") == [new["id"]]
    assert palace.ids(q="postgres") == []
    assert sorted(palace.ids(q="database", include_historical="true")) == sorted(
        [old["id"], new["id"]]
    )
    assert palace.ids(q="database", as_of=rfc3339(at - MICRO)) == [old["id"]]
    assert palace.ids(q="database", as_of=rfc3339(at)) == [new["id"]]
    for ranking in ("semantic", "hybrid"):
        current = palace.search_body(semantic(unit(1, 0), ranking, text="database"))
        assert [hit["id"] for hit in current["results"]] == [new["id"]]
    # The index holds the closing instant exactly.
    row = palace.indexes.catalog.rows[old["id"]]
    assert int(palace.indexes.catalog.valid_to[row]) == to_ns(at)
    assert int(palace.indexes.catalog.valid_to[palace.indexes.catalog.rows[new["id"]]]) == OPEN


def test_an_invalidated_drawer_is_history_only(palace: SearchPalace) -> None:
    drawer = palace.file("work", "db", "the staging database is mysql", valid_from=instant(1))
    palace.attach(drawer["id"], unit(0, 1))
    palace.supersede(drawer["id"], None, instant(30))
    palace.clock.set(NOW)
    assert palace.ids(q="mysql") == []
    assert palace.search_body(semantic(unit(0, 1)))["results"] == []
    assert palace.ids(q="mysql", include_historical="true") == [drawer["id"]]
    assert palace.ids(q="mysql", as_of=rfc3339(instant(29))) == [drawer["id"]]


def test_a_deleted_drawer_and_its_vector_are_gone(palace: SearchPalace) -> None:
    kept = palace.file("work", "db", "redis caches the sessions", valid_from=instant(1))
    gone = palace.file("work", "db", "redis queues the jobs", valid_from=instant(1))
    palace.attach(kept["id"], unit(1, 1))
    palace.attach(gone["id"], unit(1, 0.9))
    assert sorted(palace.ids(q="redis")) == sorted([kept["id"], gone["id"]])
    palace.hierarchy.delete_drawer(CTX, "work", "db", gone["id"])
    assert palace.ids(q="redis") == [kept["id"]]
    assert palace.ids(q="redis", include_historical="true") == [kept["id"]]
    vectors = palace.search_body(semantic(unit(1, 0.9), limit=10))
    assert [hit["id"] for hit in vectors["results"]] == [kept["id"]]


def test_deleting_a_room_or_a_wing_removes_its_drawers_and_vectors(palace: SearchPalace) -> None:
    kept = palace.file("home", "db", "cascade survivor", valid_from=instant(1))
    in_room = palace.file("work", "ops", "cascade room", valid_from=instant(1))
    in_wing = palace.file("work", "db", "cascade wing", valid_from=instant(1))
    for drawer in (kept, in_room, in_wing):
        palace.attach(drawer["id"], unit(1, 0))
    palace.hierarchy.delete_room(CTX, "work", "ops")
    assert sorted(palace.ids(q="cascade", include_historical="true")) == sorted(
        [kept["id"], in_wing["id"]]
    )
    palace.hierarchy.delete_wing(CTX, "work")
    assert palace.ids(q="cascade", include_historical="true") == [kept["id"]]
    everything = palace.search_body(semantic(unit(1, 0), filter={"temporal": "all"}))
    assert ids_of(everything) == [kept["id"]]


def test_a_replaced_vector_replaces_the_old_one(palace: SearchPalace) -> None:
    first = palace.file("work", "db", "one", valid_from=instant(1))
    second = palace.file("work", "db", "two", valid_from=instant(1))
    palace.attach(first["id"], unit(1, 0))
    palace.attach(second["id"], unit(0.6, 0.8))
    assert ids_of(palace.search_body(semantic(unit(1, 0)))) == [first["id"], second["id"]]
    palace.attach(first["id"], unit(0, 1))
    answer = palace.search_body(semantic(unit(1, 0)))
    assert ranked(answer) == [
        (second["id"], pytest.approx(0.6, abs=1e-6)),
        (first["id"], pytest.approx(0.0, abs=1e-6)),
    ]


def test_the_best_window_of_a_drawer_wins(palace: SearchPalace) -> None:
    """A long text is stored as several windows; its score is its best window's."""
    long = palace.file("work", "db", "a long text", valid_from=instant(1))
    short = palace.file("work", "db", "a short text", valid_from=instant(1))
    palace.attach_windows(long["id"], [unit(0, 1), unit(0.6, 0.8), unit(0, 0, 1)])
    palace.attach(short["id"], unit(0.8, 0.6))
    answer = palace.search_body(semantic(unit(1, 0)))
    assert ranked(answer) == [
        (short["id"], pytest.approx(0.8, abs=1e-6)),
        (long["id"], pytest.approx(0.6, abs=1e-6)),
    ]


def ids_of(answer: dict[str, Any]) -> list[str]:
    return [hit["id"] for hit in answer["results"]]


def test_the_follower_applies_writes_without_a_search(palace: SearchPalace) -> None:
    """Between searches the indexes keep up by themselves (a shared remote store's other
    writers are seen that way): the watermark passes a new write within a deadline."""
    palace.indexes.start_following()
    before = palace.indexes.lexical_mark
    drawer = palace.file("work", "db", "followed in the background", valid_from=instant(1))
    last = palace.store.changes(before + 1, 1000)[-1][0]
    wait_for(
        lambda: palace.indexes.lexical_mark >= last and drawer["id"] in palace.indexes.catalog.rows,
        timeout=10,
        what="the follower to apply the write",
    )
    assert palace.ids(q="background") == [drawer["id"]]


# Vectors the indexes do not take ------------------------------------------------------------


def test_a_record_the_indexes_cannot_take_is_passed_over_not_fatal(
    palace: SearchPalace, caplog: pytest.LogCaptureFixture
) -> None:
    """A drawer row no version of the daemon writes (here, written straight to the store with a
    validity that is no instant) is logged and passed over; the search of everything else goes
    on, the drawers filed after it included."""
    palace.store.query(
        "CREATE type::record('drawer', $id) CONTENT $record",
        {"id": "00000000-0000-4000-8000-000000000bad", "record": {"content": "odd postgres"}},
    )
    later = palace.file("work", "db", "postgres after the odd row", valid_from=instant(1))

    assert palace.ids(q="postgres") == [later["id"]]
    assert "passed over a change" in caplog.text
    assert palace.ids(q="postgres") == [later["id"]], "and the next search, too"
    assert palace.indexes.status()["skipped"] == 1, "the status report counts it"


def test_vectors_of_an_unknown_profile_or_the_wrong_length_are_ignored(
    tmp_path: Path, clock: Clock
) -> None:
    """Only the configured profiles are indexed, and only vectors of their dimensions: a row
    the index cannot compare is left out instead of breaking every semantic search."""
    other = external_profile("other", 4)
    palace = SearchPalace(
        tmp_path, clock, profiles=[external_profile(), other], indexed_profiles={STANDIN: 8}
    )
    try:
        good = palace.file("work", "db", "kept", valid_from=instant(1))
        foreign = palace.file("work", "db", "foreign", valid_from=instant(1))
        short = palace.file("work", "db", "short", valid_from=instant(1))
        palace.attach(good["id"], unit(1, 0))
        palace.attach(foreign["id"], [1.0, 0.0, 0.0, 0.0], profile="other")
        # A row of the stand-in profile with 5 numbers, written past the service's check.
        EmbeddingRepository(palace.store).put(
            [(short["id"], np.ones((1, 5), dtype=np.float32))],
            STANDIN,
            external_profile().provenance(),
            NOW,
        )
        expected = [(good["id"], pytest.approx(1.0, abs=1e-6))]
        assert ranked(palace.search_body(semantic(unit(1, 0)))) == expected
        # One semantic hit and no lexical one: all of the best cosine, at the semantic share.
        assert ranked(palace.search_body(semantic(unit(1, 0), "hybrid", text="zzz"))) == [
            (good["id"], pytest.approx(1.0 - LEXICAL_LOW, abs=1e-6))
        ]
        other_answer = palace.search_body(
            {
                "text": "x",
                "ranking": "semantic",
                "profile": "other",
                "query_embedding": [1, 0, 0, 0],
            }
        )
        assert other_answer["results"] == []
        # The rebuild from the store skips them the same way.
        palace.close_indexes()
        (palace.directory / "snapshot.pickle").unlink()
        palace.reopen_indexes()
        assert ranked(palace.search_body(semantic(unit(1, 0)))) == expected
    finally:
        palace.close()


# Ties -------------------------------------------------------------------------------------------


def test_equal_lexical_scores_rank_by_id_also_at_the_cut(palace: SearchPalace) -> None:
    """More tied drawers than the leg fetches at first: the cut is still by id."""
    drawers = [
        palace.file("work", "ties", f"tie word{number:03d}", valid_from=instant(1))
        for number in range(90)
    ]
    ids = sorted(drawer["id"] for drawer in drawers)
    for limit in (1, 5, 10, 60, 200):
        answer = palace.search(q="tie", limit=str(limit))
        assert ids_of(answer) == ids[:limit]
        assert len({hit["score"] for hit in answer["results"]}) == 1


def test_equal_similarities_rank_by_id_also_at_the_cut(palace: SearchPalace) -> None:
    drawers = [palace.file("work", "ties", f"vector {n}", valid_from=instant(1)) for n in range(40)]
    for drawer in drawers:
        palace.attach(drawer["id"], unit(0.6, 0.8))
    ids = sorted(drawer["id"] for drawer in drawers)
    for limit in (1, 3, 10, 40):
        answer = palace.search_body(semantic(unit(1, 0), limit=limit))
        assert ids_of(answer) == ids[:limit]


def test_identical_vectors_tie_exactly_and_rank_by_id(palace: SearchPalace) -> None:
    """The same text embedded twice (a copy in another room, a re-filed note) gives the same
    vector: its drawers must score exactly the same and rank by id, in every scope. A score
    that depends on where a row sits in the matrix product would order them by that instead."""
    rng = random.Random(7)
    profile = palace.embeddings.profile(STANDIN)
    twin = palace.embeddings.check_vector(profile, [rng.gauss(0, 1) for _ in range(8)], "twin")
    filed = palace.file_many(
        [
            (
                "work",
                f"r{number % 5}",
                Filing(
                    content=f"filler {number}",
                    tags=["t"] if number % 4 == 0 else [],
                    valid_from=instant(1),
                    keep_copy=True,
                ),
            )
            for number in range(190)
        ]
    )
    twins = {drawer["id"] for number, drawer in enumerate(filed) if number % 20 == 0}
    vectors = {
        drawer["id"]: (
            twin
            if drawer["id"] in twins
            else palace.embeddings.check_vector(
                profile, [rng.gauss(0, 1) for _ in range(8)], "other"
            )
        )[None, :]
        for drawer in filed
    }
    palace.embeddings.store_vectors(profile, vectors)
    scopes: list[dict[str, Any]] = [{}, {"tags": ["t"]}, {"wing": "work", "room": "r0"}]
    broken = []
    for _ in range(20):
        query = [rng.gauss(0, 1) for _ in range(8)]
        for scope in scopes:
            answer = palace.search_body(semantic(query, limit=200, filter=scope))
            tied = [(hit["id"], hit["score"]) for hit in answer["results"] if hit["id"] in twins]
            assert len(tied) == len(twins), "every scope holds every twin, within the limit"
            if len({score for _, score in tied}) != 1 or [i for i, _ in tied] != sorted(
                i for i, _ in tied
            ):
                broken.append((scope, tied))
    assert not broken, f"{len(broken)} of 60 searches: {broken[0]}"


def test_equal_fused_scores_rank_by_id(palace: SearchPalace) -> None:
    """Five drawers the lexical leg scores alike (same words, each in a room of its own) and
    five the semantic leg scores alike (same vector) make two runs of equal fused scores: each
    run is ordered by id."""
    worded = [
        palace.file("work", f"ties-{rank}", "kiwi pad", valid_from=instant(1)) for rank in range(5)
    ]
    vectored = []
    for rank in range(5):
        drawer = palace.file("work", "ties", f"plain {rank}", valid_from=instant(1))
        palace.attach(drawer["id"], unit(1, 0))
        vectored.append(drawer)
    answer = palace.search_body(semantic(unit(1, 0), "hybrid", text="kiwi"))
    runs = [sorted(d["id"] for d in worded), sorted(d["id"] for d in vectored)]
    assert ids_of(answer) == runs[0] + runs[1]
    scores = [hit["score"] for hit in answer["results"]]
    assert len(set(scores[:5])) == len(set(scores[5:])) == 1 and scores[0] > scores[5]


# Validity at the exact boundaries ------------------------------------------------------------


@pytest.fixture(scope="module")
def boundary(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SearchPalace, str, str]]:
    """`old` valid [day 10, day 20), `new` from day 20 on, both with the word and a vector.
    The tests only read it, so they share it."""
    palace = SearchPalace(tmp_path_factory.mktemp("boundary"), Clock(NOW))
    old = palace.file("work", "db", "boundary database", valid_from=instant(10))
    palace.attach(old["id"], unit(1, 0))
    new = palace.supersede(old["id"], "boundary database again", instant(20))
    assert new is not None
    palace.attach(new["id"], unit(0.8, 0.6))
    palace.clock.set(NOW)
    yield palace, old["id"], new["id"]
    palace.close()


def _boundary_cases() -> list[tuple[str, Any, str]]:
    micro = MICRO
    t0, t1 = instant(10), instant(20)
    return [
        ("as_of", t1, "new"),
        ("as_of", t1 - micro, "old"),
        ("as_of", t0, "old"),
        ("as_of", t0 - micro, ""),
        ("between", (t1, t1 + dt.timedelta(days=1)), "new"),  # old closed exactly at from
        ("between", (instant(0), t1), "old"),  # new opened exactly at until
        ("between", (instant(0), t0), ""),  # old opened exactly at until
        ("between", (t1 - micro, t1), "old"),
        ("between", (t1, t1 + micro), "new"),
        ("between", (t1 - micro, t1 + micro), "old new"),
        ("between", (t0 - micro, t0 + micro), "old"),
    ]


@pytest.mark.parametrize("ranking", ["lexical", "semantic", "hybrid"])
@pytest.mark.parametrize(("kind", "when", "expected"), _boundary_cases())
def test_validity_is_half_open_at_the_exact_boundaries(
    boundary: tuple[SearchPalace, str, str], ranking: str, kind: str, when: Any, expected: str
) -> None:
    palace, old, new = boundary
    names = {old: "old", new: "new"}
    if kind == "as_of":
        temporal: Any = {"as_of": rfc3339(when)}
        flat = {"as_of": rfc3339(when)}
    else:
        temporal = {"between": {"from": rfc3339(when[0]), "until": rfc3339(when[1])}}
        flat = {"from": rfc3339(when[0]), "until": rfc3339(when[1])}
    body: dict[str, Any] = {"text": "boundary database", "filter": {"temporal": temporal}}
    if ranking == "lexical":
        body["ranking"] = "lexical"
        found_flat = palace.ids(q="boundary database", ranking="lexical", **flat)
        assert sorted(names[i] for i in found_flat) == sorted(expected.split())
    else:
        body.update(semantic(unit(1, 0), ranking, text="boundary database"))
    found = ids_of(palace.search_body(body))
    assert sorted(names[i] for i in found) == sorted(expected.split())


# Reopening and damage -------------------------------------------------------------------------


def _battery(palace: SearchPalace) -> list[tuple[str, dict[str, Any]]]:
    """Searches over every leg, scope and time, to compare answers before and after."""
    bodies: list[dict[str, Any]] = [
        {"text": "database"},
        {"text": "database postgres", "limit": 3},
        {"text": "postgres redis"},  # no drawer holds both: any word
        {"text": "cache", "filter": {"temporal": "all"}},
        {"text": "database", "filter": {"temporal": {"as_of": rfc3339(instant(15))}}},
        {
            "text": "database",
            "filter": {
                "temporal": {
                    "between": {"from": rfc3339(instant(5)), "until": rfc3339(instant(60))}
                }
            },
        },
        {"text": "database", "filter": {"wing": "work", "tags": ["ops"]}},
        {"text": "database", "filter": {"source_kind": "note"}},
        {"text": "database", "filter": {"wing": "home", "room": "db"}},
    ]
    for ranking in ("semantic", "hybrid"):
        for vector in (unit(1, 0), unit(0.2, 0.3, 0.9)):
            bodies.append(semantic(vector, ranking, text="database cache", limit=7))
            bodies.append(
                semantic(
                    vector, ranking, text="database", filter={"temporal": "all", "wing": "work"}
                )
            )
    return [(json.dumps(body, sort_keys=True), body) for body in bodies]


def answers(palace: SearchPalace) -> dict[str, list[tuple[str, float, dict[str, float]]]]:
    return {
        key: [
            (hit["id"], hit["score"], hit.get("signals", {}))
            for hit in palace.search_body(body)["results"]
        ]
        for key, body in _battery(palace)
    }


def fill(palace: SearchPalace, start: int, count: int) -> list[dict[str, Any]]:
    """Drawers of both wings with tags, kinds, vectors and a supersession now and then."""
    rng = random.Random(start)
    words = ["database", "postgres", "redis", "cache", "queue", "deploy", "backup", "index"]
    filed = []
    for number in range(start, start + count):
        content = " ".join(rng.choice(words) for _ in range(rng.randint(2, 7))) + f" n{number}"
        drawer = palace.file(
            rng.choice(["work", "home"]),
            rng.choice(["db", "ops"]),
            content,
            tags=rng.sample(["ops", "db", "old"], rng.randint(0, 2)),
            kind=rng.choice(["manual", "note", "file"]),
            valid_from=instant(rng.randint(0, 30), micros=number + 1),
        )
        palace.attach(drawer["id"], [rng.uniform(-1, 1) for _ in range(8)])
        filed.append(drawer)
        if number % 5 == 4:
            replacement = palace.supersede(
                drawer["id"], content + " replaced", instant(40 + number, micros=7)
            )
            assert replacement is not None
            palace.attach(replacement["id"], [rng.uniform(-1, 1) for _ in range(8)])
            palace.clock.set(NOW)
    return filed


@pytest.fixture(scope="module")
def filled_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A filled palace, closed: each test gets a copy of its directory."""
    root = tmp_path_factory.mktemp("filled")
    palace = SearchPalace(root, Clock(NOW))
    fill(palace, 0, 30)
    palace.close()
    return root


@pytest.fixture
def filled(filled_template: Path, tmp_path: Path) -> Iterator[SearchPalace]:
    root = tmp_path / "filled"
    shutil.copytree(filled_template, root)
    palace = SearchPalace(root, Clock(NOW))
    yield palace
    palace.close()


def rebuilt(caplog: pytest.LogCaptureFixture) -> bool:
    return any(REBUILT in record.getMessage() for record in caplog.records)


def test_a_reopen_resumes_from_the_watermark(
    filled: SearchPalace, caplog: pytest.LogCaptureFixture
) -> None:
    before = answers(filled)
    filled.close_indexes()
    mark = json.loads((filled.directory / "lexical.json").read_text())
    assert mark["version"] == SCHEMA_VERSION
    assert filled.store.changes(mark["watermark"] + 1, 10) == [], "the watermark is the feed's end"
    with caplog.at_level(logging.INFO, logger="palace.search.indexes"):
        filled.reopen_indexes()
    assert not rebuilt(caplog), "nothing was missing: nothing is rebuilt"
    assert filled.indexes.lexical_mark == mark["watermark"]
    assert answers(filled) == before


def test_an_index_tantivy_cannot_commit_to_is_read_again_from_the_store(
    filled: SearchPalace, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kill in the middle of a commit can leave a file the next commit wants to create:
    tantivy then refuses every commit ("FileAlreadyExists", found by bench/chaos.py --remote,
    where the daemon could not start again). The daemon reads the index again instead."""
    filled.close_indexes()
    fill(filled, 100, 3)
    commit = LexicalIndex.commit
    refused: list[bool] = []

    def refuse_once(index: LexicalIndex) -> bool:
        if not refused:
            refused.append(True)
            raise ValueError('Failed to open file for write: FileAlreadyExists("x.del")')
        return commit(index)

    monkeypatch.setattr(LexicalIndex, "commit", refuse_once)
    with caplog.at_level(logging.WARNING, logger="palace.search.indexes"):
        filled.reopen_indexes()
    assert any("could not be written" in record.getMessage() for record in caplog.records)
    assert filled.ids(q="n101") != []
    assert answers(filled) == _fresh_answers(filled)


def test_a_change_written_while_closed_is_seen_after_reopen(
    filled: SearchPalace, caplog: pytest.LogCaptureFixture
) -> None:
    filled.close_indexes()
    # The drawers the first fill wrote are still there; write more and change some.
    added = fill(filled, 100, 10)
    victim = added[0]
    filled.hierarchy.delete_drawer(CTX, *_place(filled, victim), victim["id"])
    retired = added[1]
    filled.supersede(retired["id"], None, instant(300))
    filled.clock.set(NOW)
    with caplog.at_level(logging.INFO, logger="palace.search.indexes"):
        filled.reopen_indexes()
    assert not rebuilt(caplog)
    assert filled.ids(q="n102") == [added[2]["id"]]
    assert filled.ids(q="n100", include_historical="true") == []
    assert filled.ids(q="n101") == []
    assert filled.ids(q="n101", include_historical="true") == [retired["id"]]
    reference = _fresh_answers(filled)
    assert answers(filled) == reference


def _place(palace: SearchPalace, drawer: dict[str, Any]) -> tuple[str, str]:
    wing = palace.store.one(
        "SELECT VALUE name FROM ONLY type::record('wing', $w)", {"w": drawer["wing"]}
    )
    room = palace.store.one(
        "SELECT VALUE name FROM ONLY type::record('room', $r)", {"r": drawer["room"]}
    )
    return wing, room


def _fresh_answers(palace: SearchPalace) -> dict[str, Any]:
    """The answers of indexes rebuilt from nothing, in another directory: the reference."""
    reference = SearchIndexes(
        SearchRepository(palace.store), palace.root / "reference", palace.indexed_profiles
    )
    reference.open()
    current, palace.indexes = palace.indexes, reference
    service = palace.service
    palace.service = SearchService(
        palace.hierarchy, reference, palace.embeddings, palace.graph, clock=palace.clock
    )
    try:
        return answers(palace)
    finally:
        reference.close()
        palace.indexes, palace.service = current, service


def _garbage(path: Path) -> None:
    path.write_bytes(b"\x00garbage\xff" * 10)


def _truncate_all(directory: Path, keep: tuple[str, ...] = ("meta.json",)) -> None:
    for path in directory.iterdir():
        if path.is_file() and path.name not in keep and not path.name.startswith("."):
            data = path.read_bytes()
            path.write_bytes(data[: len(data) // 2])


def _delete_segment_file(directory: Path, suffix: str) -> None:
    victims = sorted(directory.glob(f"*{suffix}"))
    assert victims, f"no {suffix} file in the lexical index"
    victims[0].unlink()


def _write_mark(directory: Path, **mark: Any) -> None:
    (directory / "lexical.json").write_text(json.dumps(mark))


def _rewrite_snapshot(directory: Path, change: Callable[[dict[str, Any]], None]) -> None:
    path = directory / "snapshot.pickle"
    state = pickle.loads(path.read_bytes())
    change(state)
    path.write_bytes(pickle.dumps(state))


DAMAGE: dict[str, Callable[[Path], None]] = {
    "lexical dir deleted": lambda d: shutil.rmtree(d / "lexical"),
    "lexical.json deleted": lambda d: (d / "lexical.json").unlink(),
    "lexical.json garbage": lambda d: _garbage(d / "lexical.json"),
    "lexical.json of another version": lambda d: _write_mark(d, version=999, watermark=2**62),
    "lexical.json without a watermark": lambda d: _write_mark(d, version=SCHEMA_VERSION),
    "lexical.json stale at zero": lambda d: _write_mark(d, version=SCHEMA_VERSION, watermark=0),
    "lexical meta.json garbage": lambda d: _garbage(d / "lexical" / "meta.json"),
    "lexical meta.json deleted": lambda d: (d / "lexical" / "meta.json").unlink(),
    "lexical segments truncated": lambda d: _truncate_all(d / "lexical"),
    "lexical term dictionary deleted": lambda d: _delete_segment_file(d / "lexical", ".term"),
    "lexical postings deleted": lambda d: _delete_segment_file(d / "lexical", ".idx"),
    "snapshot deleted": lambda d: (d / "snapshot.pickle").unlink(),
    "snapshot garbage": lambda d: _garbage(d / "snapshot.pickle"),
    "snapshot truncated": lambda d: (d / "snapshot.pickle").write_bytes(
        (d / "snapshot.pickle").read_bytes()[:200]
    ),
    "snapshot of another version": lambda d: _rewrite_snapshot(
        d, lambda state: state.update(version=999)
    ),
    "snapshot of other profiles": lambda d: _rewrite_snapshot(
        d, lambda state: state.update(profiles={"gone": 3})
    ),
    "snapshot stale at zero": lambda d: _rewrite_snapshot(
        d, lambda state: state.update(watermark=0)
    ),
    "everything deleted": lambda d: shutil.rmtree(d),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_indexes_are_rebuilt_and_answer_the_same(
    filled: SearchPalace, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    before = answers(filled)
    filled.close_indexes()
    DAMAGE[damage](filled.directory)
    with caplog.at_level(logging.INFO, logger="palace.search.indexes"):
        filled.reopen_indexes()
    assert answers(filled) == before
    if "stale" not in damage:
        assert rebuilt(caplog), f"{damage}: the index should have been rebuilt"
    # And they go on following the store.
    added = filled.file("work", "db", "database after the damage", valid_from=instant(1))
    assert added["id"] in filled.ids(q="after damage")


def test_a_rebuild_in_pages_reads_every_drawer_and_vector(
    filled: SearchPalace, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Pages far smaller than the palace: the vectors are read by the ids the drawer scan
    found, page by page, and none is missed or read twice."""
    before = answers(filled)
    filled.close_indexes()
    shutil.rmtree(filled.directory)
    monkeypatch.setattr(indexes_module, "SCAN_PAGE", 7)
    with caplog.at_level(logging.INFO, logger="palace.search.indexes"):
        filled.reopen_indexes()
    assert rebuilt(caplog)
    assert answers(filled) == before
    stored = filled.store.one(
        "SELECT count() AS n FROM embedding WHERE profile = $p GROUP ALL", {"p": STANDIN}
    )[0]["n"]
    assert stored > 7 * 3, "the palace spans several pages"
    assert len(filled.indexes.vectors[STANDIN]) == stored


def test_the_vectors_of_drawers_are_read_by_their_ids(filled: SearchPalace) -> None:
    repository = SearchRepository(filled.store)
    ids = [row["id"] for row in repository.drawers(0, 5)]
    rows = repository.vectors(STANDIN, [*ids, "no-such-drawer"])
    assert sorted(row["drawer"] for row in rows) == sorted(ids)
    assert all(row["profile"] == STANDIN for row in rows)
    assert repository.vectors("no-such-profile", ids) == []


class HeldScan:
    """Holds a rebuild at its first page until released, so a test sees it in progress."""

    def __init__(self, indexes: SearchIndexes, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reached = threading.Event()
        self.release = threading.Event()
        scan = indexes._scan

        def held(read: Callable[[int, int], list[dict[str, Any]]]) -> Iterator[Any]:
            self.reached.set()
            assert self.release.wait(timeout=30)
            yield from scan(read)

        monkeypatch.setattr(indexes, "_scan", held)


def _rebuilding(
    filled: SearchPalace, monkeypatch: pytest.MonkeyPatch
) -> tuple[SearchIndexes, HeldScan]:
    """The filled palace's indexes deleted and started as the daemon starts them, with the
    palace counted as large enough to rebuild in the background."""
    filled.close_indexes()
    shutil.rmtree(filled.directory)
    monkeypatch.setattr(indexes_module, "BACKGROUND_REBUILD_DRAWERS", 1)
    indexes = SearchIndexes(
        SearchRepository(filled.store), filled.directory, filled.indexed_profiles
    )
    held = HeldScan(indexes, monkeypatch)
    indexes.start()
    assert held.reached.wait(timeout=30)
    return indexes, held


def test_a_large_rebuild_runs_while_the_daemon_serves(
    filled: SearchPalace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`start` returns at once; meanwhile search is refused (never a partial answer) and the
    status says how far the rebuild got; then search answers as before."""
    before = answers(filled)
    indexes, held = _rebuilding(filled, monkeypatch)
    filled.indexes = indexes
    filled.service = SearchService(
        filled.hierarchy, indexes, filled.embeddings, filled.graph, clock=filled.clock
    )
    assert indexes.ready is False
    total = filled.hierarchy.drawer_total()
    assert indexes.status() == {"state": "rebuilding", "drawers_read": 0, "of": total}
    with pytest.raises(IndexesBuilding) as refused:
        filled.search_body(semantic(unit(1, 0)))
    assert refused.value.status == 503
    assert refused.value.code == "memcastle::search::indexing"
    held.release.set()
    wait_for(lambda: indexes.ready, timeout=30, what="the rebuild to finish")
    assert answers(filled) == before
    assert indexes.status()["state"] == "ready"


def test_a_large_palace_gives_back_the_engines_memory_once_its_indexes_are_open(
    filled: SearchPalace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening a large palace reads every drawer, which the embedded engine would hold for
    the daemon's life: the engine is opened again once, before search answers, and then
    answers as before."""
    before = answers(filled)
    filled.close_indexes()
    monkeypatch.setattr(indexes_module, "BACKGROUND_REBUILD_DRAWERS", 1)
    released: list[bool] = []
    release = SearchRepository.release_memory

    def counted(repository: SearchRepository) -> None:
        released.append(indexes.ready)
        release(repository)

    monkeypatch.setattr(SearchRepository, "release_memory", counted)
    indexes = SearchIndexes(
        SearchRepository(filled.store), filled.directory, filled.indexed_profiles
    )
    indexes.start()
    filled.indexes = indexes
    filled.service = SearchService(
        filled.hierarchy, indexes, filled.embeddings, filled.graph, clock=filled.clock
    )
    wait_for(lambda: indexes.ready, timeout=30, what="the indexes to open")
    assert released == [False]
    assert answers(filled) == before


def test_a_rebuild_stopped_with_the_daemon_is_done_again_at_the_next_start(
    filled: SearchPalace, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = answers(filled)
    indexes, held = _rebuilding(filled, monkeypatch)
    closing = threading.Thread(target=indexes.close)
    closing.start()
    held.release.set()
    closing.join(timeout=30)
    assert not closing.is_alive(), "close does not wait for the whole rebuild"
    assert not (filled.directory / "snapshot.pickle").exists(), "a partial rebuild is not saved"
    filled.reopen_indexes()
    assert answers(filled) == before


class HeldFeed:
    """Holds the indexes' first read of the change feed until released."""

    def __init__(self, store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reached = threading.Event()
        self.release = threading.Event()
        changes = store.changes

        def held(since: int, limit: int) -> Any:
            self.reached.set()
            assert self.release.wait(timeout=30)
            return changes(since, limit)

        monkeypatch.setattr(store, "changes", held)


def _left_behind(filled: SearchPalace, tmp_path: Path) -> dict[str, Any]:
    """Drawers written after a copy of the indexes was taken, then that copy put back (a
    backup restored, a bulk load while no daemon followed the store); the answers of indexes
    that kept up."""
    filled.close_indexes()
    backup = tmp_path / "behind"
    shutil.copytree(filled.directory, backup)
    filled.reopen_indexes()
    fill(filled, 200, 12)
    before = answers(filled)
    filled.close_indexes()
    shutil.rmtree(filled.directory)
    shutil.copytree(backup, filled.directory)
    return before


def _started_large(filled: SearchPalace, monkeypatch: pytest.MonkeyPatch) -> SearchIndexes:
    """The indexes started as the daemon starts them, the palace counted as large."""
    monkeypatch.setattr(indexes_module, "BACKGROUND_REBUILD_DRAWERS", 1)
    indexes = SearchIndexes(
        SearchRepository(filled.store), filled.directory, filled.indexed_profiles
    )
    filled.indexes = indexes
    filled.service = SearchService(
        filled.hierarchy, indexes, filled.embeddings, filled.graph, clock=filled.clock
    )
    return indexes


def test_a_large_palace_a_little_behind_catches_up_before_start_returns(
    filled: SearchPalace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _left_behind(filled, tmp_path)
    indexes = _started_large(filled, monkeypatch)
    indexes.start()
    assert indexes.ready is True
    assert answers(filled) == before


def test_a_large_palace_far_behind_catches_up_while_the_daemon_serves(
    filled: SearchPalace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`start` waits `START_CATCH_UP_SECS` at most; then search is refused (never an answer
    from indexes that lag) and the status says so, until the catch-up is done."""
    before = _left_behind(filled, tmp_path)
    monkeypatch.setattr(indexes_module, "START_CATCH_UP_SECS", 0.2)
    indexes = _started_large(filled, monkeypatch)
    held = HeldFeed(filled.store, monkeypatch)
    started = time.monotonic()
    indexes.start()
    assert time.monotonic() - started < 10
    assert held.reached.is_set()
    assert indexes.ready is False
    assert indexes.status() == {"state": "catching_up", "changes_read": 0}
    with pytest.raises(IndexesBuilding) as refused:
        filled.search_body(semantic(unit(1, 0)))
    assert refused.value.code == "memcastle::search::indexing"
    assert "catching up" in refused.value.message
    held.release.set()
    wait_for(lambda: indexes.ready, timeout=30, what="the catch-up to finish")
    assert answers(filled) == before
    assert indexes.status()["state"] == "ready"


def test_a_catch_up_stopped_with_the_daemon_goes_on_at_the_next_start(
    filled: SearchPalace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _left_behind(filled, tmp_path)
    monkeypatch.setattr(indexes_module, "START_CATCH_UP_SECS", 0.2)
    indexes = _started_large(filled, monkeypatch)
    held = HeldFeed(filled.store, monkeypatch)
    indexes.start()
    closing = threading.Thread(target=indexes.close)
    closing.start()
    held.release.set()
    closing.join(timeout=30)
    assert not closing.is_alive(), "close does not wait for the whole catch-up"
    monkeypatch.undo()
    filled.reopen_indexes()
    assert answers(filled) == before


def test_searches_go_on_while_a_snapshot_is_written(
    palace: SearchPalace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A due snapshot is taken under the indexes' lock and written outside it: a search does
    not wait for the write (14.8 s at a million drawers, docs/benchmarks.md), and the file
    holds the indexes as they were when it was taken."""
    first = palace.file("work", "db", "we run the database on postgres", valid_from=instant(1))
    assert palace.ids(q="postgres") == [first["id"]]
    writing, release = threading.Event(), threading.Event()
    write = indexes_module._write_atomically

    def held(path: Path, data: bytes) -> None:
        if path.name == "snapshot.pickle":
            writing.set()
            assert release.wait(30), "the test never let the snapshot be written"
        write(path, data)

    monkeypatch.setattr(indexes_module, "_write_atomically", held)
    monkeypatch.setattr(indexes_module, "SNAPSHOT_EVERY_CHANGES", 1)
    second = palace.file("work", "db", "the cache is redis", valid_from=instant(2))
    saver = threading.Thread(target=palace.indexes.refresh)
    saver.start()
    assert writing.wait(30), "no snapshot was due"
    third = palace.file("work", "db", "the queue is kafka", valid_from=instant(3))
    answered: list[list[str]] = []
    searcher = threading.Thread(target=lambda: answered.append(palace.ids(q="kafka")))
    searcher.start()
    searcher.join(10)
    release.set()
    saver.join(30)
    assert answered == [[third["id"]]], "the search waited for the snapshot"
    state = pickle.loads((palace.directory / "snapshot.pickle").read_bytes())
    assert {first["id"], second["id"]} <= set(state["catalog"]["ids"])
    assert third["id"] not in state["catalog"]["ids"]


def test_a_stale_copy_of_the_whole_directory_catches_up(
    filled: SearchPalace, tmp_path: Path
) -> None:
    """Indexes from an earlier point (a backup, or a crash long after the last snapshot) are
    brought forward from their watermarks: same answers as indexes that never stopped."""
    before = _left_behind(filled, tmp_path)
    filled.reopen_indexes()
    assert answers(filled) == before


def test_an_older_lexical_watermark_is_read_again_from_the_feed(
    filled: SearchPalace, caplog: pytest.LogCaptureFixture
) -> None:
    """Applying a change twice gives the same index: a watermark behind the index is safe."""
    filled.close_indexes()
    early = json.loads((filled.directory / "lexical.json").read_text())
    filled.reopen_indexes()
    fill(filled, 300, 10)
    before = answers(filled)
    filled.close_indexes()
    (filled.directory / "lexical.json").write_text(json.dumps(early))
    filled.reopen_indexes()
    assert answers(filled) == before


def test_a_hole_the_feed_cannot_fill_is_caught_by_the_count_check(
    filled: SearchPalace, caplog: pytest.LogCaptureFixture
) -> None:
    """When the watermarks are past changes the indexes never saw (a feed that no longer
    reaches back), the drawer count disagrees with the store and everything is rebuilt."""
    filled.close_indexes()
    added = fill(filled, 400, 5)
    future = 2**62
    _write_mark(filled.directory, version=SCHEMA_VERSION, watermark=future)
    _rewrite_snapshot(filled.directory, lambda state: state.update(watermark=future))
    with caplog.at_level(logging.INFO, logger="palace.search.indexes"):
        filled.reopen_indexes()
    assert any(DISAGREE in record.getMessage() for record in caplog.records)
    assert filled.ids(q=f"n{400 + 2}") == [added[2]["id"]]
    assert answers(filled) == _fresh_answers(filled)


@pytest.mark.parametrize("stored", ["source.kind = 'email'", "source = NONE"])
def test_a_stored_source_kind_this_version_does_not_know_is_searched_as_other(
    palace: SearchPalace, stored: str
) -> None:
    """A drawer shows an unknown stored kind, or no source at all, as `other`
    (drawers.read_source), so source_kind=other must find it: a hit is filtered on what it
    shows, and no other value of source_kind can select it."""
    drawer = palace.file("work", "db", "written by a newer daemon", valid_from=instant(1))
    palace.store.one(f"UPDATE type::record('drawer', $d) SET {stored}", {"d": drawer["id"]})
    shown = palace.hierarchy.show_drawer_by_id(CTX, drawer["id"])
    assert shown["source"]["kind"] == "other"
    assert palace.ids(q="newer", source_kind="other") == [drawer["id"]]


# kill -9 of a real daemon -----------------------------------------------------------------------

CONFIG = """
[embeddings]
default_profile = ""

[embeddings.profiles.standin]
provider = "external"
model = "stand-in"
dimensions = 8
"""


def _daemon(root: Path) -> Daemon:
    config = root / "memcastle.toml"
    config.write_text(CONFIG)
    return Daemon(root, env={"MEMCASTLE_CONFIG": str(config)})


@pytest.fixture
def killable(tmp_path: Path) -> Iterator[Daemon]:
    created = _daemon(tmp_path)
    yield created
    if created.process is not None and created.process.poll() is None:
        created.kill()


def _write_drawers(client: httpx.Client, wing: str, start: int, count: int) -> list[str]:
    rng = random.Random(start)
    words = ["database", "postgres", "redis", "cache", "deploy", "backup"]
    ids = []
    for number in range(start, start + count):
        content = " ".join(rng.choice(words) for _ in range(rng.randint(2, 6))) + f" k{number}"
        response = client.post(
            f"/api/wings/{wing}/rooms/{rng.choice(['a', 'b'])}/drawers",
            json={"content": content, "tags": rng.sample(["x", "y"], rng.randint(0, 2))},
        )
        assert response.status_code in (200, 201), response.text
        drawer_id = response.json()["id"]
        vector = client.put(
            f"/api/drawers/{drawer_id}/embedding",
            json={"profile": STANDIN, "embedding": [rng.uniform(-1, 1) for _ in range(8)]},
        )
        assert vector.status_code == 200, vector.text
        ids.append(drawer_id)
    return ids


def _http_battery(wing: str) -> list[tuple[str, dict[str, Any]]]:
    """Searches whose limit exceeds what the wing holds, so each answer is every match."""
    vector = [0.3, -0.2, 0.5, 0.1, -0.4, 0.2, 0.0, 0.6]
    searches: list[tuple[str, dict[str, Any]]] = [
        ("GET", {"q": "database", "wing": wing, "limit": "200"}),
        ("GET", {"q": "postgres cache", "wing": wing, "limit": "200"}),
        (
            "GET",
            {"q": "redis", "wing": wing, "tags": "x", "include_historical": "true", "limit": "200"},
        ),
    ]
    for ranking in ("semantic", "hybrid"):
        searches.append(
            (
                "POST",
                {
                    "text": "database backup",
                    "ranking": ranking,
                    "limit": 200,
                    "filter": {"wing": wing},
                    "profile": STANDIN,
                    "query_embedding": vector,
                },
            )
        )
    return searches


def _http_answers(client: httpx.Client, wing: str) -> list[Any]:
    """Each answer's hits by drawer id, without their BM25 figures: BM25 counts a replaced
    version of a drawer until the lexical index merges it away, so a restart's replay (or a
    merge) moves the scores, and with them the order of a many-word query; what is found does
    not move."""
    found = []
    for method, payload in _http_battery(wing):
        if method == "GET":
            response = client.get("/api/search", params=payload)
        else:
            response = client.post("/api/search", json=payload)
        assert response.status_code == 200, response.text
        answer = response.json()
        hits = sorted(answer.pop("results"), key=lambda hit: hit["id"])
        for hit in hits:
            hit.pop("score")
            if "lexical" in hit.get("signals", {}):
                hit["signals"]["lexical"] = "bm25"
        found.append({**answer, "results": hits})
    return found


@pytest.mark.slow
def test_kill_9_then_restart_answers_identically(killable: Daemon) -> None:
    wing = f"wing-{uuid.uuid4().hex[:8]}"
    killable.start()
    with killable.client() as client:
        ids = _write_drawers(client, wing, 0, 40)
        superseded = client.post(
            f"/api/drawers/{ids[3]}/supersede", json={"content": "database moved k3"}
        )
        assert superseded.status_code == 200, superseded.text
        before = _http_answers(client, wing)
    killable.signal(signal.SIGKILL)
    killable.wait()
    killable.start()
    with killable.client() as client:
        assert _http_answers(client, wing) == before


@pytest.mark.slow
def test_kill_9_right_after_writes_loses_nothing(killable: Daemon) -> None:
    """Writes acknowledged just before the kill are found after the restart, and what they
    closed or deleted is not: no wrong answer, whatever the indexes had saved."""
    wing = f"wing-{uuid.uuid4().hex[:8]}"
    killable.start()
    with killable.client() as client:
        ids = _write_drawers(client, wing, 0, 20)
        assert _http_answers(client, wing)  # indexes open and saved once
        late = _write_drawers(client, wing, 100, 5)
        closed = client.post(f"/api/drawers/{ids[0]}/supersede", json={"content": "zebra k0"})
        assert closed.status_code == 200, closed.text
        replacement = closed.json()["replacement"]["id"]
        drawer = client.get(f"/api/drawers/{ids[1]}").json()
        room = client.get(f"/api/wings/{wing}/rooms").json()["rooms"]
        room_name = next(r["name"] for r in room if r["id"] == drawer["room"])
        deleted = client.delete(f"/api/wings/{wing}/rooms/{room_name}/drawers/{ids[1]}")
        assert deleted.status_code == 200, deleted.text
    killable.signal(signal.SIGKILL)
    killable.wait()
    killable.start()
    with killable.client() as client:
        for number, drawer_id in zip(range(100, 105), late, strict=True):
            found = client.get("/api/search", params={"q": f"k{number}", "wing": wing}).json()
            assert [hit["id"] for hit in found["results"]] == [drawer_id]
        zebra = client.get("/api/search", params={"q": "zebra", "wing": wing}).json()
        assert [hit["id"] for hit in zebra["results"]] == [replacement]
        k0 = client.get("/api/search", params={"q": "k0", "wing": wing}).json()
        assert [hit["id"] for hit in k0["results"]] == [replacement]
        k1 = client.get(
            "/api/search", params={"q": "k1", "wing": wing, "include_historical": "true"}
        ).json()
        assert k1["results"] == []
        vector = client.post(
            "/api/search",
            json={
                "text": "x",
                "ranking": "semantic",
                "limit": 200,
                "filter": {"wing": wing, "temporal": "all"},
                "profile": STANDIN,
                "query_embedding": [1, 0, 0, 0, 0, 0, 0, 0],
            },
        ).json()
        found = {hit["id"] for hit in vector["results"]}
        assert ids[1] not in found
        assert set(late) <= found


def test_the_catalogs_state_stays_as_taken_while_the_catalog_changes() -> None:
    catalog = Catalog()
    drawer = {
        "id": "a",
        "wing": "work",
        "room": "db",
        "source_kind": "manual",
        "valid_from": 1,
        "valid_to": OPEN,
        "chatter": False,
        "tags": ["x"],
        "conversation": None,
        "voices": (),
    }
    catalog.put(drawer)
    state = catalog.state()
    catalog.put({**drawer, "id": "b", "wing": "home", "tags": ["y"]})
    catalog.put({**drawer, "valid_to": 5})
    catalog.remove("a")
    assert state["ids"] == ["a"] and list(state["alive"]) == [True]
    assert list(state["valid_to"]) == [OPEN] and state["tags"] == {0: ("x",)}
    assert "home" not in state["codes"]
