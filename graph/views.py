"""REST views for the knowledge graph: parse, call `GraphReads` or `EntityService`, render."""

from __future__ import annotations

from collections.abc import Callable

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from graph.entities import EntityService
from graph.reads import GraphReads
from kernel.rest import (
    MODE_PARAMETER,
    MemCastleView,
    created_response,
    errors,
    request_context,
    service,
)
from palace.shapes import DrawerListing


# The views that read the graph call `GraphReads`.
class GraphReadsView(MemCastleView):
    graph_reads: GraphReads = service()


# A person's mention of an entity and a recorded alias call `EntityService`.
class EntityServiceView(MemCastleView):
    entities: EntityService = service()


def entity_fields() -> dict[str, serializers.Field]:
    return {
        "id": serializers.UUIDField(),
        "name": serializers.CharField(help_text="the canonical name, never rewritten"),
        "kind": serializers.CharField(),
        "aliases": serializers.ListField(
            child=serializers.CharField(), help_text="the other spellings it was seen under"
        ),
        "properties": serializers.DictField(),
        "created_at": serializers.DateTimeField(),
    }


def _entity_class() -> type[serializers.Serializer]:
    return type(inline_serializer("Entity", entity_fields()))


def _entity_ref_class() -> type[serializers.Serializer]:
    return type(
        inline_serializer(
            "EntityRef",
            {
                "id": serializers.UUIDField(),
                "name": serializers.CharField(),
                "kind": serializers.CharField(),
            },
        )
    )


def _fact_link_class() -> type[serializers.Serializer]:
    return type(
        inline_serializer(
            "FactLink",
            {
                "from": serializers.UUIDField(),
                "to": serializers.UUIDField(),
                "kind": serializers.CharField(
                    help_text="confirms, contradicts, supersedes, refines or invalidates"
                ),
                "origin": serializers.ChoiceField(["inferred", "explicit"]),
                "reason": serializers.CharField(),
                "at": serializers.DateTimeField(),
                "evidence": serializers.UUIDField(required=False, help_text="a drawer id"),
            },
        )
    )


def _lifecycle_class() -> type[serializers.Serializer]:
    return type(
        inline_serializer(
            "FactLifecycle",
            {
                "state": serializers.ChoiceField(
                    ["current", "conflicting", "superseded", "invalidated", "historical"]
                ),
                "links": serializers.ListField(child=fact_link()),
                "preferred": serializers.UUIDField(
                    required=False, help_text="conflicting only: a ranking hint, never a verdict"
                ),
                "basis": serializers.ListField(
                    child=serializers.CharField(),
                    required=False,
                    help_text="the tie-break chain that chose `preferred`: explicit, confidence, "
                    "valid_from, id",
                ),
            },
        )
    )


def _relationship_class() -> type[serializers.Serializer]:
    return type(
        inline_serializer(
            "Relationship",
            {
                "id": serializers.UUIDField(),
                "from": serializers.UUIDField(help_text="the subject entity"),
                "to": serializers.UUIDField(help_text="the object entity"),
                "predicate": serializers.CharField(),
                "confidence": serializers.FloatField(),
                "valid_from": serializers.DateTimeField(),
                "valid_to": serializers.DateTimeField(allow_null=True),
                "provenance": serializers.DictField(
                    required=False, help_text="where an extractor read it; absent on asserted facts"
                ),
                "assertion": serializers.UUIDField(
                    required=False, help_text="the checkpoint drawer that asserted it"
                ),
                "lifecycle": lifecycle(),
            },
        )
    )


_CLASSES: dict[str, type[serializers.Serializer]] = {}


def _instance(
    name: str, build: Callable[[], type[serializers.Serializer]]
) -> serializers.Serializer:
    """A fresh instance of one class per shape, so the schema has one component per shape."""
    if name not in _CLASSES:
        _CLASSES[name] = build()
    return _CLASSES[name]()


def entity() -> serializers.Serializer:
    return _instance("entity", _entity_class)


def entity_ref() -> serializers.Serializer:
    return _instance("entity_ref", _entity_ref_class)


def fact_link() -> serializers.Serializer:
    return _instance("fact_link", _fact_link_class)


def lifecycle() -> serializers.Serializer:
    return _instance("lifecycle", _lifecycle_class)


def relationship() -> serializers.Serializer:
    return _instance("relationship", _relationship_class)


