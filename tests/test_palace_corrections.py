"""Deduplication, supersession, history and the journal against the real engine (`mem://`).

palace.md sections 3 to 7 and 9 at the service level: likely copies are stored and linked (never
merged), exact unnamed copies are not stored twice, corrections close a drawer and file its
replacement, a history is walked from any version, the journal writes notes and diaries and
reads the wake-up, wing and room deletes wait for the jobs that write, and a checkpoint payload
is checked whole before a job is made of it.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from typing import Any

import pytest

from kernel.config import DedupConfig
from kernel.context import RequestContext
from kernel.errors import InputInvalid, ModeForbidden
from kernel.store import Store
from palace import checkpoint, dedup, drawers
from palace.filing import DrawerNameTaken, Filing
from palace.hierarchy import DrawerNotFound, PalaceBusy
from palace.journal import JournalService
from palace.names import PathInvalid
from palace.repositories.hierarchy import HierarchyRepository
from palace.repositories.journal import JournalRepository
from palace.repositories.revisions import RevisionRepository
from palace.revisions import DrawerSuperseded
from tests.support.palace_services import Palace, build

TEXT = "We deploy the backend service every Tuesday morning."
NORMALIZED_COPY = "we deploy the BACKEND service, every tuesday morning"
TYPO = "We deploy the backend service every Tuesady morning."  # one transposition: 0.9804
OTHER = "The staging database is refreshed from production each night."


class Ticker:
    """A clock that moves one second per reading, well in the past (so `time::now()` in the
    store sees every instant it gave as past), never on a whole second."""

    def __init__(self) -> None:
        self.now = dt.datetime(2025, 3, 1, 9, 0, 0, 250, tzinfo=dt.UTC)

    def __call__(self) -> dt.datetime:
        self.now += dt.timedelta(seconds=1)
        return self.now


@pytest.fixture
def clocked(store: Store) -> Palace:
    """A palace whose instants are strictly increasing and known."""
    return build(store, clock=Ticker())


@pytest.fixture
def journal(store: Store, clocked: Palace) -> JournalService:
    return JournalService(
        JournalRepository(store), clocked.hierarchy, clocked.filing, clocked.hierarchy.clock
    )


def file(
    palace: Palace,
    ctx: RequestContext,
    content: str,
    *,
    wing: str = "w",
    room: str = "r",
    **filing: Any,
) -> tuple[dict[str, Any], bool]:
    return palace.filing.file(ctx, wing, room, Filing(content=content, **filing))


def similar(palace: Palace, ctx: RequestContext, drawer_id: str) -> list[tuple]:
    """`(other id, side, kind, similarity)` of each drawer linked to this one."""
    return [
        (link["drawer"]["id"], link["side"], link["kind"], link["similarity"])
        for link in palace.filing.duplicates(ctx, drawer_id)["similar"]
    ]


def edges(store: Store) -> list[dict[str, Any]]:
    return store.one("SELECT * FROM similar_to")


def drawer_ids(store: Store) -> set[str]:
    return set(store.one("SELECT VALUE record::id(id) FROM drawer"))


def add_job(store: Store, status: str, kind: dict[str, Any]) -> str:
    """A job row as the job service writes it, without running anything."""
    job_id = str(uuid.uuid4())
    store.query(
        "CREATE type::record('job', $id) CONTENT $r",
        {
            "id": job_id,
            "r": {
                "status": status,
                "kind": kind,
                "priority": 50,
                "created_at": dt.datetime.now(dt.UTC),
            },
        },
    )
    return job_id


def set_fields(store: Store, drawer_id: str, **fields: Any) -> None:
    """Rewrite stored fields directly, as data from an older version could hold them."""
    store.query(
        "UPDATE type::record('drawer', $id) MERGE $fields", {"id": drawer_id, "fields": fields}
    )


# Deduplication when filing -----------------------------------------------------------------


def test_an_unnamed_exact_copy_returns_the_existing_drawer(
    palace: Palace, ctx: RequestContext, store: Store
) -> None:
    first, created = file(palace, ctx, TEXT)
    assert created is True
    again, created_again = file(palace, ctx, TEXT, tags=["other"])
    assert created_again is False
    assert again["id"] == first["id"]
    assert again["tags"] == [], "the existing drawer is returned as it is"
    assert drawer_ids(store) == {first["id"]}
    assert edges(store) == []


def test_an_unnamed_exact_copy_of_a_named_drawer_is_not_stored(
    palace: Palace, ctx: RequestContext, store: Store
) -> None:
    named, _ = file(palace, ctx, TEXT, name="deploys")
    again, created = file(palace, ctx, TEXT)
    assert (again["id"], created) == (named["id"], False)
    assert drawer_ids(store) == {named["id"]}


def test_a_normalized_copy_is_stored_and_linked(
    clocked: Palace, ctx: RequestContext, store: Store
) -> None:
    older, _ = file(clocked, ctx, TEXT)
    newer, created = file(clocked, ctx, NORMALIZED_COPY)
    assert created is True
    assert newer["id"] != older["id"]
    assert newer["content"] == NORMALIZED_COPY, "never merged: stored verbatim"

    assert similar(clocked, ctx, newer["id"]) == [(older["id"], "older", "normalized", 1.0)]
    assert similar(clocked, ctx, older["id"]) == [(newer["id"], "newer", "normalized", 1.0)]
    link = clocked.filing.duplicates(ctx, newer["id"])["similar"][0]
    assert link["signals"] == {
        "same_hash": False,
        "same_fingerprint": True,
        "similarity": 1.0,
        "threshold": 0.9,
    }
    assert link["created_at"] == newer["created_at"]
    assert link["drawer"]["content"] == TEXT
    # The edge points newer -> older, once.
    [edge] = edges(store)
    assert (edge["in"], edge["out"]) == (newer["id"], older["id"])


def test_a_near_copy_is_stored_and_linked(
    palace: Palace, ctx: RequestContext, store: Store
) -> None:
    older, _ = file(palace, ctx, TEXT)
    newer, created = file(palace, ctx, TYPO)
    assert created is True
    assert similar(palace, ctx, newer["id"]) == [(older["id"], "older", "near", 0.9804)]
    assert similar(palace, ctx, older["id"]) == [(newer["id"], "newer", "near", 0.9804)]
    signals = palace.filing.duplicates(ctx, older["id"])["similar"][0]["signals"]
    assert signals == {
        "same_hash": False,
        "same_fingerprint": False,
        "similarity": 0.9804,
        "threshold": 0.9,
    }


def test_duplicates_lists_older_and_newer_copies(clocked: Palace, ctx: RequestContext) -> None:
    first, _ = file(clocked, ctx, TEXT)
    middle, _ = file(clocked, ctx, NORMALIZED_COPY)
    last, _ = file(clocked, ctx, TYPO)
    listed = clocked.filing.duplicates(ctx, middle["id"])
    assert listed["drawer"]["id"] == middle["id"]
    assert sorted(similar(clocked, ctx, middle["id"])) == sorted(
        [
            (first["id"], "older", "normalized", 1.0),
            (last["id"], "newer", "near", 0.9804),
        ]
    )
    # The typo is linked to both earlier versions, each judged on its own.
    assert sorted(similar(clocked, ctx, last["id"])) == sorted(
        [(first["id"], "older", "near", 0.9804), (middle["id"], "older", "near", 0.9804)]
    )


def test_distinct_drawers_are_not_linked(palace: Palace, ctx: RequestContext, store: Store) -> None:
    file(palace, ctx, TEXT)
    _, created = file(palace, ctx, OTHER)
    file(palace, ctx, "We deploy the frontend app every Friday evening.")
    assert created is True
    assert len(drawer_ids(store)) == 3
    assert edges(store) == []


def test_a_near_copy_edited_at_both_ends_is_not_a_candidate(
    palace: Palace, ctx: RequestContext
) -> None:
    """The documented limit of finding candidates by their first or last 24 normalized
    characters (palace/dedup.py says why not by full-text search)."""
    base = (
        "Alpha team deploys the backend service every Tuesday morning after the standup "
        "meeting ends and the release notes are written up properly."
    )
    both_ends = base.replace("Alpha", "Alpah").replace("properly", "properyl")
    older, _ = file(palace, ctx, base)
    newer, _ = file(palace, ctx, both_ends)
    assert older["id"] != newer["id"]
    assert similar(palace, ctx, newer["id"]) == []


def test_short_texts_are_linked_only_as_normalized_copies(
    palace: Palace, ctx: RequestContext, store: Store
) -> None:
    milk, _ = file(palace, ctx, "Buy milk")
    silk, _ = file(palace, ctx, "Buy silk")
    shout, _ = file(palace, ctx, "BUY MILK!")
    assert similar(palace, ctx, silk["id"]) == []
    assert similar(palace, ctx, shout["id"]) == [(milk["id"], "older", "normalized", 1.0)]
    assert len(edges(store)) == 1


def test_a_drawer_never_links_to_itself(palace: Palace, ctx: RequestContext, store: Store) -> None:
    alone, _ = file(palace, ctx, TEXT)
    assert similar(palace, ctx, alone["id"]) == []
    copy, _ = file(palace, ctx, TEXT, keep_copy=True)
    third, _ = file(palace, ctx, TEXT, keep_copy=True)
    assert store.one("SELECT * FROM similar_to WHERE in = out") == []
    assert len(edges(store)) == 3, "copy->alone, third->alone, third->copy"
    assert alone["id"] not in {other for other, *_ in similar(palace, ctx, alone["id"])}
    assert {other for other, *_ in similar(palace, ctx, third["id"])} == {alone["id"], copy["id"]}


def test_linking_is_per_room(palace: Palace, ctx: RequestContext, store: Store) -> None:
    here, _ = file(palace, ctx, TEXT, room="r1")
    other_room, created = file(palace, ctx, TEXT, room="r2")
    other_wing, created_in_wing = file(palace, ctx, TEXT, wing="w2", room="r1")
    near_elsewhere, _ = file(palace, ctx, TYPO, room="r3")
    assert created is True and created_in_wing is True
    assert len({here["id"], other_room["id"], other_wing["id"], near_elsewhere["id"]}) == 4
    assert edges(store) == []


def test_a_closed_drawer_is_not_a_candidate(
    palace: Palace, ctx: RequestContext, store: Store
) -> None:
    old, _ = file(palace, ctx, TEXT)
    palace.revisions.supersede(ctx, old["id"], {})
    again, created = file(palace, ctx, TEXT)
    near, _ = file(palace, ctx, TYPO)
    assert created is True
    assert again["id"] != old["id"]
    assert similar(palace, ctx, old["id"]) == []
    assert similar(palace, ctx, near["id"]) == [(again["id"], "older", "near", 0.9804)]


def test_a_named_exact_copy_is_stored_and_linked(
    palace: Palace, ctx: RequestContext, store: Store
) -> None:
    unnamed, _ = file(palace, ctx, TEXT)
    named, created = file(palace, ctx, TEXT, name="deploys")
    assert created is True
    assert named["name"] == "deploys"
    assert similar(palace, ctx, named["id"]) == [(unnamed["id"], "older", "exact", 1.0)]
    signals = palace.filing.duplicates(ctx, named["id"])["similar"][0]["signals"]
    assert signals["same_hash"] is True and signals["same_fingerprint"] is True

    # The same name with the same content is a no-op; with other content it is refused.
    again, created_again = file(palace, ctx, TEXT, name="deploys")
    assert (again["id"], created_again) == (named["id"], False)
    with pytest.raises(DrawerNameTaken) as caught:
        file(palace, ctx, OTHER, name="deploys")
    assert caught.value.status == 409
    assert caught.value.code == "memcastle::palace::drawer_name_taken"
    assert len(drawer_ids(store)) == 2
    assert len(edges(store)) == 1


def test_keep_copy_stores_an_exact_copy(palace: Palace, ctx: RequestContext, store: Store) -> None:
    first, _ = file(palace, ctx, TEXT)
    kept, created = file(palace, ctx, TEXT, keep_copy=True)
    assert created is True
    assert kept["id"] != first["id"]
    assert similar(palace, ctx, kept["id"]) == [(first["id"], "older", "exact", 1.0)]


def test_a_record_is_the_drawer_as_it_will_be_stored(
    palace: Palace, ctx: RequestContext, store: Store
) -> None:
    room, _ = palace.hierarchy.ensure_place("w", "r")
    drawer_id = str(uuid.uuid4())
    record = palace.filing.record(
        ctx, room, Filing(content=TEXT, name="deploys", drawer_id=drawer_id, job_id="job-1")
    )
    assert (record["id"], record["wing"], record["room"]) == (drawer_id, room["wing"], room["id"])
    assert record["content_hash"] == drawers.content_hash(TEXT)
    assert record["provenance"] == {"requested_by": "http", "job_id": "job-1"}
    assert record["valid_from"] == record["created_at"]
    assert record["name"] == "deploys"
    assert drawer_ids(store) == set(), "nothing is stored"


def stored_outside_a_batch(palace: Palace, ctx: RequestContext, content: str) -> dict[str, Any]:
    """A drawer written straight to the store, as a revision writes its replacement."""
    room, _ = palace.hierarchy.ensure_place("w", "r")
    record = palace.filing.record(ctx, room, Filing(content=content))
    palace.store.query(
        "CREATE type::record('drawer', $id) CONTENT $record",
        {"id": record["id"], "record": {k: v for k, v in record.items() if k != "id"}},
    )
    return record


def test_link_copies_links_a_drawer_stored_outside_a_batch(
    palace: Palace, ctx: RequestContext
) -> None:
    older, _ = file(palace, ctx, TEXT)
    file(palace, ctx, OTHER)
    newer = stored_outside_a_batch(palace, ctx, TYPO)
    assert palace.filing.link_copies(newer) == 1
    assert similar(palace, ctx, newer["id"]) == [(older["id"], "older", "near", 0.9804)]


def test_link_copies_links_nothing_with_deduplication_off(
    store: Store, ctx: RequestContext
) -> None:
    palace = build(store, dedup=DedupConfig(enabled=False))
    file(palace, ctx, TEXT)
    newer = stored_outside_a_batch(palace, ctx, TYPO)
    assert palace.filing.link_copies(newer) == 0
    assert edges(store) == []


def test_dedup_disabled_stores_everything_and_links_nothing(
    store: Store, ctx: RequestContext
) -> None:
    palace = build(store, dedup=DedupConfig(enabled=False))
    first, _ = file(palace, ctx, TEXT)
    copy, created = file(palace, ctx, TEXT)
    file(palace, ctx, NORMALIZED_COPY)
    file(palace, ctx, TYPO)
    file(palace, ctx, TEXT, name="named-copy")
    assert created is True
    assert copy["id"] != first["id"]
    assert len(drawer_ids(store)) == 5
    assert edges(store) == []
    assert similar(palace, ctx, first["id"]) == []


@pytest.mark.parametrize(("threshold", "linked"), [(0.9, True), (0.98, True), (0.99, False)])
def test_near_threshold_is_respected(
    store: Store, ctx: RequestContext, threshold: float, linked: bool
) -> None:
    palace = build(store, dedup=DedupConfig(near_threshold=threshold))
    older, _ = file(palace, ctx, TEXT)
    newer, created = file(palace, ctx, TYPO)  # 0.9804 similar
    assert created is True
    links = palace.filing.duplicates(ctx, newer["id"])["similar"]
    if linked:
        assert [(link["drawer"]["id"], link["kind"]) for link in links] == [(older["id"], "near")]
        assert links[0]["signals"]["threshold"] == threshold
    else:
        assert links == []
    # A normalized copy does not depend on the threshold.
    shout, _ = file(palace, ctx, NORMALIZED_COPY)
    kinds = {(other, kind) for other, _, kind, _ in similar(palace, ctx, shout["id"])}
    assert (older["id"], "normalized") in kinds


def test_duplicates_of_an_unknown_drawer(palace: Palace, ctx: RequestContext) -> None:
    with pytest.raises(DrawerNotFound) as caught:
        palace.filing.duplicates(ctx, str(uuid.uuid4()))
    assert caught.value.status == 404
    with pytest.raises(InputInvalid) as bad:
        palace.filing.duplicates(ctx, "not-a-uuid")
    assert bad.value.field == "id"


def test_duplicates_is_a_read(palace: Palace, ctx: RequestContext) -> None:
    drawer, _ = file(palace, ctx, TEXT)
    read_only = RequestContext.build(mode="read_only")
    assert palace.filing.duplicates(read_only, drawer["id"])["similar"] == []
    with pytest.raises(ModeForbidden):
        palace.filing.duplicates(RequestContext.build(mode="disabled"), drawer["id"])


# Diary deduplication -----------------------------------------------------------------------


def test_diary_copies_are_judged_per_agent(
    journal: JournalService, clocked: Palace, ctx: RequestContext, store: Store
) -> None:
    def write(agent: str, content: str) -> dict[str, Any]:
        return journal.write_diary(ctx, {"agent_identity": agent, "wing": "w", "content": content})

    mine = write("agent-1", TEXT)
    assert mine["created"] is True
    again = write("agent-1", TEXT)
    assert (again["id"], again["created"]) == (mine["id"], False)

    theirs = write("agent-2", TEXT)
    assert theirs["created"] is True, "another agent's identical entry is its own"
    assert theirs["id"] != mine["id"]
    assert theirs["source"] == {"kind": "manual", "agent": "agent-2"}

    my_typo = write("agent-1", TYPO)
    their_shout = write("agent-2", NORMALIZED_COPY)
    palace = clocked
    assert similar(palace, ctx, my_typo["id"]) == [(mine["id"], "older", "near", 0.9804)]
    assert similar(palace, ctx, their_shout["id"]) == [(theirs["id"], "older", "normalized", 1.0)]
    assert similar(palace, ctx, theirs["id"]) == [(their_shout["id"], "newer", "normalized", 1.0)]
    assert len(drawer_ids(store)) == 4


# Supersede ---------------------------------------------------------------------------------


def test_supersede_files_the_replacement_in_place(clocked: Palace, ctx: RequestContext) -> None:
    old, _ = file(clocked, ctx, "we run the database on postgres", name="db", tags=["infra"])
    answer = clocked.revisions.supersede(
        ctx, old["id"], {"content": "we run the database on surrealdb"}
    )
    closed, replacement = answer["superseded"], answer["replacement"]

    assert closed["id"] == old["id"]
    assert closed["content"] == old["content"], "the old content is never rewritten"
    assert closed["content_hash"] == old["content_hash"]
    assert closed["valid_from"] == old["valid_from"]
    assert closed["valid_to"] is not None
    assert closed["name"] is None, "the name moved to the replacement"
    assert closed["superseded_by"] == replacement["id"]

    assert replacement["content"] == "we run the database on surrealdb"
    assert replacement["name"] == "db"
    assert replacement["tags"] == ["infra"]
    assert (replacement["wing"], replacement["room"]) == (old["wing"], old["room"])
    assert replacement["valid_from"] == closed["valid_to"]
    assert replacement["valid_to"] is None
    assert replacement["supersedes"] == old["id"]
    assert "superseded_by" not in replacement
    assert replacement["provenance"] == {"requested_by": "http", "job_id": None}

    # The name now reaches the replacement; the old drawer stays reachable by id.
    assert clocked.hierarchy.show_drawer(ctx, "w", "r", "db")["id"] == replacement["id"]
    assert clocked.hierarchy.show_drawer_by_id(ctx, old["id"])["content"] == old["content"]
    stored = clocked.hierarchy.show_drawer_by_id(ctx, replacement["id"])
    assert stored["supersedes"] == old["id"]


@pytest.mark.parametrize(("given", "expected"), [(["fresh"], ["fresh"]), ([], [])])
def test_supersede_takes_the_given_tags(
    palace: Palace, ctx: RequestContext, given: list[str], expected: list[str]
) -> None:
    old, _ = file(palace, ctx, TEXT, tags=["old", "tags"])
    answer = palace.revisions.supersede(ctx, old["id"], {"content": OTHER, "tags": given})
    assert answer["replacement"]["tags"] == expected
    assert answer["superseded"]["tags"] == ["old", "tags"]


def test_an_unnamed_drawer_has_an_unnamed_replacement(palace: Palace, ctx: RequestContext) -> None:
    old, _ = file(palace, ctx, TEXT)
    answer = palace.revisions.supersede(ctx, old["id"], {"content": OTHER})
    assert answer["replacement"]["name"] is None


def test_a_typo_fix_is_not_linked_to_the_version_it_closes(
    palace: Palace, ctx: RequestContext, store: Store
) -> None:
    old, _ = file(palace, ctx, TYPO)
    other, _ = file(palace, ctx, TYPO, room="elsewhere")
    sibling, _ = file(palace, ctx, NORMALIZED_COPY)  # linked to `old` as a near copy
    fixed = palace.revisions.supersede(ctx, old["id"], {"content": TEXT})["replacement"]
    links = similar(palace, ctx, fixed["id"])
    assert links == [(sibling["id"], "older", "normalized", 1.0)]
    assert other["id"] not in {edge["out"] for edge in edges(store)}


def test_invalidation_closes_without_replacement(
    clocked: Palace, ctx: RequestContext, store: Store
) -> None:
    old, _ = file(clocked, ctx, TEXT, name="deploys")
    answer = clocked.revisions.supersede(ctx, old["id"], {})
    assert answer["replacement"] is None
    closed = answer["superseded"]
    assert closed["valid_to"] is not None
    assert "superseded_by" not in closed
    assert closed["content"] == TEXT
    assert drawer_ids(store) == {old["id"]}
    # `content: null` is an invalidation too.
    other, _ = file(clocked, ctx, OTHER)
    assert clocked.revisions.supersede(ctx, other["id"], {"content": None})["replacement"] is None


def test_an_invalidated_drawer_gives_up_its_name(palace: Palace, ctx: RequestContext) -> None:
    old, _ = file(palace, ctx, TEXT, name="deploys")
    palace.revisions.supersede(ctx, old["id"], {})
    assert palace.hierarchy.show_drawer_by_id(ctx, old["id"])["name"] is None
    new, created = file(palace, ctx, OTHER, name="deploys")
    assert created is True
    assert palace.hierarchy.show_drawer(ctx, "w", "r", "deploys")["id"] == new["id"]


def test_a_corrected_diary_entry_stays_in_the_agents_diary(
    journal: JournalService, clocked: Palace, ctx: RequestContext
) -> None:
    entry = diary(journal, ctx, "a1", "I fixed teh bug")
    answer = clocked.revisions.supersede(ctx, entry["id"], {"content": "I fixed the bug"})
    assert answer["replacement"]["source"] == {"kind": "manual", "agent": "a1"}
    read = journal.read_diary(ctx, agent_identity="a1", wing="w", limit=None)
    assert [e["content"] for e in read["entries"]] == ["I fixed the bug"]


def test_a_second_supersede_is_refused(palace: Palace, ctx: RequestContext, store: Store) -> None:
    old, _ = file(palace, ctx, TEXT)
    first = palace.revisions.supersede(ctx, old["id"], {"content": OTHER})
    before = drawer_ids(store)
    for body in ({"content": "a third version"}, {}):
        with pytest.raises(DrawerSuperseded) as caught:
            palace.revisions.supersede(ctx, old["id"], body)
        assert caught.value.status == 409
        assert caught.value.code == "memcastle::palace::drawer_superseded"
    assert drawer_ids(store) == before
    closed = palace.hierarchy.show_drawer_by_id(ctx, old["id"])
    assert closed["superseded_by"] == first["replacement"]["id"]
    assert closed["valid_to"] == first["superseded"]["valid_to"]


def test_an_invalidated_drawer_cannot_be_superseded(palace: Palace, ctx: RequestContext) -> None:
    old, _ = file(palace, ctx, TEXT)
    palace.revisions.supersede(ctx, old["id"], {})
    with pytest.raises(DrawerSuperseded):
        palace.revisions.supersede(ctx, old["id"], {"content": OTHER})


def test_the_store_refuses_to_close_a_drawer_twice(
    palace: Palace, ctx: RequestContext, store: Store
) -> None:
    """The race the service's own check cannot see: the transaction itself refuses."""
    old, _ = file(palace, ctx, TEXT, name="n")
    at = dt.datetime(2025, 1, 1, 0, 0, 0, 5, tzinfo=dt.UTC)
    assert RevisionRepository(store).supersede(old["id"], None, at) is not None
    replacement = {
        "id": str(uuid.uuid4()),
        "wing": old["wing"],
        "room": old["room"],
        "content": OTHER,
        "fingerprint": drawers.fingerprint(OTHER),
        **dedup.blocking_keys(OTHER),
        "supersedes": old["id"],
    }
    assert RevisionRepository(store).supersede(old["id"], replacement, at) is None
    assert RevisionRepository(store).supersede(old["id"], None, at) is None
    assert drawer_ids(store) == {old["id"]}, "the replacement was rolled back"
    closed = palace.hierarchy.show_drawer_by_id(ctx, old["id"])
    assert closed["valid_to"] == at
    assert "superseded_by" not in closed


