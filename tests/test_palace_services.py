"""The palace services against the real engine (`mem://`): naming, idempotence, counts, deletes."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from kernel.context import RequestContext
from kernel.errors import InputInvalid
from kernel.store import Statement, Store
from palace.filing import NOT_RUN, DrawerNameTaken, Filing
from palace.hierarchy import DrawerNotFound, RoomNotFound, WingNotFound
from palace.names import PathInvalid
from tests.support.palace_services import Palace


def test_create_wing_is_idempotent(palace: Palace, ctx: RequestContext) -> None:
    first = palace.hierarchy.create_wing(ctx, {"name": "work", "description": "day job"})
    again = palace.hierarchy.create_wing(ctx, {"name": "work"})
    assert first["created"] is True
    assert again["created"] is False
    assert again["id"] == first["id"]
    assert again["description"] == "day job"
    assert first["counts"] == {"rooms": 0, "drawers": 0}


@pytest.mark.parametrize(
    "name",
    ["", " padded", "trailing ", "a/b", "bell\x07", "0b2e6f1c-9a8b-4f3e-8d2c-1a2b3c4d5e6f"],
)
def test_wing_names_follow_the_rules(palace: Palace, ctx: RequestContext, name: str) -> None:
    with pytest.raises((PathInvalid, InputInvalid)):
        palace.hierarchy.create_wing(ctx, {"name": name})
    assert palace.hierarchy.list_wings(ctx) == {"wings": []}


def test_wing_resolves_by_name_then_uuid(palace: Palace, ctx: RequestContext) -> None:
    wing = palace.hierarchy.create_wing(ctx, {"name": "work"})
    assert palace.hierarchy.show_wing(ctx, "work")["id"] == wing["id"]
    assert palace.hierarchy.show_wing(ctx, wing["id"])["name"] == "work"
    assert palace.hierarchy.show_wing(ctx, wing["id"].upper())["name"] == "work"
    with pytest.raises(WingNotFound) as caught:
        palace.hierarchy.show_wing(ctx, "nope")
    assert caught.value.status == 404
    assert caught.value.code == "memcastle::palace::wing_not_found"


def test_room_create_makes_the_missing_wing(palace: Palace, ctx: RequestContext) -> None:
    room = palace.hierarchy.create_room(ctx, "new-wing", {"name": "notes"})
    assert room["created"] is True
    assert palace.hierarchy.show_wing(ctx, "new-wing")["counts"] == {"rooms": 1, "drawers": 0}
    assert palace.hierarchy.create_room(ctx, "new-wing", {"name": "notes"})["created"] is False


def test_room_uuid_resolves_only_inside_its_wing(palace: Palace, ctx: RequestContext) -> None:
    room = palace.hierarchy.create_room(ctx, "a", {"name": "notes"})
    palace.hierarchy.create_wing(ctx, {"name": "b"})
    assert palace.hierarchy.show_room(ctx, "a", room["id"])["name"] == "notes"
    with pytest.raises(RoomNotFound):
        palace.hierarchy.show_room(ctx, "b", room["id"])


def test_drawer_is_stored_verbatim(palace: Palace, ctx: RequestContext) -> None:
    content = "  Always run the formatter.\n\n"
    drawer = palace.filing.create_drawer(
        ctx,
        "work",
        "style",
        {"content": content, "tags": ["workflow"], "source": {"kind": "manual", "agent": "a1"}},
    )
    assert drawer["created"] is True
    stored = palace.hierarchy.show_drawer_by_id(ctx, drawer["id"])
    assert stored["content"] == content
    assert len(stored["content_hash"]) == 64
    assert stored["tags"] == ["workflow"]
    assert stored["source"] == {"kind": "manual", "agent": "a1"}
    assert stored["provenance"] == {"requested_by": "http", "job_id": None}
    assert stored["valid_to"] is None
    assert stored["valid_from"] == stored["created_at"]
    assert stored["name"] is None


def test_requested_by_records_the_channel(palace: Palace) -> None:
    cli = RequestContext.build(requested_by="cli")
    drawer = palace.filing.create_drawer(cli, "w", "r", {"content": "from the cli"})
    assert drawer["provenance"]["requested_by"] == "cli"


def test_drawer_names_may_hold_slashes(palace: Palace, ctx: RequestContext) -> None:
    palace.filing.create_drawer(
        ctx, "code", "files", {"content": "fn main() {}", "name": "src/main.rs"}
    )
    assert (
        palace.hierarchy.show_drawer(ctx, "code", "files", "src/main.rs")["content"]
        == "fn main() {}"
    )
    with pytest.raises(PathInvalid):
        palace.filing.create_drawer(ctx, "code", "files", {"content": "x", "name": "src//main.rs"})
    with pytest.raises(PathInvalid):
        palace.filing.create_drawer(ctx, "code", "files", {"content": "x", "name": "../etc"})


def test_same_name_same_content_is_a_no_op(palace: Palace, ctx: RequestContext) -> None:
    first = palace.filing.create_drawer(ctx, "w", "r", {"content": "same", "name": "n"})
    again = palace.filing.create_drawer(ctx, "w", "r", {"content": "same", "name": "n"})
    assert again["created"] is False
    assert again["id"] == first["id"]


def test_a_name_held_by_other_content_is_refused(palace: Palace, ctx: RequestContext) -> None:
    palace.filing.create_drawer(ctx, "w", "r", {"content": "one", "name": "n"})
    with pytest.raises(DrawerNameTaken) as caught:
        palace.filing.create_drawer(ctx, "w", "r", {"content": "two", "name": "n"})
    assert caught.value.status == 409
    assert caught.value.code == "memcastle::palace::drawer_name_taken"
    assert palace.hierarchy.show_room(ctx, "w", "r")["counts"] == {"drawers": 1}


def test_an_unnamed_exact_copy_is_not_stored_twice(palace: Palace, ctx: RequestContext) -> None:
    first = palace.filing.create_drawer(ctx, "w", "r", {"content": "remember this"})
    again = palace.filing.create_drawer(ctx, "w", "r", {"content": "remember this"})
    elsewhere = palace.filing.create_drawer(ctx, "w", "other", {"content": "remember this"})
    assert again == {**first, "created": False}
    assert elsewhere["created"] is True


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "content"),
        ({"content": "   \n"}, "content"),
        ({"content": 7}, "content"),
        ({"content": "x", "tags": "a"}, "tags"),
        ({"content": "x", "tags": [1]}, "tags"),
        ({"content": "x", "source": {"kind": "telepathy"}}, "source.kind"),
        ({"content": "x", "valid_from": "yesterday"}, "valid_from"),
        ({"content": "x", "colour": "red"}, "colour"),
        ({"content": "x", "requested_by": ""}, "requested_by"),
    ],
)
def test_bad_drawer_input_names_the_field_and_writes_nothing(
    palace: Palace, body: dict, field: str
) -> None:
    with pytest.raises(InputInvalid) as caught:
        ctx = RequestContext.build(requested_by=body.get("requested_by"))
        palace.filing.create_drawer(ctx, "w", "r", body)
    assert caught.value.field == field
    assert caught.value.status == 400
    assert field in caught.value.message
    assert palace.hierarchy.list_wings(RequestContext.build()) == {"wings": []}


def test_valid_from_takes_a_date_or_a_timestamp(palace: Palace, ctx: RequestContext) -> None:
    dated = palace.filing.create_drawer(ctx, "w", "r", {"content": "a", "valid_from": "2025-01-01"})
    stamped = palace.filing.create_drawer(
        ctx, "w", "r", {"content": "b", "valid_from": "2025-06-01T12:30:00+02:00"}
    )
    assert dated["valid_from"] == dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
    assert stamped["valid_from"] == dt.datetime(2025, 6, 1, 10, 30, tzinfo=dt.UTC)


def test_counts_follow_writes_and_deletes(palace: Palace, ctx: RequestContext) -> None:
    for room in ("a", "b"):
        for index in range(3):
            palace.filing.create_drawer(ctx, "w", room, {"content": f"{room} {index}"})
    palace.filing.create_drawer(ctx, "other", "a", {"content": "elsewhere"})
    wings = {wing["name"]: wing["counts"] for wing in palace.hierarchy.list_wings(ctx)["wings"]}
    assert wings == {"other": {"rooms": 1, "drawers": 1}, "w": {"rooms": 2, "drawers": 6}}
    rooms = palace.hierarchy.list_rooms(ctx, "w")["rooms"]
    assert [(room["name"], room["counts"]["drawers"]) for room in rooms] == [("a", 3), ("b", 3)]

    assert palace.hierarchy.delete_room(ctx, "w", "a") == {"wings": 0, "rooms": 1, "drawers": 3}
    assert palace.hierarchy.show_wing(ctx, "w")["counts"] == {"rooms": 1, "drawers": 3}
    assert palace.hierarchy.delete_wing(ctx, "w") == {"wings": 1, "rooms": 1, "drawers": 3}
    assert [wing["name"] for wing in palace.hierarchy.list_wings(ctx)["wings"]] == ["other"]
    assert palace.hierarchy.drawer_total() == 1


def test_drawer_delete_removes_one(palace: Palace, ctx: RequestContext) -> None:
    kept = palace.filing.create_drawer(ctx, "w", "r", {"content": "kept"})
    gone = palace.filing.create_drawer(ctx, "w", "r", {"content": "gone", "name": "gone"})
    assert palace.hierarchy.delete_drawer(ctx, "w", "r", "gone") == {
        "wings": 0,
        "rooms": 0,
        "drawers": 1,
    }
    with pytest.raises(DrawerNotFound):
        palace.hierarchy.show_drawer_by_id(ctx, gone["id"])
    assert palace.hierarchy.show_drawer_by_id(ctx, kept["id"])["content"] == "kept"
    assert palace.hierarchy.show_room(ctx, "w", "r")["counts"] == {"drawers": 1}


def test_listing_pages_and_never_carries_content(palace: Palace, ctx: RequestContext) -> None:
    long_text = "word " * 100
    for index in range(5):
        palace.filing.create_drawer(ctx, "w", "r", {"content": f"{index} {long_text}"})
    page = palace.hierarchy.list_drawers(ctx, "w", "r", limit="2", offset="1")
    assert page["total"] == 5
    assert (page["limit"], page["offset"]) == (2, 1)
    assert len(page["drawers"]) == 2
    for entry in page["drawers"]:
        assert "content" not in entry
        assert entry["preview"].endswith("…")
        assert len(entry["preview"]) <= 121
        assert entry["length"] == len(f"0 {long_text}")
    assert palace.hierarchy.list_drawers(ctx, "w", "r", limit=0)["limit"] == 50
    assert palace.hierarchy.list_drawers(ctx, "w", "r", limit=5000)["limit"] == 200
    with pytest.raises(InputInvalid):
        palace.hierarchy.list_drawers(ctx, "w", "r", limit="-1")
    with pytest.raises(InputInvalid):
        palace.hierarchy.list_drawers(ctx, "w", "r", limit="ten")


def test_every_page_of_a_room_is_its_slice_of_the_whole_listing(
    palace: Palace, ctx: RequestContext
) -> None:
    """Pages past the middle are read backwards from the end of the index: the same slice."""
    for index in range(7):
        palace.filing.create_drawer(ctx, "w", "r", {"content": f"drawer {index}"})
    whole = [entry["id"] for entry in palace.hierarchy.list_drawers(ctx, "w", "r")["drawers"]]
    assert len(whole) == 7
    for limit in (1, 2, 3, 7):
        for offset in range(0, 10):
            page = palace.hierarchy.list_drawers(ctx, "w", "r", limit=limit, offset=offset)
            assert [entry["id"] for entry in page["drawers"]] == whole[offset : offset + limit]
            assert page["total"] == 7
    assert palace.hierarchy.list_drawers(ctx, "w", "r", offset=100)["drawers"] == []


def test_a_field_stored_by_another_version_is_read_but_never_shown(
    palace: Palace, ctx: RequestContext
) -> None:
    drawer = palace.filing.create_drawer(ctx, "w", "r", {"content": "kept as it was"})
    palace.store.query(
        "UPDATE type::record('drawer', $id) SET legacy = 'written long ago'", {"id": drawer["id"]}
    )
    shown = palace.hierarchy.show_drawer_by_id(ctx, drawer["id"])
    assert "legacy" not in shown
    assert shown["content"] == "kept as it was"
    listed = palace.hierarchy.list_drawers(ctx, "w", "r")["drawers"]
    assert [entry["id"] for entry in listed] == [drawer["id"]]
    assert "legacy" not in listed[0]


def test_drawer_by_id_needs_a_uuid(palace: Palace, ctx: RequestContext) -> None:
    with pytest.raises(InputInvalid) as caught:
        palace.hierarchy.show_drawer_by_id(ctx, "not-a-uuid")
    assert caught.value.field == "id"
    with pytest.raises(DrawerNotFound):
        palace.hierarchy.show_drawer_by_id(ctx, "0b2e6f1c-9a8b-4f3e-8d2c-1a2b3c4d5e6f")


def test_reads_of_unknown_places_create_nothing(palace: Palace, ctx: RequestContext) -> None:
    with pytest.raises(WingNotFound):
        palace.hierarchy.list_rooms(ctx, "ghost")
    with pytest.raises(WingNotFound):
        palace.hierarchy.list_drawers(ctx, "ghost", "room")
    assert palace.hierarchy.list_wings(ctx) == {"wings": []}


# Writes keep the rooms they resolved, and check them in the batch's one read.


def filed(palace: Palace, ctx: RequestContext, room: str, content: str) -> dict:
    drawer, _ = palace.filing.file(ctx, "work", room, Filing(content=content))
    return drawer


def test_a_batch_into_rooms_written_before_reads_once_then_writes(
    palace: Palace, ctx: RequestContext, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    filed(palace, ctx, "notes", "the first note makes the room")
    queries: list[str] = []
    query, transaction = store.query, store.transaction

    def counted(sql: str, variables: Any = None) -> list[Any]:
        queries.append(sql)
        return query(sql, variables)

    def counted_transaction(sql: str, variables: Any = None) -> Any:
        queries.append(sql)
        return transaction(sql, variables)

    monkeypatch.setattr(store, "query", counted)
    monkeypatch.setattr(store, "transaction", counted_transaction)
    outcomes = palace.filing.file_batch(
        ctx, [("work", "notes", Filing(content=f"note {n}", name=f"n{n}")) for n in range(5)]
    )
    assert [outcome.created for outcome in outcomes] == [True] * 5
    assert len(queries) == 2, "copy candidates, names and the room in one read; one write"


def test_a_room_deleted_by_another_process_is_resolved_again(
    palace: Palace, ctx: RequestContext, store: Store
) -> None:
    first = filed(palace, ctx, "notes", "a note in the first room")
    # Another daemon on the same store deletes the room this service keeps.
    store.query("DELETE type::record('room', $id)", {"id": first["room"]})

    second = filed(palace, ctx, "notes", "a note after the room was deleted")

    assert second["room"] != first["room"]
    assert palace.hierarchy.show_room(ctx, "work", "notes")["id"] == second["room"]


def test_then_commits_with_the_batch_and_returns_what_it_returned(
    palace: Palace, ctx: RequestContext, store: Store
) -> None:
    store.query("CREATE type::record('marker', 'm') SET ran = false")
    batch = palace.filing.prepare_batch(ctx, [("work", "notes", Filing(content="a note"))])

    outcomes, ran = palace.filing.write_batch(
        ctx, batch, Statement("UPDATE type::record('marker', 'm') SET ran = true;", {})
    )

    assert [outcome.created for outcome in outcomes] == [True]
    assert ran == [{"id": "m", "ran": True}]


def test_a_name_taken_after_the_batch_was_judged_is_filed_again_without_then(
    palace: Palace, ctx: RequestContext, store: Store
) -> None:
    store.query("CREATE type::record('marker', 'm') SET ran = false")
    batch = palace.filing.prepare_batch(
        ctx,
        [
            ("work", "notes", Filing(content="our plan", name="plan")),
            ("work", "notes", Filing(content="another note")),
        ],
    )
    # Another request takes the name meanwhile.
    palace.filing.file(ctx, "work", "notes", Filing(content="their plan", name="plan"))

    outcomes, ran = palace.filing.write_batch(
        ctx, batch, Statement("UPDATE type::record('marker', 'm') SET ran = true;", {})
    )

    assert ran is NOT_RUN
    assert isinstance(outcomes[0].error, DrawerNameTaken)
    assert outcomes[1].created
    assert store.one("SELECT VALUE ran FROM ONLY type::record('marker', 'm')") is False


# What the hierarchy offers the other services: stored drawers and rooms, read in one trip.


def test_drawer_is_found_by_its_id_in_any_spelling(palace: Palace, ctx: RequestContext) -> None:
    drawer = filed(palace, ctx, "notes", "a note to find again")
    assert palace.hierarchy.drawer(drawer["id"].upper())["content"] == "a note to find again"
    with pytest.raises(DrawerNotFound) as missing:
        palace.hierarchy.drawer("0b2e6f1c-9a8b-4f3e-8d2c-1a2b3c4d5e6f")
    assert missing.value.code == "memcastle::palace::drawer_not_found"
    with pytest.raises(InputInvalid):
        palace.hierarchy.drawer("not-a-uuid")


def test_drawers_by_ids_leaves_out_the_missing(palace: Palace, ctx: RequestContext) -> None:
    first = filed(palace, ctx, "notes", "the first note")
    second = filed(palace, ctx, "other", "a note in another room")
    gone = filed(palace, ctx, "notes", "a note deleted since its id was read")
    palace.hierarchy.delete_drawer(ctx, "work", "notes", gone["id"])
    found = palace.hierarchy.drawers_by_ids([first["id"], second["id"], gone["id"]])
    assert {drawer_id: row["content"] for drawer_id, row in found.items()} == {
        first["id"]: "the first note",
        second["id"]: "a note in another room",
    }
    assert palace.hierarchy.drawers_by_ids([]) == {}


def test_existing_drawer_ids_are_those_stored(palace: Palace, ctx: RequestContext) -> None:
    kept = filed(palace, ctx, "notes", "a note that stays")
    never = "0b2e6f1c-9a8b-4f3e-8d2c-1a2b3c4d5e6f"
    assert palace.hierarchy.existing_drawer_ids([kept["id"], never]) == {kept["id"]}


def test_drawer_total_counts_every_wing(palace: Palace, ctx: RequestContext) -> None:
    assert palace.hierarchy.drawer_total() == 0
    filed(palace, ctx, "notes", "one")
    palace.filing.file(ctx, "home", "notes", Filing(content="two"))
    assert palace.hierarchy.drawer_total() == 2


def test_rooms_by_names_finds_only_existing_rooms(palace: Palace, ctx: RequestContext) -> None:
    notes = palace.hierarchy.create_room(ctx, "work", {"name": "notes"})
    palace.hierarchy.create_room(ctx, "home", {"name": "chores"})
    found = palace.hierarchy.rooms_by_names([("work", "notes"), ("work", "chores"), ("x", "y")])
    assert list(found) == [("work", "notes")]
    assert found[("work", "notes")]["id"] == notes["id"]


def test_ensure_place_creates_what_is_missing_once(palace: Palace, ctx: RequestContext) -> None:
    room, created = palace.hierarchy.ensure_place("work", "notes", "what I wrote down")
    again, created_again = palace.hierarchy.ensure_place("work", "notes")
    assert (created, created_again) == (True, False)
    assert again == room
    assert room["description"] == "what I wrote down"
    with pytest.raises(PathInvalid):
        palace.hierarchy.ensure_place("home", "bad/room")
    with pytest.raises(WingNotFound):
        palace.hierarchy.find_wing("home")