def entity_names() -> serializers.Field:
    return serializers.DictField(
        child=entity_ref(), help_text="the entities the relationships relate, by id"
    )


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
        responses={
            200: inline_serializer(
                "EntityList",
                {
                    "entities": serializers.ListField(child=entity()),
                    "limit": serializers.IntegerField(),
                },
            ),
            **errors(400, 403),
        },
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
        responses={
            200: inline_serializer(
                "EntityShown",
                {
                    **entity_fields(),
                    "counts": inline_serializer(
                        "EntityCounts",
                        {
                            "mentions": serializers.IntegerField(),
                            "relationships": serializers.IntegerField(),
                        },
                    ),
                },
            ),
            **errors(400, 403, 404),
        },
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
        responses={
            200: inline_serializer(
                "EntityRelationships",
                {
                    "entity": entity(),
                    "as_of": serializers.DateTimeField(allow_null=True),
                    "include_expired": serializers.BooleanField(),
                    "relationships": serializers.ListField(child=relationship()),
                    "entities": entity_names(),
                },
            ),
            **errors(400, 403, 404),
        },
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
        responses={
            200: inline_serializer(
                "EntityMentions",
                {
                    "entity": entity(),
                    "mentions": serializers.ListField(
                        child=inline_serializer(
                            "Mention",
                            {
                                "drawer": DrawerListing(),
                                "observation": serializers.DictField(
                                    help_text="{name (as written), rule, confidence}"
                                ),
                                "provenance": serializers.DictField(
                                    required=False, help_text="absent on a person-made link"
                                ),
                                "created_at": serializers.DateTimeField(),
                            },
                        )
                    ),
                },
            ),
            **errors(400, 403, 404),
        },
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
        responses={
            200: inline_serializer(
                "EntityCandidates",
                {
                    "entity": entity(),
                    "candidates": serializers.ListField(
                        child=inline_serializer(
                            "EntityCandidate",
                            {
                                "entity": entity(),
                                "side": serializers.ChoiceField(["older", "newer"]),
                                "similarity": serializers.FloatField(),
                                "created_at": serializers.DateTimeField(),
                            },
                        )
                    ),
                },
            ),
            **errors(400, 403, 404),
        },
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
        responses={
            201: inline_serializer(
                "EntityAliased",
                {**entity_fields(), "created": serializers.BooleanField()},
            ),
            200: inline_serializer(
                "EntityAlreadyAliased",
                {**entity_fields(), "created": serializers.BooleanField()},
            ),
            **errors(400, 403, 404),
        },
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
        responses={
            201: inline_serializer(
                "MentionLinked",
                {
                    "drawer": serializers.UUIDField(),
                    "entity": entity(),
                    "observation": serializers.DictField(),
                    "created": serializers.BooleanField(),
                },
            ),
            200: inline_serializer(
                "MentionAlreadyLinked",
                {
                    "drawer": serializers.UUIDField(),
                    "entity": entity(),
                    "observation": serializers.DictField(),
                    "created": serializers.BooleanField(),
                },
            ),
            **errors(400, 403, 404),
        },
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
        responses={
            200: inline_serializer(
                "FactHistory",
                {
                    "relationship": serializers.UUIDField(),
                    "as_of": serializers.DateTimeField(allow_null=True),
                    "assertions": serializers.ListField(child=relationship()),
                    "entities": entity_names(),
                },
            ),
            **errors(400, 403, 404),
        },
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
            OpenApiParameter("depth", int, description="hops from the entity: 1 (default) to 3"),
            OpenApiParameter(
                "limit",
                int,
                description="most connected entities listed (20 by default), or entities in a "
                "neighbourhood (200 by default); at most 200",
            ),
            AS_OF,
        ],
        responses={
            200: inline_serializer(
                "Graph",
                {
                    "counts": serializers.DictField(
                        required=False,
                        child=serializers.IntegerField(),
                        help_text="overview: entities, relationships, mentions, fact_links",
                    ),
                    "top": serializers.ListField(
                        required=False,
                        child=serializers.DictField(),
                        help_text="overview: the most connected entities, with relationships",
                    ),
                    "entity": inline_serializer("GraphCentre", entity_fields(), required=False),
                    "depth": serializers.IntegerField(required=False),
                    "as_of": serializers.DateTimeField(required=False, allow_null=True),
                    "entities": serializers.ListField(
                        required=False, child=serializers.DictField()
                    ),
                    "relationships": serializers.ListField(required=False, child=relationship()),
                    "truncated": serializers.BooleanField(required=False),
                },
            ),
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