def test_supersede_needs_full_mode_and_writes_nothing(
    palace: Palace, ctx: RequestContext, store: Store
) -> None:
    old, _ = file(palace, ctx, TEXT)
    for mode in ("read_only", "disabled"):
        with pytest.raises(ModeForbidden) as caught:
            palace.revisions.supersede(
                RequestContext.build(mode=mode), old["id"], {"content": OTHER}
            )
        assert caught.value.status == 403
        assert caught.value.code == "memcastle::mode::forbidden"
    assert drawer_ids(store) == {old["id"]}
    unchanged = palace.hierarchy.show_drawer_by_id(ctx, old["id"])
    assert unchanged["valid_to"] is None
    assert "superseded_by" not in unchanged


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": "   "}, "content"),
        ({"content": 5}, "content"),
        ({"tags": "one"}, "tags"),
        ({"color": "red"}, "color"),
    ],
)
def test_bad_supersede_input_writes_nothing(
    palace: Palace, ctx: RequestContext, store: Store, body: dict, field: str
) -> None:
    old, _ = file(palace, ctx, TEXT)
    with pytest.raises(InputInvalid) as caught:
        palace.revisions.supersede(ctx, old["id"], body)
    assert caught.value.field == field
    assert palace.hierarchy.show_drawer_by_id(ctx, old["id"])["valid_to"] is None
    assert drawer_ids(store) == {old["id"]}


