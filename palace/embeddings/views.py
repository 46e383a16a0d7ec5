"""REST view for caller-supplied vectors: parse, call `EmbeddingService`, render."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from kernel.rest import MODE_PARAMETER, MemCastleView, errors, request_context, service
from palace.embeddings.service import EmbeddingService
from palace.embeddings.shapes import EmbeddingAttached

ATTACH_BODY = inline_serializer(
    "EmbeddingBody",
    {
        "profile": serializers.CharField(
            help_text="a configured embedding profile; required, so every vector has provenance"
        ),
        "embedding": serializers.ListField(
            child=serializers.FloatField(),
            help_text="exactly the profile's dimensions of finite numbers, not all zero; "
            "stored L2-normalised",
        ),
        "requested_by": serializers.CharField(required=False),
    },
)


class DrawerEmbeddingView(MemCastleView):
    embeddings: EmbeddingService = service()

    @extend_schema(
        summary="Attach (or replace) a drawer's vector in an embedding profile",
        parameters=[
            MODE_PARAMETER,
            OpenApiParameter("drawer_id", OpenApiTypes.UUID, OpenApiParameter.PATH),
        ],
        request=ATTACH_BODY,
        responses={200: EmbeddingAttached, **errors(400, 403, 404)},
    )
    def put(self, request: Request, drawer_id: str) -> Response:
        ctx = request_context(request, body=request.data)
        return Response(self.embeddings.attach(ctx, drawer_id, request.data))
