"""REST views for search and recall: parse into a `SearchQuery`, call `SearchService`, render."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from kernel.rest import (
    MODE_PARAMETER,
    TRANSPORT_PARAMETERS,
    MemCastleView,
    errors,
    request_context,
    service,
)
from kernel.validation import body_object
from palace.search import query as search_query
from palace.search.service import SearchService
from palace.search.shapes import SearchResults

TEMPORAL_HELP = (
    "validity time: at most one of as_of, from with until, and include_historical; an instant "
    "is RFC 3339 or YYYY-MM-DD (midnight UTC)"
)


def _flat_parameters(*, recall: bool) -> list[OpenApiParameter]:
    parameters = [
        MODE_PARAMETER,
        OpenApiParameter("q", str, description="the words to search for (or `query`)"),
        OpenApiParameter("query", str, description="the same as q"),
        OpenApiParameter("ranking", str, enum=list(search_query.RANKINGS)),
        OpenApiParameter(
            "limit", int, description="10 by default, 0 means the default, at most 200"
        ),
        OpenApiParameter("wing", str),
        OpenApiParameter("tags", str, description="comma-separated; a drawer must carry them all"),
        OpenApiParameter("source_kind", str, enum=list(search_query.SOURCE_KINDS)),
        OpenApiParameter("as_of", str, description=TEMPORAL_HELP),
        OpenApiParameter("from", str, description=TEMPORAL_HELP),
        OpenApiParameter("until", str, description=TEMPORAL_HELP),
        OpenApiParameter("include_historical", bool, description=TEMPORAL_HELP),
        OpenApiParameter("expand", bool, description="append graph-related drawers"),
        OpenApiParameter("profile", str, description="the embedding profile to search in"),
    ]
    if not recall:
        parameters.insert(6, OpenApiParameter("room", str))
    return parameters


def _body(*, recall: bool) -> Any:
    """The JSON request of search, or of recall, whose filter has no `room`: it searches whole
    wings, and refuses one."""
    scope: dict[str, Any] = {"wing": serializers.CharField(required=False)}
    if not recall:
        scope["room"] = serializers.CharField(required=False)
    prefix = "Recall" if recall else "Search"
    return inline_serializer(
        f"{prefix}Body",
        {
            "text": serializers.CharField(help_text="the words to search for (or `query`)"),
            "ranking": serializers.ChoiceField(list(search_query.RANKINGS), required=False),
            "limit": serializers.IntegerField(required=False),
            "filter": inline_serializer(
                f"{prefix}Filter",
                {
                    **scope,
                    "tags": serializers.ListField(child=serializers.CharField(), required=False),
                    "source_kind": serializers.ChoiceField(
                        list(search_query.SOURCE_KINDS), required=False
                    ),
                    "temporal": serializers.JSONField(
                        required=False,
                        help_text='"current", "all", {"as_of": t} or {"between": {"from": t1, '
                        '"until": t2}}',
                    ),
                },
                required=False,
            ),
            "expand": serializers.BooleanField(required=False),
            "profile": serializers.CharField(required=False),
            "query_embedding": serializers.ListField(
                child=serializers.FloatField(),
                required=False,
                help_text="a query vector of the profile's dimensions; needs profile",
            ),
        },
    )


def _options(request: Request) -> dict[str, Any]:
    """The query string as options: a repeated `tags` is a list, anything else its last value."""
    params = request.query_params
    options: dict[str, Any] = {}
    for key in params:
        if key in TRANSPORT_PARAMETERS:
            continue
        values = params.getlist(key)
        options[key] = values if key == "tags" and len(values) > 1 else values[-1]
    return options


# Search and recall call `SearchService` with the same options; the options are checked there.
class SearchServiceView(MemCastleView):
    search: SearchService = service()
    query_parameters = None

    def answer(self, request: Request, *, recall: bool, body: bool) -> Response:
        if body:
            query = search_query.from_body(body_object(request.data), recall=recall)
        else:
            query = search_query.from_options(_options(request), recall=recall)
        return Response(self.search.search(request_context(request), query, recall=recall))


class SearchView(SearchServiceView):
    @extend_schema(
        summary="Search drawers: lexical, semantic, hybrid or auto, in scope and in time",
        parameters=_flat_parameters(recall=False),
        responses={200: SearchResults, **errors(400, 403, 404)},
    )
    def get(self, request: Request) -> Response:
        return self.answer(request, recall=False, body=False)

    @extend_schema(
        summary="Search drawers with a JSON request (a nested filter, your own query vector)",
        parameters=[MODE_PARAMETER],
        request=_body(recall=False),
        responses={200: SearchResults, **errors(400, 403, 404)},
    )
    def post(self, request: Request) -> Response:
        return self.answer(request, recall=False, body=True)


class RecallView(SearchServiceView):
    @extend_schema(
        summary="Recall: search whole wings (the same options as search, without room)",
        parameters=_flat_parameters(recall=True),
        responses={200: SearchResults, **errors(400, 403, 404)},
    )
    def get(self, request: Request) -> Response:
        return self.answer(request, recall=True, body=False)

    @extend_schema(
        summary="Recall with a JSON request",
        parameters=[MODE_PARAMETER],
        request=_body(recall=True),
        responses={200: SearchResults, **errors(400, 403, 404)},
    )
    def post(self, request: Request) -> Response:
        return self.answer(request, recall=True, body=True)