def test_supersede_an_unknown_drawer(palace: Palace, ctx: RequestContext) -> None:
    with pytest.raises(DrawerNotFound):
        palace.revisions.supersede(ctx, str(uuid.uuid4()), {"content": OTHER})


# History -----------------------------------------------------------------------------------


def three_versions(palace: Palace, ctx: RequestContext) -> list[str]:
    v1, _ = file(palace, ctx, "we run the database on postgres", name="db")
    v2 = palace.revisions.supersede(ctx, v1["id"], {"content": "we run the database on mysql"})
    v3 = palace.revisions.supersede(
        ctx, v2["replacement"]["id"], {"content": "we run the database on surrealdb"}
    )
    return [v1["id"], v2["replacement"]["id"], v3["replacement"]["id"]]


def test_history_is_the_same_from_every_version(clocked: Palace, ctx: RequestContext) -> None:
    ids = three_versions(clocked, ctx)
    histories = [clocked.revisions.history(ctx, drawer_id) for drawer_id in ids]
    for asked, history in zip(ids, histories, strict=True):
        assert history["drawer"] == asked
        assert [version["id"] for version in history["versions"]] == ids
        assert history["versions"] == histories[0]["versions"]

    v1, v2, v3 = histories[0]["versions"]
    assert [v["content"] for v in (v1, v2, v3)] == [
        "we run the database on postgres",
        "we run the database on mysql",
        "we run the database on surrealdb",
    ]
    # The periods tile the timeline; the newest is still open.
    assert v1["valid_to"] == v2["valid_from"]
    assert v2["valid_to"] == v3["valid_from"]
    assert v1["valid_from"] < v2["valid_from"] < v3["valid_from"]
    assert v3["valid_to"] is None
    assert (v1.get("supersedes"), v1["superseded_by"]) == (None, v2["id"])
    assert (v2["supersedes"], v2["superseded_by"]) == (v1["id"], v3["id"])
    assert (v3["supersedes"], v3.get("superseded_by")) == (v2["id"], None)
    assert v3["name"] == "db" and v1["name"] is None and v2["name"] is None


