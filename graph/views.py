"""REST views for the knowledge graph: parse, call `GraphReads` or `EntityService`, render."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from graph.entities import EntityService
from graph.reads import GraphReads
from graph.shapes import (
    EntityAliased,
    EntityAlreadyAliased,
    EntityCandidates,
    EntityList,
    EntityMentions,
    EntityRelationships,
    EntityShown,
    FactHistory,
    Graph,
    MentionAlreadyLinked,
    MentionLinked,
)
from kernel.rest import (
    MODE_PARAMETER,
    MemCastleView,
    created_response,
    errors,
    request_context,
    service,
)


# The views that read the graph call `GraphReads`.
class GraphReadsView(MemCastleView):
    graph_reads: GraphReads = service()


# A person's mention of an entity and a recorded alias call `EntityService`.
class EntityServiceView(MemCastleView):
    entities: EntityService = service()


ENTITY_ID = OpenApiParameter("entity_id", OpenApiTypes.UUID, OpenApiParameter.PATH)
AS_OF = OpenApiParameter(
    "as_of", str, description="an RFC 3339 instant or a YYYY-MM-DD date: the state then"
)


class EntitiesView(GraphReadsView):
    query_parameters = ("name", "kind", "limit")

    @extend_schema(
        summary="List entities (name substring in any case, kind)",
        parameters=[
            MODE_PARAMETER,
            OpenApiParameter("name", str, description="a part of the name, any case"),
            OpenApiParameter("kind", str),
            OpenApiParameter("limit", int, description="50 by default, 0 means 50, at most 200"),
        ],
        responses={200: EntityList, **errors(400, 403)},
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        return Response(
            self.graph_reads.list_entities(
                request_context(request),
                name=params.get("name"),
                kind=params.get("kind"),
                limit=params.get("limit"),
            )
        )


class EntityView(GraphReadsView):
    @extend_schema(
        summary="Show an entity with its mention and relationship counts",
        parameters=[MODE_PARAMETER, ENTITY_ID],
        responses={200: EntityShown, **errors(400, 403, 404)},
    )
    def get(self, request: Request, entity_id: str) -> Response:
        return Response(self.graph_reads.show_entity(request_context(request), entity_id))


class EntityRelationshipsView(GraphReadsView):
    query_parameters = ("include_expired", "as_of")

    @extend_schema(
        summary="An entity's relationships, each with its lifecycle",
        parameters=[
            MODE_PARAMETER,
            ENTITY_ID,
            OpenApiParameter(
                "include_expired", bool, description="closed relationships too; not with as_of"
            ),
            AS_OF,
        ],
        responses={200: EntityRelationships, **errors(400, 403, 404)},
    )
    def get(self, request: Request, entity_id: str) -> Response:
        params = request.query_params
        return Response(
            self.graph_reads.relationships(
                request_context(request),
                entity_id,
                include_expired=params.get("include_expired"),
                as_of=params.get("as_of"),
            )
        )


class EntityMentionsView(GraphReadsView):
    query_parameters = ("limit",)

    @extend_schema(
        summary="The drawers that mention an entity, with provenance and observation",
        parameters=[
            MODE_PARAMETER,
            ENTITY_ID,
            OpenApiParameter("limit", int, description="200 by default, at most 200"),
        ],
        responses={200: EntityMentions, **errors(400, 403, 404)},
    )
    def get(self, request: Request, entity_id: str) -> Response:
        return Response(
            self.graph_reads.mentions(
                request_context(request), entity_id, limit=request.query_params.get("limit")
            )
        )


class EntityCandidatesView(GraphReadsView):
    @extend_schema(
        summary="Entities that may be this one under another spelling (possibly_same_as)",
        parameters=[MODE_PARAMETER, ENTITY_ID],
        responses={200: EntityCandidates, **errors(400, 403, 404)},
    )
    def get(self, request: Request, entity_id: str) -> Response:
        return Response(self.graph_reads.candidates(request_context(request), entity_id))


class EntityAliasesView(EntityServiceView):
    @extend_schema(
        summary="Record a spelling of an entity (201 new, 200 already recorded)",
        parameters=[MODE_PARAMETER, ENTITY_ID],
        request=inline_serializer(
            "AliasBody",
            {
                "alias": serializers.CharField(),
                "requested_by": serializers.CharField(required=False),
            },
        ),
        responses={201: EntityAliased, 200: EntityAlreadyAliased, **errors(400, 403, 404)},
    )
    def post(self, request: Request, entity_id: str) -> Response:
        ctx = request_context(request, body=request.data)
        return created_response(self.entities.add_alias(ctx, entity_id, request.data))


class DrawerMentionsView(EntityServiceView):
    @extend_schema(
        summary="Link a drawer to the entity a name resolves to (201 linked, 200 already)",
        parameters=[
            MODE_PARAMETER,
            OpenApiParameter("drawer_id", OpenApiTypes.UUID, OpenApiParameter.PATH),
        ],
        request=inline_serializer(
            "MentionBody",
            {
                "name": serializers.CharField(help_text="the name as the drawer writes it"),
                "kind": serializers.CharField(help_text="trimmed and lowercased; not blank"),
                "requested_by": serializers.CharField(required=False),
            },
        ),
        responses={201: MentionLinked, 200: MentionAlreadyLinked, **errors(400, 403, 404)},
    )
    def post(self, request: Request, drawer_id: str) -> Response:
        ctx = request_context(request, body=request.data)
        return created_response(self.entities.mention(ctx, drawer_id, request.data))


class RelationshipHistoryView(GraphReadsView):
    query_parameters = ("as_of",)

    @extend_schema(
        summary="A fact's history: every assertion linked to it, each with its lifecycle",
        parameters=[
            MODE_PARAMETER,
            OpenApiParameter("relationship_id", OpenApiTypes.UUID, OpenApiParameter.PATH),
            AS_OF,
        ],
        responses={200: FactHistory, **errors(400, 403, 404)},
    )
    def get(self, request: Request, relationship_id: str) -> Response:
        return Response(
            self.graph_reads.history(
                request_context(request), relationship_id, as_of=request.query_params.get("as_of")
            )
        )


class GraphView(GraphReadsView):
    query_parameters = ("entity", "depth", "limit", "as_of")

    @extend_schema(
        summary="The graph at a glance, or an entity's neighbourhood (entity, depth 1 to 3)",
        parameters=[
            MODE_PARAMETER,
            OpenApiParameter("entity", OpenApiTypes.UUID, description="the centre entity"),
            OpenApiParameter(
                "depth", int, enum=[1, 2, 3], description="hops from the entity: 1 (default) to 3"
            ),
            OpenApiParameter(
                "limit",
                int,
                description="most connected entities listed (20 by default), or entities in a "
                "neighbourhood (200 by default); at most 200",
            ),
            AS_OF,
        ],
        responses={
            200: Graph,
            **errors(400, 403, 404),
        },
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        return Response(
            self.graph_reads.overview(
                request_context(request),
                entity=params.get("entity"),
                depth=params.get("depth"),
                limit=params.get("limit"),
                as_of=params.get("as_of"),
            )
        )
