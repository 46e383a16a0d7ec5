"""REST views for wings, rooms and drawers, their corrections and the journal: parse, call the
service, render."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from kernel.rest import (
    MODE_PARAMETER,
    MemCastleView,
    created_response,
    errors,
    request_context,
    service,
)
from palace.drawers import SOURCE_KINDS
from palace.filing import FilingService
from palace.hierarchy import HierarchyService
from palace.journal import JournalService
from palace.revisions import RevisionService
from palace.shapes import (
    Deleted,
    Diary,
    Drawer,
    DrawerDuplicates,
    DrawerFiled,
    DrawerHistory,
    DrawerList,
    Room,
    RoomCreated,
    RoomList,
    Superseded,
    WakeUp,
    Wing,
    WingCreated,
    WingList,
)

NAMED_BODY = inline_serializer(
    "NamedBody",
    {
        "name": serializers.CharField(),
        "description": serializers.CharField(required=False),
        "requested_by": serializers.CharField(required=False),
    },
)
# What a request may say of a drawer's source (a mined drawer's `origin` is its miner's): the
# OpenAPI document names it DrawerSourceRequest.
SOURCE = inline_serializer(
    "DrawerSource",
    {
        "kind": serializers.ChoiceField(
            list(SOURCE_KINDS), required=False, help_text="manual when absent"
        ),
        "uri": serializers.CharField(required=False),
        "agent": serializers.CharField(required=False),
    },
    required=False,
    help_text='{"kind": "manual"} when absent',
)
DRAWER_BODY = inline_serializer(
    "DrawerBody",
    {
        "content": serializers.CharField(help_text="verbatim text; never trimmed"),
        "name": serializers.CharField(required=False),
        "tags": serializers.ListField(child=serializers.CharField(), required=False),
        "source": SOURCE,
        "valid_from": serializers.DateTimeField(
            required=False, help_text="RFC 3339 or YYYY-MM-DD; now when absent"
        ),
        "requested_by": serializers.CharField(required=False),
    },
)


# The views of wings, rooms and drawers call `HierarchyService`; filing a drawer and listing
# its likely copies call `FilingService`.
class HierarchyView(MemCastleView):
    hierarchy: HierarchyService = service()


class WingsView(HierarchyView):
    @extend_schema(
        summary="List wings with their room and drawer counts",
        parameters=[MODE_PARAMETER],
        responses={200: WingList, **errors(400, 403)},
    )
    def get(self, request: Request) -> Response:
        return Response(self.hierarchy.list_wings(request_context(request)))

    @extend_schema(
        summary="Create a wing (200 with created=false when it exists)",
        parameters=[MODE_PARAMETER],
        request=NAMED_BODY,
        responses={201: WingCreated, 200: WingCreated, **errors(400, 403)},
    )
    def post(self, request: Request) -> Response:
        ctx = request_context(request, body=request.data)
        return created_response(self.hierarchy.create_wing(ctx, request.data))


class WingView(HierarchyView):
    @extend_schema(
        summary="Show a wing by name or UUID",
        parameters=[MODE_PARAMETER],
        responses={200: Wing, **errors(400, 403, 404)},
    )
    def get(self, request: Request, wing: str) -> Response:
        return Response(self.hierarchy.show_wing(request_context(request), wing))

    @extend_schema(
        summary="Delete a wing with its rooms and drawers",
        parameters=[MODE_PARAMETER],
        responses={200: Deleted, **errors(400, 403, 404)},
    )
    def delete(self, request: Request, wing: str) -> Response:
        return Response(self.hierarchy.delete_wing(request_context(request), wing))


class RoomsView(HierarchyView):
    @extend_schema(
        summary="List a wing's rooms with their drawer counts",
        parameters=[MODE_PARAMETER],
        responses={200: RoomList, **errors(400, 403, 404)},
    )
    def get(self, request: Request, wing: str) -> Response:
        return Response(self.hierarchy.list_rooms(request_context(request), wing))

    @extend_schema(
        summary="Create a room (and its wing when missing)",
        parameters=[MODE_PARAMETER],
        request=NAMED_BODY,
        responses={201: RoomCreated, 200: RoomCreated, **errors(400, 403, 404)},
    )
    def post(self, request: Request, wing: str) -> Response:
        ctx = request_context(request, body=request.data)
        return created_response(self.hierarchy.create_room(ctx, wing, request.data))


class RoomView(HierarchyView):
    @extend_schema(
        summary="Show a room by name or UUID",
        parameters=[MODE_PARAMETER],
        responses={200: Room, **errors(400, 403, 404)},
    )
    def get(self, request: Request, wing: str, room: str) -> Response:
        return Response(self.hierarchy.show_room(request_context(request), wing, room))

    @extend_schema(
        summary="Delete a room with its drawers",
        parameters=[MODE_PARAMETER],
        responses={200: Deleted, **errors(400, 403, 404)},
    )
    def delete(self, request: Request, wing: str, room: str) -> Response:
        return Response(self.hierarchy.delete_room(request_context(request), wing, room))


class DrawersView(HierarchyView):
    filing: FilingService = service()

    query_parameters = ("limit", "offset")

    @extend_schema(
        summary="List a room's drawers (previews, never content)",
        parameters=[
            MODE_PARAMETER,
            OpenApiParameter("limit", int, description="50 by default, 0 means 50, at most 200"),
            OpenApiParameter("offset", int, description="drawers to skip"),
        ],
        responses={200: DrawerList, **errors(400, 403, 404)},
    )
    def get(self, request: Request, wing: str, room: str) -> Response:
        return Response(
            self.hierarchy.list_drawers(
                request_context(request),
                wing,
                room,
                limit=request.query_params.get("limit"),
                offset=request.query_params.get("offset"),
            )
        )

    @extend_schema(
        summary="File a drawer (and its wing and room when missing)",
        parameters=[MODE_PARAMETER],
        request=DRAWER_BODY,
        responses={201: DrawerFiled, 200: DrawerFiled, **errors(400, 403, 404, 409)},
    )
    def post(self, request: Request, wing: str, room: str) -> Response:
        ctx = request_context(request, body=request.data)
        return created_response(self.filing.create_drawer(ctx, wing, room, request.data))


class DrawerView(HierarchyView):
    @extend_schema(
        summary="Show a drawer by name or UUID within its room",
        parameters=[MODE_PARAMETER],
        responses={200: Drawer, **errors(400, 403, 404)},
    )
    def get(self, request: Request, wing: str, room: str, drawer: str) -> Response:
        return Response(self.hierarchy.show_drawer(request_context(request), wing, room, drawer))

    @extend_schema(
        summary="Delete one drawer",
        parameters=[MODE_PARAMETER],
        responses={200: Deleted, **errors(400, 403, 404)},
    )
    def delete(self, request: Request, wing: str, room: str, drawer: str) -> Response:
        return Response(self.hierarchy.delete_drawer(request_context(request), wing, room, drawer))


class DrawerByIdView(HierarchyView):
    @extend_schema(
        summary="Read one drawer by id",
        parameters=[
            MODE_PARAMETER,
            OpenApiParameter("drawer_id", OpenApiTypes.UUID, OpenApiParameter.PATH),
        ],
        responses={200: Drawer, **errors(400, 403, 404)},
    )
    def get(self, request: Request, drawer_id: str) -> Response:
        return Response(self.hierarchy.show_drawer_by_id(request_context(request), drawer_id))


DRAWER_ID = OpenApiParameter("drawer_id", OpenApiTypes.UUID, OpenApiParameter.PATH)
SUPERSEDE_BODY = inline_serializer(
    "SupersedeBody",
    {
        "content": serializers.CharField(
            required=False, help_text="the replacement; without it the drawer is invalidated"
        ),
        "tags": serializers.ListField(
            child=serializers.CharField(), required=False, help_text="the old tags when absent"
        ),
        "requested_by": serializers.CharField(required=False),
    },
)


# Superseding a drawer and reading its history call `RevisionService`.
class RevisionView(MemCastleView):
    revisions: RevisionService = service()


class DrawerSupersedeView(RevisionView):
    @extend_schema(
        summary="Supersede a drawer with new content, or invalidate it",
        parameters=[MODE_PARAMETER, DRAWER_ID],
        request=SUPERSEDE_BODY,
        responses={200: Superseded, **errors(400, 403, 404, 409)},
    )
    def post(self, request: Request, drawer_id: str) -> Response:
        ctx = request_context(request, body=request.data)
        return Response(self.revisions.supersede(ctx, drawer_id, request.data))


class DrawerHistoryView(RevisionView):
    @extend_schema(
        summary="Every version of a drawer, oldest first",
        parameters=[MODE_PARAMETER, DRAWER_ID],
        responses={200: DrawerHistory, **errors(400, 403, 404)},
    )
    def get(self, request: Request, drawer_id: str) -> Response:
        return Response(self.revisions.history(request_context(request), drawer_id))


class DrawerDuplicatesView(MemCastleView):
    filing: FilingService = service()

    @extend_schema(
        summary="The drawers linked to this one as likely copies",
        parameters=[MODE_PARAMETER, DRAWER_ID],
        responses={200: DrawerDuplicates, **errors(400, 403, 404)},
    )
    def get(self, request: Request, drawer_id: str) -> Response:
        return Response(self.filing.duplicates(request_context(request), drawer_id))


# The views of notes, diary and wake-up call `JournalService`.
class JournalView(MemCastleView):
    journal: JournalService = service()


NOTE_BODY = inline_serializer(
    "NoteBody",
    {
        "wing": serializers.CharField(),
        "room": serializers.CharField(required=False, help_text="notes by default"),
        "content": serializers.CharField(),
        "uri": serializers.CharField(required=False, help_text="where it was captured"),
        "tags": serializers.ListField(child=serializers.CharField(), required=False),
        "requested_by": serializers.CharField(required=False),
    },
)
DIARY_BODY = inline_serializer(
    "DiaryBody",
    {
        "agent_identity": serializers.CharField(),
        "wing": serializers.CharField(),
        "content": serializers.CharField(),
        "tags": serializers.ListField(child=serializers.CharField(), required=False),
        "requested_by": serializers.CharField(required=False),
    },
)


class NotesView(JournalView):
    @extend_schema(
        summary="File a note (201 new, 200 for an identical note already in the room)",
        parameters=[MODE_PARAMETER],
        request=NOTE_BODY,
        responses={201: DrawerFiled, 200: DrawerFiled, **errors(400, 403)},
    )
    def post(self, request: Request) -> Response:
        ctx = request_context(request, body=request.data)
        return created_response(self.journal.write_note(ctx, request.data))


class DiaryView(JournalView):
    query_parameters = ("agent_identity", "wing", "limit")

    @extend_schema(
        summary="An agent's newest diary entries, superseded ones skipped",
        parameters=[
            MODE_PARAMETER,
            OpenApiParameter("agent_identity", str, required=True),
            OpenApiParameter("wing", str, description="one wing's diary; every wing's when absent"),
            OpenApiParameter("limit", int, description="20 by default, 0 means 20, at most 200"),
        ],
        responses={200: Diary, **errors(400, 403)},
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        return Response(
            self.journal.read_diary(
                request_context(request),
                agent_identity=params.get("agent_identity"),
                wing=params.get("wing"),
                limit=params.get("limit"),
            )
        )

    @extend_schema(
        summary="Write a diary entry for an agent in <wing>/diary",
        parameters=[MODE_PARAMETER],
        request=DIARY_BODY,
        responses={201: DrawerFiled, 200: DrawerFiled, **errors(400, 403)},
    )
    def post(self, request: Request) -> Response:
        ctx = request_context(request, body=request.data)
        return created_response(self.journal.write_diary(ctx, request.data))


class WakeUpView(JournalView):
    query_parameters = ("agent_identity", "wing", "max_items", "max_bytes")

    @extend_schema(
        summary="What an agent reads at start: its diary entry and recent checkpointed drawers",
        parameters=[
            MODE_PARAMETER,
            OpenApiParameter("agent_identity", str, required=True),
            OpenApiParameter("wing", str),
            OpenApiParameter("max_items", int, description="10 by default, at most 200"),
            OpenApiParameter("max_bytes", int, description="8192 by default"),
        ],
        responses={200: WakeUp, **errors(400, 403)},
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        return Response(
            self.journal.wake_up(
                request_context(request),
                agent_identity=params.get("agent_identity"),
                wing=params.get("wing"),
                max_items=params.get("max_items"),
                max_bytes=params.get("max_bytes"),
            )
        )