def test_history_ends_closed_after_an_invalidation(palace: Palace, ctx: RequestContext) -> None:
    ids = three_versions(palace, ctx)
    palace.revisions.supersede(ctx, ids[-1], {})
    versions = palace.revisions.history(ctx, ids[0])["versions"]
    assert [v["id"] for v in versions] == ids
    assert versions[-1]["valid_to"] is not None
    assert "superseded_by" not in versions[-1]


def test_history_of_an_uncorrected_drawer_is_one_version(
    palace: Palace, ctx: RequestContext
) -> None:
    drawer, _ = file(palace, ctx, TEXT)
    history = palace.revisions.history(ctx, drawer["id"])
    assert [v["id"] for v in history["versions"]] == [drawer["id"]]
    assert history["versions"][0]["provenance"] == {"requested_by": "http", "job_id": None}


def test_history_is_not_ordered_by_timestamps(palace: Palace, ctx: RequestContext) -> None:
    """Links order the chain, even when the versions were recorded in the other order."""
    ids = three_versions(palace, ctx)
    late = dt.datetime(2030, 1, 1, 0, 0, 0, 7, tzinfo=dt.UTC)
    set_fields(palace.store, ids[0], created_at=late, updated_at=late)
    assert [v["id"] for v in palace.revisions.history(ctx, ids[2])["versions"]] == ids


def test_history_stops_at_a_deleted_version(
    palace: Palace, ctx: RequestContext, store: Store
) -> None:
    v1, v2, v3 = three_versions(palace, ctx)
    HierarchyRepository(store).delete_drawer(v2)
    assert [v["id"] for v in palace.revisions.history(ctx, v3)["versions"]] == [v3]
    assert [v["id"] for v in palace.revisions.history(ctx, v1)["versions"]] == [v1]


def test_history_stops_at_a_dangling_link(
    palace: Palace, ctx: RequestContext, store: Store
) -> None:
    drawer, _ = file(palace, ctx, TEXT)
    set_fields(store, drawer["id"], supersedes=str(uuid.uuid4()), superseded_by=str(uuid.uuid4()))
    assert [v["id"] for v in palace.revisions.history(ctx, drawer["id"])["versions"]] == [
        drawer["id"]
    ]


@pytest.mark.parametrize("size", [1, 2, 3])
def test_history_is_cycle_safe(
    palace: Palace, ctx: RequestContext, store: Store, size: int
) -> None:
    ids = [file(palace, ctx, f"version {n} of a looping story")[0]["id"] for n in range(size)]
    for n, drawer_id in enumerate(ids):
        set_fields(
            store,
            drawer_id,
            supersedes=ids[(n - 1) % size],
            superseded_by=ids[(n + 1) % size],
        )
    for drawer_id in ids:
        history = palace.revisions.history(ctx, drawer_id)
        versions = [v["id"] for v in history["versions"]]
        assert len(versions) == size, "every version once: the walk ended"
        assert set(versions) == set(ids)
        assert history["drawer"] == drawer_id


def test_history_is_a_read(palace: Palace, ctx: RequestContext) -> None:
    drawer, _ = file(palace, ctx, TEXT)
    assert palace.revisions.history(RequestContext.build(mode="read_only"), drawer["id"])[
        "versions"
    ]
    with pytest.raises(ModeForbidden):
        palace.revisions.history(RequestContext.build(mode="disabled"), drawer["id"])


def test_history_of_an_unknown_drawer(palace: Palace, ctx: RequestContext) -> None:
    with pytest.raises(DrawerNotFound) as caught:
        palace.revisions.history(ctx, str(uuid.uuid4()))
    assert caught.value.code == "memcastle::palace::drawer_not_found"
    assert caught.value.status == 404


# Pairing supersessions recorded before the links -------------------------------------------

CLOSED_AT = dt.datetime(2025, 2, 1, 12, 0, 0, 123, tzinfo=dt.UTC)
EARLIER = dt.datetime(2025, 1, 1, 12, 0, 0, 123, tzinfo=dt.UTC)


