"""The shapes of the palace's answers: wings, rooms, drawers, their corrections and the journal.

Each renders what a service answers and is what the OpenAPI document says of it (see
`kernel.shapes`). A shape explains itself in comments: a docstring would become its
component's description.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers

from kernel.shapes import Shape
from palace.drawers import SOURCE_KINDS, preview, read_source


class Counts(Shape):
    rooms = serializers.IntegerField()
    drawers = serializers.IntegerField()


class Wing(Shape):
    id = serializers.UUIDField()
    name = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    counts = Counts()


# The answer of a create: the wing, and whether this request made it (api.md "Wings, rooms
# and drawers").
class WingCreated(Wing):
    created = serializers.BooleanField(help_text="false when it existed already (a 200)")


class WingList(Shape):
    wings = serializers.ListField(child=Wing())


class RoomCounts(Shape):
    drawers = serializers.IntegerField()


class Room(Shape):
    id = serializers.UUIDField()
    wing = serializers.UUIDField()
    name = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    counts = RoomCounts()


class RoomCreated(Room):
    created = serializers.BooleanField(help_text="false when it existed already (a 200)")


class NamedRef(Shape):
    id = serializers.UUIDField()
    name = serializers.CharField()


class RoomList(Shape):
    wing = NamedRef()
    rooms = serializers.ListField(child=Room())


class DrawerSource(Shape):
    kind = serializers.ChoiceField(list(SOURCE_KINDS))
    uri = serializers.CharField(required=False)
    agent = serializers.CharField(required=False)
    # A mined drawer's document, as its source describes it: free-form by design.
    origin = serializers.DictField(
        required=False,
        help_text="a mined drawer's document: source_id, source, document, chunk, revision",
    )


class DrawerProvenance(Shape):
    requested_by = serializers.CharField(help_text="the channel of the write: cli, mcp, http...")
    job_id = serializers.UUIDField(allow_null=True, help_text="the job that filed it")


class Drawer(Shape):
    id = serializers.UUIDField()
    wing = serializers.UUIDField()
    room = serializers.UUIDField()
    name = serializers.CharField(allow_null=True)
    content = serializers.CharField()
    content_hash = serializers.CharField()
    fingerprint = serializers.CharField()
    # Typed as DRF's `Field.source` to mypy; the serializer's metaclass takes declared fields
    # out of the class, so the name is the field's alone.
    source = DrawerSource()  # type: ignore[assignment]
    tags = serializers.ListField(child=serializers.CharField())
    provenance = DrawerProvenance()
    valid_from = serializers.DateTimeField()
    valid_to = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    # The links of a correction (api.md "History"), each present only once it is made.
    supersedes = serializers.UUIDField(required=False, help_text="the version this one replaced")
    superseded_by = serializers.UUIDField(
        required=False, help_text="the version that replaced this one"
    )


# A drawer filed by a create, a note or a diary entry, and whether this request filed it.
class DrawerFiled(Drawer):
    created = serializers.BooleanField(
        help_text="false when an identical drawer was already there (a 200)"
    )


# A listing never carries whole contents: a preview stands for it.
class DrawerListing(Shape):
    id = serializers.UUIDField()
    wing = serializers.UUIDField()
    room = serializers.UUIDField()
    name = serializers.CharField(allow_null=True)
    preview = serializers.CharField(help_text="the start of the content, never all of it")
    length = serializers.IntegerField(help_text="characters of content")
    # Typed as DRF's `Field.source` to mypy; the serializer's metaclass takes declared fields
    # out of the class, so the name is the field's alone.
    source = DrawerSource()  # type: ignore[assignment]
    tags = serializers.ListField(child=serializers.CharField())
    valid_from = serializers.DateTimeField()
    valid_to = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    supersedes = serializers.UUIDField(required=False, help_text="the version this one replaced")
    superseded_by = serializers.UUIDField(
        required=False, help_text="the version that replaced this one"
    )


def _shown_fields(shape: type[Shape], row: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a stored drawer an answer shows: those `shape` declares and that are set
    (not what the daemon keeps for its own lookups); `name` and `valid_to` null when unset, in
    the place answers have always had them (before what an answer adds to a drawer, such as
    `created` or a hit's `score`); and the source as this version reads it."""
    values = {key: value for key, value in shape.select(row).items() if value is not None}
    values["name"] = row.get("name")
    values["valid_to"] = row.get("valid_to")
    values["source"] = read_source(row.get("source"))
    return values


def drawer_values(row: Mapping[str, Any]) -> dict[str, Any]:
    """The stored drawer verbatim, as `Drawer` renders it: its provenance says `job_id: null`
    when no job filed it."""
    values = _shown_fields(Drawer, row)
    values["provenance"] = {"job_id": None, **(row.get("provenance") or {})}
    return values


def listing_values(row: Mapping[str, Any]) -> dict[str, Any]:
    """A listing entry, as `DrawerListing` renders it: everything but the content, which only a
    preview stands for."""
    values = _shown_fields(
        DrawerListing, {key: value for key, value in row.items() if key not in ("head", "length")}
    )
    values["preview"] = preview(row["head"])
    values["length"] = row["length"]
    return values


class DrawerList(Shape):
    wing = NamedRef()
    room = NamedRef()
    drawers = serializers.ListField(child=DrawerListing())
    total = serializers.IntegerField()
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()


class Deleted(Shape):
    wings = serializers.IntegerField()
    rooms = serializers.IntegerField()
    drawers = serializers.IntegerField()


class Superseded(Shape):
    superseded = Drawer()
    replacement = Drawer(allow_null=True, help_text="null when the drawer was only invalidated")


class DrawerHistory(Shape):
    drawer = serializers.UUIDField(help_text="the id asked about")
    versions = serializers.ListField(child=Drawer())


class SimilarDrawer(Shape):
    drawer = Drawer()
    side = serializers.ChoiceField(["older", "newer"])
    kind = serializers.ChoiceField(["exact", "normalized", "near"])
    similarity = serializers.FloatField()
    signals = serializers.DictField()
    created_at = serializers.DateTimeField()


class DrawerDuplicates(Shape):
    drawer = Drawer()
    similar = serializers.ListField(child=SimilarDrawer())


class Diary(Shape):
    agent_identity = serializers.CharField()
    wing = serializers.CharField(allow_null=True)
    entries = serializers.ListField(child=Drawer())
    limit = serializers.IntegerField()


class WakeUp(Shape):
    diary = Drawer(allow_null=True, help_text="null without a wing, or with no entry in it")
    recent_highlights = serializers.ListField(child=Drawer())
    generated_at = serializers.DateTimeField()