def closed_drawer(palace: Palace, ctx: RequestContext, room: str = "r") -> dict[str, Any]:
    """A drawer closed at CLOSED_AT without any link, as an older version left it."""
    drawer, _ = file(palace, ctx, "the old way of doing it", room=room, valid_from=EARLIER)
    set_fields(palace.store, drawer["id"], valid_to=CLOSED_AT)
    return drawer


def test_pairing_links_the_one_successor(palace: Palace, ctx: RequestContext, store: Store) -> None:
    old = closed_drawer(palace, ctx)
    successor, _ = file(palace, ctx, "the new way of doing it", valid_from=CLOSED_AT)
    file(palace, ctx, "valid from that instant, elsewhere", room="r2", valid_from=CLOSED_AT)
    file(palace, ctx, "valid a moment later", valid_from=CLOSED_AT + dt.timedelta(seconds=1))

    assert palace.revisions.pair_unlinked_supersessions() == 1
    assert [v["id"] for v in palace.revisions.history(ctx, old["id"])["versions"]] == [
        old["id"],
        successor["id"],
    ]
    assert palace.hierarchy.show_drawer_by_id(ctx, old["id"])["superseded_by"] == successor["id"]
    assert palace.hierarchy.show_drawer_by_id(ctx, successor["id"])["supersedes"] == old["id"]
    assert palace.revisions.pair_unlinked_supersessions() == 0, "pairing twice changes nothing"


def test_pairing_leaves_a_drawer_without_successor(palace: Palace, ctx: RequestContext) -> None:
    old = closed_drawer(palace, ctx)
    file(palace, ctx, "in another room", room="r2", valid_from=CLOSED_AT)
    assert palace.revisions.pair_unlinked_supersessions() == 0
    assert "superseded_by" not in palace.hierarchy.show_drawer_by_id(ctx, old["id"])


def test_pairing_leaves_a_drawer_with_two_successors(
    palace: Palace, ctx: RequestContext, store: Store
) -> None:
    old = closed_drawer(palace, ctx)
    one, _ = file(palace, ctx, "one new way", valid_from=CLOSED_AT)
    two, _ = file(palace, ctx, "another new way", valid_from=CLOSED_AT)
    assert palace.revisions.pair_unlinked_supersessions() == 0
    assert "superseded_by" not in palace.hierarchy.show_drawer_by_id(ctx, old["id"])
    for drawer_id in (one["id"], two["id"]):
        assert "supersedes" not in palace.hierarchy.show_drawer_by_id(ctx, drawer_id)


def test_pairing_skips_a_successor_already_linked(palace: Palace, ctx: RequestContext) -> None:
    first = closed_drawer(palace, ctx)
    second = closed_drawer(palace, ctx)  # closed at the same instant, same room
    assert first["id"] != second["id"]
    successor, _ = file(palace, ctx, "the one new way", valid_from=CLOSED_AT)
    assert palace.revisions.pair_unlinked_supersessions() == 1
    linked = [
        d["id"]
        for d in (first, second)
        if palace.hierarchy.show_drawer_by_id(ctx, d["id"]).get("superseded_by") == successor["id"]
    ]
    assert len(linked) == 1
    assert palace.hierarchy.show_drawer_by_id(ctx, successor["id"])["supersedes"] == linked[0]


def test_pairing_leaves_linked_supersessions_alone(palace: Palace, ctx: RequestContext) -> None:
    ids = three_versions(palace, ctx)
    palace.revisions.supersede(ctx, ids[-1], {})
    assert palace.revisions.pair_unlinked_supersessions() == 0
    assert [v["id"] for v in palace.revisions.history(ctx, ids[1])["versions"]] == ids


def test_pairing_links_chains_and_rooms_in_one_pass(palace: Palace, ctx: RequestContext) -> None:
    """One pass pairs every room and instant: a chain of three versions, closed at two
    instants, and a drawer of another room closed at the first instant."""
    later = CLOSED_AT + dt.timedelta(days=1)
    first = closed_drawer(palace, ctx)
    second, _ = file(palace, ctx, "the second way of doing it", valid_from=CLOSED_AT)
    set_fields(palace.store, second["id"], valid_to=later)
    third, _ = file(palace, ctx, "the third way of doing it", valid_from=later)
    elsewhere = closed_drawer(palace, ctx, room="r2")
    successor, _ = file(
        palace, ctx, "the new way in the other room", room="r2", valid_from=CLOSED_AT
    )

    assert palace.revisions.pair_unlinked_supersessions() == 3
    assert [v["id"] for v in palace.revisions.history(ctx, second["id"])["versions"]] == [
        first["id"],
        second["id"],
        third["id"],
    ]
    assert (
        palace.hierarchy.show_drawer_by_id(ctx, elsewhere["id"])["superseded_by"] == successor["id"]
    )
    assert palace.revisions.pair_unlinked_supersessions() == 0


# Notes -------------------------------------------------------------------------------------


def test_a_note_lands_in_notes_as_a_note(
    journal: JournalService, clocked: Palace, ctx: RequestContext
) -> None:
    note = journal.write_note(
        ctx, {"wing": "proj", "content": "remember the cache flag  ", "uri": "/home/me/proj"}
    )
    assert note["created"] is True
    assert note["name"] is None
    assert note["content"] == "remember the cache flag  ", "stored verbatim"
    assert note["source"] == {"kind": "note", "uri": "/home/me/proj"}
    shown = clocked.hierarchy.show_drawer_by_id(ctx, note["id"])
    room = clocked.hierarchy.show_room(ctx, "proj", "notes")
    assert shown["room"] == room["id"]


def test_an_identical_note_is_not_stored_twice(
    journal: JournalService, ctx: RequestContext, store: Store
) -> None:
    body = {"wing": "proj", "room": "ideas", "content": "try the new planner", "tags": ["t"]}
    first = journal.write_note(ctx, body)
    again = journal.write_note(ctx, body)
    assert (again["id"], again["created"]) == (first["id"], False)
    elsewhere = journal.write_note(ctx, {**body, "room": "notes"})
    assert elsewhere["created"] is True
    assert first["tags"] == ["t"]
    assert len(drawer_ids(store)) == 2


@pytest.mark.parametrize(
    ("body", "error", "field"),
    [
        ({"content": "x"}, InputInvalid, "wing"),
        ({"wing": "  ", "content": "x"}, InputInvalid, "wing"),
        ({"wing": "w", "content": " \n"}, InputInvalid, "content"),
        ({"wing": "w"}, InputInvalid, "content"),
        ({"wing": "w", "content": "x", "agent": "a"}, InputInvalid, "agent"),
        ({"wing": "w", "content": "x", "uri": 3}, InputInvalid, "uri"),
        ({"wing": "a/b", "content": "x"}, PathInvalid, None),
        ({"wing": "w", "room": "a/b", "content": "x"}, PathInvalid, None),
    ],
)
def test_bad_notes_are_refused(
    journal: JournalService,
    ctx: RequestContext,
    store: Store,
    body: dict,
    error: type,
    field: str | None,
) -> None:
    with pytest.raises(error) as caught:
        journal.write_note(ctx, body)
    if field is not None:
        assert caught.value.field == field
    assert drawer_ids(store) == set()


def test_journal_writes_need_full_mode(journal: JournalService, store: Store) -> None:
    read_only = RequestContext.build(mode="read_only")
    with pytest.raises(ModeForbidden):
        journal.write_note(read_only, {"wing": "w", "content": "x"})
    with pytest.raises(ModeForbidden):
        journal.write_diary(read_only, {"agent_identity": "a", "wing": "w", "content": "x"})
    assert drawer_ids(store) == set()
    assert store.one("SELECT * FROM wing") == []


# Diary -------------------------------------------------------------------------------------


def diary(journal: JournalService, ctx: RequestContext, agent: str, content: str, wing: str = "w"):
    return journal.write_diary(ctx, {"agent_identity": agent, "wing": wing, "content": content})


def test_a_diary_entry_lands_in_the_diary_room(
    journal: JournalService, clocked: Palace, ctx: RequestContext
) -> None:
    entry = journal.write_diary(
        ctx,
        {
            "agent_identity": " Agent 007 ",
            "wing": "w",
            "content": "today I fixed it",
            "tags": ["d"],
        },
    )
    assert entry["created"] is True
    assert entry["source"] == {"kind": "manual", "agent": " Agent 007 "}, "stored verbatim"
    assert entry["tags"] == ["d"]
    assert entry["room"] == clocked.hierarchy.show_room(ctx, "w", "diary")["id"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"wing": "w", "content": "x"}, "agent_identity"),
        ({"agent_identity": "", "wing": "w", "content": "x"}, "agent_identity"),
        ({"agent_identity": 7, "wing": "w", "content": "x"}, "agent_identity"),
        ({"agent_identity": "a", "content": "x"}, "wing"),
        ({"agent_identity": "a", "wing": "w", "content": ""}, "content"),
        ({"agent_identity": "a", "wing": "w", "content": "x", "room": "r"}, "room"),
    ],
)
def test_bad_diary_entries_are_refused(
    journal: JournalService, ctx: RequestContext, store: Store, body: dict, field: str
) -> None:
    with pytest.raises(InputInvalid) as caught:
        journal.write_diary(ctx, body)
    assert caught.value.field == field
    assert drawer_ids(store) == set()


def test_read_diary_is_the_agents_newest_current_entries(
    journal: JournalService, clocked: Palace, ctx: RequestContext
) -> None:
    first = diary(journal, ctx, "a1", "day one: set up the repository")
    second = diary(journal, ctx, "a1", "day two: wrote the parser")
    third = diary(journal, ctx, "a1", "day three: the parser was wrong")
    diary(journal, ctx, "a2", "someone else's day")
    diary(journal, ctx, "a1", "a day in another wing", wing="w2")
    clocked.revisions.supersede(ctx, second["id"], {})

    read = journal.read_diary(ctx, agent_identity="a1", wing="w", limit=None)
    assert read["agent_identity"] == "a1"
    assert read["wing"] == "w"
    assert read["limit"] == 20
    assert [e["id"] for e in read["entries"]] == [third["id"], first["id"]]

    limited = journal.read_diary(ctx, agent_identity="a1", wing="w", limit=1)
    assert [e["id"] for e in limited["entries"]] == [third["id"]]

    everywhere = journal.read_diary(ctx, agent_identity="a1", wing=None, limit="10")
    assert everywhere["wing"] is None
    assert len(everywhere["entries"]) == 3


def test_read_diary_of_an_unknown_wing_is_empty(
    journal: JournalService, ctx: RequestContext, store: Store
) -> None:
    read = journal.read_diary(ctx, agent_identity="a1", wing="nowhere", limit=None)
    assert read["entries"] == []
    assert store.one("SELECT * FROM wing") == [], "a read creates nothing"


def test_read_diary_checks_its_input(journal: JournalService, ctx: RequestContext) -> None:
    with pytest.raises(InputInvalid) as caught:
        journal.read_diary(ctx, agent_identity="", wing=None, limit=None)
    assert caught.value.field == "agent_identity"
    with pytest.raises(InputInvalid) as limit:
        journal.read_diary(ctx, agent_identity="a", wing=None, limit=-1)
    assert limit.value.field == "limit"
    assert journal.read_diary(ctx, agent_identity="a", wing=None, limit=500)["limit"] == 200
    with pytest.raises(ModeForbidden):
        journal.read_diary(
            RequestContext.build(mode="disabled"), agent_identity="a", wing=None, limit=None
        )


# Wake-up -----------------------------------------------------------------------------------


@pytest.fixture
def checkpoint_job(store: Store) -> str:
    return add_job(store, "completed", {"type": "checkpoint", "payload": {"items": []}})


def highlight(
    journal: JournalService,
    ctx: RequestContext,
    job_id: str,
    content: str,
    wing: str = "w",
    agent: str = "writer",
) -> str:
    drawer, _ = journal.filing.file(
        ctx,
        wing,
        "entries",
        Filing(content=content, job_id=job_id, source={"kind": "manual", "agent": agent}),
    )
    return drawer["id"]


def wake(journal: JournalService, ctx: RequestContext, **kwargs: Any) -> dict[str, Any]:
    return journal.wake_up(ctx, agent_identity=kwargs.pop("agent", "a1"), **kwargs)


def ids_of(answer: dict[str, Any]) -> list[str]:
    return [drawer["id"] for drawer in answer["recent_highlights"]]


def test_wake_up_of_an_empty_palace(journal: JournalService, ctx: RequestContext) -> None:
    answer = wake(journal, ctx)
    assert answer["diary"] is None
    assert answer["recent_highlights"] == []
    assert isinstance(answer["generated_at"], dt.datetime)
    assert wake(journal, ctx, wing="nowhere")["recent_highlights"] == []


def test_wake_up_reads_checkpointed_drawers_newest_first(
    journal: JournalService, clocked: Palace, ctx: RequestContext, store: Store, checkpoint_job: str
) -> None:
    demo_job = add_job(store, "completed", {"type": "demo", "steps": 1})
    old = highlight(journal, ctx, checkpoint_job, "first highlight", agent="someone-else")
    highlight(journal, ctx, demo_job, "written by a demo job")
    highlight(journal, ctx, str(uuid.uuid4()), "written by a job that is gone")
    file(clocked, ctx, "filed by hand", wing="w", room="entries")
    new = highlight(journal, ctx, checkpoint_job, "second highlight")
    elsewhere = highlight(journal, ctx, checkpoint_job, "in another wing", wing="w2")

    assert ids_of(wake(journal, ctx)) == [elsewhere, new, old], "not filtered by agent"
    assert ids_of(wake(journal, ctx, wing="w")) == [new, old]
    assert ids_of(wake(journal, ctx, max_items=2)) == [elsewhere, new]


def test_wake_up_skips_superseded_highlights(
    journal: JournalService, clocked: Palace, ctx: RequestContext, checkpoint_job: str
) -> None:
    kept = highlight(journal, ctx, checkpoint_job, "still true")
    gone = highlight(journal, ctx, checkpoint_job, "no longer true")
    clocked.revisions.supersede(ctx, gone, {})
    assert ids_of(wake(journal, ctx)) == [kept]


def test_wake_up_diary_only_with_a_wing(
    journal: JournalService, clocked: Palace, ctx: RequestContext, checkpoint_job: str
) -> None:
    diary(journal, ctx, "a1", "older entry")
    newest = diary(journal, ctx, "a1", "newest entry")
    diary(journal, ctx, "a2", "another agent, later")
    diary(journal, ctx, "a1", "newest in another wing", wing="w2")
    assert wake(journal, ctx)["diary"] is None
    assert wake(journal, ctx, wing="w")["diary"]["id"] == newest["id"]
    assert wake(journal, ctx, wing="w", agent="a3")["diary"] is None
    clocked.revisions.supersede(ctx, newest["id"], {})
    assert wake(journal, ctx, wing="w")["diary"]["content"] == "older entry"


def test_wake_up_drops_whole_highlights_to_fit_the_budget(
    journal: JournalService, ctx: RequestContext, checkpoint_job: str
) -> None:
    small_old = highlight(journal, ctx, checkpoint_job, "s" * 10)
    big = highlight(journal, ctx, checkpoint_job, "b" * 500)
    newest = highlight(journal, ctx, checkpoint_job, "n" * 100)

    assert ids_of(wake(journal, ctx, max_bytes=1000)) == [newest, big, small_old]
    assert ids_of(wake(journal, ctx, max_bytes=610)) == [newest, big, small_old]
    # The budget is counted in order and stops at the first highlight that does not fit, even
    # though a later one would.
    assert ids_of(wake(journal, ctx, max_bytes=609)) == [newest, big]
    assert ids_of(wake(journal, ctx, max_bytes=599)) == [newest], "the small one is not used"
    assert ids_of(wake(journal, ctx, max_bytes=100)) == [newest]
    assert ids_of(wake(journal, ctx, max_bytes=99)) == []
    for drawer in wake(journal, ctx, max_bytes=610)["recent_highlights"]:
        assert len(drawer["content"]) in (10, 100, 500), "never cut mid-content"


def test_wake_up_budget_counts_bytes(
    journal: JournalService, ctx: RequestContext, checkpoint_job: str
) -> None:
    accented = highlight(journal, ctx, checkpoint_job, "é" * 60)  # 60 characters, 120 bytes
    assert ids_of(wake(journal, ctx, max_bytes=119)) == []
    assert ids_of(wake(journal, ctx, max_bytes=120)) == [accented]


def test_wake_up_never_drops_the_diary(
    journal: JournalService, ctx: RequestContext, checkpoint_job: str
) -> None:
    entry = diary(journal, ctx, "a1", "d" * 300)
    highlight(journal, ctx, checkpoint_job, "h" * 10)
    answer = wake(journal, ctx, wing="w", max_bytes=100)
    assert answer["diary"]["id"] == entry["id"]
    assert answer["diary"]["content"] == "d" * 300, "never trimmed"
    assert answer["recent_highlights"] == []
    # The diary counts against the budget the highlights share.
    assert len(wake(journal, ctx, wing="w", max_bytes=310)["recent_highlights"]) == 1
    assert wake(journal, ctx, wing="w", max_bytes=309)["recent_highlights"] == []


def test_wake_up_of_an_unknown_wing_is_empty(
    journal: JournalService, ctx: RequestContext, store: Store, checkpoint_job: str
) -> None:
    highlight(journal, ctx, checkpoint_job, "in wing w")
    diary(journal, ctx, "a1", "a diary entry")
    answer = wake(journal, ctx, wing="nowhere")
    assert answer["diary"] is None
    assert answer["recent_highlights"] == []
    assert store.one("SELECT VALUE name FROM wing WHERE name = 'nowhere'") == []


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_items": -1}, "max_items"),
        ({"max_items": "many"}, "max_items"),
        ({"max_items": True}, "max_items"),
        ({"max_items": 1.5}, "max_items"),
        ({"max_bytes": -5}, "max_bytes"),
        ({"max_bytes": "lots"}, "max_bytes"),
        ({"agent": ""}, "agent_identity"),
        ({"agent": None}, "agent_identity"),
        ({"wing": 3}, "wing"),
    ],
)
def test_wake_up_checks_its_input(
    journal: JournalService, ctx: RequestContext, kwargs: dict, field: str
) -> None:
    with pytest.raises(InputInvalid) as caught:
        wake(journal, ctx, **kwargs)
    assert caught.value.field == field


def test_wake_up_limits_default_and_cap(
    journal: JournalService, ctx: RequestContext, checkpoint_job: str
) -> None:
    made = [highlight(journal, ctx, checkpoint_job, f"highlight number {n}") for n in range(12)]
    newest_first = list(reversed(made))
    assert ids_of(wake(journal, ctx)) == newest_first[:10], "10 by default"
    assert ids_of(wake(journal, ctx, max_items=0)) == newest_first[:10], "0 is the default"
    assert ids_of(wake(journal, ctx, max_items="11")) == newest_first[:11]
    assert ids_of(wake(journal, ctx, max_items=10_000)) == newest_first, "capped, not refused"
    biggest = highlight(journal, ctx, checkpoint_job, "x" * 9000)
    # Alone over the 8192-byte default, and first in line: nothing after it is read.
    assert ids_of(wake(journal, ctx)) == []
    assert ids_of(wake(journal, ctx, max_bytes=9000)) == [biggest]
    capped = ids_of(wake(journal, ctx, max_bytes=10**9))  # capped at 1 MiB, not refused
    assert capped == [biggest, *newest_first[:9]]


def test_wake_up_is_a_read(journal: JournalService) -> None:
    assert wake(journal, RequestContext.build(mode="read_only"))["diary"] is None
    with pytest.raises(ModeForbidden):
        wake(journal, RequestContext.build(mode="disabled"))


# Deletes wait for the jobs that write ------------------------------------------------------

CHECKPOINT_KIND = {"type": "checkpoint", "payload": {"items": []}}


def filled(palace: Palace, ctx: RequestContext) -> None:
    file(palace, ctx, TEXT, wing="w", room="r")
    file(palace, ctx, TYPO, wing="w", room="r")


@pytest.mark.parametrize("status", ["queued", "running", "paused"])
@pytest.mark.parametrize(
    "kind", [CHECKPOINT_KIND, {"type": "repair", "dry_run": False}], ids=["checkpoint", "repair"]
)
def test_deletes_are_refused_while_a_writing_job_is_pending(
    palace: Palace, ctx: RequestContext, store: Store, status: str, kind: dict
) -> None:
    filled(palace, ctx)
    add_job(store, status, kind)
    with pytest.raises(PalaceBusy) as caught:
        palace.hierarchy.delete_room(ctx, "w", "r")
    assert caught.value.status == 409
    assert caught.value.code == "memcastle::palace::busy"
    with pytest.raises(PalaceBusy):
        palace.hierarchy.delete_wing(ctx, "w")
    assert palace.hierarchy.show_wing(ctx, "w")["counts"] == {"rooms": 1, "drawers": 2}
    assert len(edges(store)) == 1


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        ("queued", {"type": "demo", "steps": 3}),
        ("running", {"type": "audit"}),
        ("queued", {"type": "repair", "dry_run": True}),
        ("paused", {"type": "repair", "dry_run": True}),
        ("completed", CHECKPOINT_KIND),
        ("failed", CHECKPOINT_KIND),
        ("cancelled", CHECKPOINT_KIND),
        ("completed", {"type": "repair", "dry_run": False}),
    ],
)
def test_deletes_go_ahead_when_no_writing_job_is_pending(
    palace: Palace, ctx: RequestContext, store: Store, status: str, kind: dict
) -> None:
    filled(palace, ctx)
    file(palace, ctx, OTHER, wing="w", room="r2")
    add_job(store, status, kind)
    assert palace.hierarchy.delete_room(ctx, "w", "r") == {"wings": 0, "rooms": 1, "drawers": 2}
    assert edges(store) == [], "the room's similar_to edges went with it"
    assert palace.hierarchy.delete_wing(ctx, "w") == {"wings": 1, "rooms": 1, "drawers": 1}
    assert drawer_ids(store) == set()


def test_a_job_that_ends_releases_the_delete(
    palace: Palace, ctx: RequestContext, store: Store
) -> None:
    filled(palace, ctx)
    job_id = add_job(store, "running", CHECKPOINT_KIND)
    with pytest.raises(PalaceBusy):
        palace.hierarchy.delete_wing(ctx, "w")
    store.query("UPDATE type::record('job', $id) SET status = 'completed'", {"id": job_id})
    assert palace.hierarchy.delete_wing(ctx, "w") == {"wings": 1, "rooms": 1, "drawers": 2}


def test_deletes_need_full_mode(palace: Palace, ctx: RequestContext) -> None:
    filled(palace, ctx)
    read_only = RequestContext.build(mode="read_only")
    with pytest.raises(ModeForbidden):
        palace.hierarchy.delete_room(read_only, "w", "r")
    with pytest.raises(ModeForbidden):
        palace.hierarchy.delete_wing(read_only, "w")
    assert palace.hierarchy.show_wing(ctx, "w")["counts"] == {"rooms": 1, "drawers": 2}


# Checkpoint payload ------------------------------------------------------------------------

ITEM = {"destination": "preference", "content": "Always run the formatter.", "tags": ["style"]}


def test_parse_payload_fills_in_the_defaults() -> None:
    parsed = checkpoint.parse_payload({"items": [ITEM]})
    assert parsed == {
        "items": [
            {
                "destination": "preference",
                "content": "Always run the formatter.",
                "tags": ["style"],
                "source": {"kind": "manual"},
            }
        ]
    }


def test_parse_payload_keeps_every_known_field() -> None:
    item = {
        "destination": "project",
        "wing": "memcastle",
        "name": "notes/formatting",
        "content": "  Verbatim, spaces kept.  ",
        "tags": [],
        "source": {"kind": "file", "uri": "file:///x", "agent": "opencode"},
        "fact": {"op": "link", "kind": "refines", "reason": "same rule", "confidence": 1},
    }
    [parsed] = checkpoint.parse_payload({"items": [item]})["items"]
    assert parsed == item


def test_parse_payload_accepts_a_json_string() -> None:
    payload = {"items": [ITEM, {**ITEM, "destination": "diary", "wing": None, "name": None}]}
    assert checkpoint.parse_payload(json.dumps(payload)) == checkpoint.parse_payload(payload)


def test_parse_payload_accepts_the_documented_example() -> None:
    example = {
        "items": [
            {
                "destination": "preference",
                "wing": None,
                "content": "Always run the formatter before committing.",
                "name": None,
                "tags": ["workflow"],
                "source": {"kind": "manual", "uri": None, "agent": "opencode"},
                "fact": None,
            }
        ]
    }
    [item] = checkpoint.parse_payload(example)["items"]
    assert item["source"] == {"kind": "manual", "agent": "opencode"}
    assert "wing" not in item and "name" not in item and "fact" not in item


def items_of(*items: object) -> dict[str, Any]:
    return {"items": list(items)}


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param("{not json", id="string-not-json"),
        pytest.param(json.dumps(json.dumps({"items": [ITEM]})), id="json-of-a-string"),
        pytest.param(None, id="missing"),
        pytest.param([ITEM], id="list"),
        pytest.param(3, id="number"),
        pytest.param({}, id="no-items"),
        pytest.param({"items": []}, id="empty-items"),
        pytest.param({"items": ITEM}, id="items-not-list"),
        pytest.param({"items": [ITEM], "extra": 1}, id="unknown-key"),
        pytest.param(items_of("text"), id="item-not-object"),
        pytest.param(items_of({**ITEM, "colour": "red"}), id="item-unknown-key"),
        pytest.param(items_of({**ITEM, "destination": "elsewhere"}), id="bad-destination"),
        pytest.param(items_of({k: v for k, v in ITEM.items() if k != "destination"}), id="no-dest"),
        pytest.param(items_of({**ITEM, "content": "  \n"}), id="blank-content"),
        pytest.param(items_of({**ITEM, "content": 42}), id="content-not-string"),
        pytest.param(items_of({k: v for k, v in ITEM.items() if k != "content"}), id="no-content"),
        pytest.param(items_of({**ITEM, "tags": "style"}), id="tags-not-list"),
        pytest.param(items_of({**ITEM, "tags": ["ok", 3]}), id="tag-not-string"),
        pytest.param(items_of({**ITEM, "source": "manual"}), id="source-not-object"),
        pytest.param(items_of({**ITEM, "source": {"kind": "transcript"}}), id="source-kind"),
        pytest.param(items_of({**ITEM, "source": {"uri": 5}}), id="source-uri-not-string"),
        pytest.param(items_of({**ITEM, "source": {"kind": "manual", "who": "x"}}), id="src-key"),
        pytest.param(items_of({k: v for k, v in ITEM.items() if k != "tags"}), id="no-tags"),
        pytest.param(items_of({**ITEM, "tags": None}), id="tags-null"),
        pytest.param(items_of({**ITEM, "wing": 5}), id="wing-not-string"),
        pytest.param(items_of({**ITEM, "wing": "a/b"}), id="wing-with-slash"),
        pytest.param(items_of({**ITEM, "wing": ""}), id="wing-empty"),
        pytest.param(items_of({**ITEM, "name": " padded"}), id="name-padded"),
        pytest.param(items_of({**ITEM, "name": "a/../b"}), id="name-dotdot"),
        pytest.param(items_of({**ITEM, "name": str(uuid.uuid4())}), id="name-uuid"),
        pytest.param(items_of({**ITEM, "name": 7}), id="name-not-string"),
        pytest.param(items_of({**ITEM, "fact": {"op": "merge"}}), id="fact-op"),
        pytest.param(items_of({**ITEM, "fact": "add"}), id="fact-not-object"),
        pytest.param(items_of({**ITEM, "fact": {"op": "add", "confidence": 1.5}}), id="conf>1"),
        pytest.param(items_of({**ITEM, "fact": {"op": "add", "confidence": -0.1}}), id="conf<0"),
        pytest.param(items_of({**ITEM, "fact": {"op": "add", "confidence": True}}), id="conf-bool"),
        pytest.param(items_of({**ITEM, "fact": {"op": "add", "confidence": "1"}}), id="conf-str"),
        pytest.param(
            '{"items": [{"destination": "general", "content": "x", "tags": [], "fact": '
            '{"op": "add", "confidence": NaN}}]}',
            id="conf-nan",
        ),
        pytest.param(
            items_of({**ITEM, "fact": {"op": "link", "kind": "agrees", "reason": "r"}}),
            id="link-kind",
        ),
        pytest.param(
            items_of({**ITEM, "fact": {"op": "link", "kind": "confirms", "reason": " "}}),
            id="link-reason-blank",
        ),
        pytest.param(
            items_of({**ITEM, "fact": {"op": "link", "kind": "confirms"}}), id="link-no-reason"
        ),
        pytest.param(items_of(ITEM, {**ITEM, "content": ""}), id="second-item-bad"),
        pytest.param(items_of(*[ITEM] * (checkpoint.MAX_ITEMS + 1)), id="too-many-items"),
    ],
)
def test_parse_payload_refuses_malformed_shapes(payload: object) -> None:
    with pytest.raises(InputInvalid) as caught:
        checkpoint.parse_payload(payload)
    assert caught.value.field == "payload"
    assert caught.value.code == "memcastle::input::invalid"
    assert caught.value.status == 400


@pytest.mark.parametrize(
    ("item", "problem"),
    [
        ({**ITEM, "content": ""}, "`content`"),
        ({k: v for k, v in ITEM.items() if k != "tags"}, "`tags`"),
        ({**ITEM, "fact": {"op": "add", "confidence": float("nan")}}, "`fact.confidence`"),
        ({**ITEM, "name": ".."}, "drawer name"),
        ({**ITEM, "source": {"kind": "transcript"}}, "`source`"),
    ],
)
def test_parse_payload_names_the_item_and_the_problem(item: dict, problem: str) -> None:
    with pytest.raises(InputInvalid) as caught:
        checkpoint.parse_payload(items_of(ITEM, ITEM, item))
    assert "item 2" in caught.value.message
    assert problem in caught.value.message


@pytest.mark.parametrize("confidence", [0, 0.5, 1, None])
def test_fact_confidence_in_range_is_accepted(confidence: float | None) -> None:
    fact = {"op": "add", "subject": "s", "predicate": "p", "object": "o", "confidence": confidence}
    [item] = checkpoint.parse_payload(items_of({**ITEM, "fact": fact}))["items"]
    assert item["fact"] == fact


def test_parse_checks_the_job_parameters() -> None:
    assert checkpoint.parse({"payload": {"items": [ITEM]}}, None) == {
        "payload": checkpoint.parse_payload({"items": [ITEM]})
    }
    assert checkpoint.parse({"payload": {"items": [ITEM]}, "emergency": True}, None)["emergency"]
    assert "emergency" not in checkpoint.parse(
        {"payload": {"items": [ITEM]}, "emergency": False}, None
    )
    with pytest.raises(InputInvalid) as unknown:
        checkpoint.parse({"payload": {"items": [ITEM]}, "priority": 1}, None)
    assert unknown.value.field == "priority"
    with pytest.raises(InputInvalid) as emergency:
        checkpoint.parse({"payload": {"items": [ITEM]}, "emergency": "yes"}, None)
    assert emergency.value.field == "emergency"
    with pytest.raises(InputInvalid) as missing:
        checkpoint.parse({}, None)
    assert missing.value.field == "payload"


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ({"destination": "preference"}, ("preferences", "entries")),
        ({"destination": "project"}, ("projects", "entries")),
        ({"destination": "diary"}, ("diary", "diary")),
        ({"destination": "general"}, ("general", "entries")),
        ({"destination": "preference", "wing": "work"}, ("work", "entries")),
        ({"destination": "diary", "wing": "work"}, ("work", "diary")),
        ({"destination": "general", "wing": None}, ("general", "entries")),
    ],
)
def test_destination_of(item: dict, expected: tuple[str, str]) -> None:
    assert checkpoint.destination_of(item) == expected


def test_with_deduplication_off_a_batch_links_nothing_within_itself(
    store: Store, ctx: RequestContext
) -> None:
    palace = build(store, dedup=DedupConfig(enabled=False))
    text = "We deploy the backend service every Tuesday morning."
    filed = palace.filing.file_batch(
        ctx,
        [
            ("w", "r", Filing(content=text)),
            ("w", "r", Filing(content=text.lower())),
            ("w", "r", Filing(content=text)),
        ],
    )
    assert [outcome.created for outcome in filed] == [True, True, True]
    assert len(drawer_ids(store)) == 3
    assert edges(store) == []
