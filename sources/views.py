"""REST views for mining sources: parse, call `SourceService`, render."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from kernel.rest import MODE_PARAMETER, MemCastleView, errors, request_context, service
from sources.services import SourceService
from sources.shapes import Sources


class SourcesView(MemCastleView):
    sources: SourceService = service()

    @extend_schema(
        summary="The mining sources this daemon has, and the places mined",
        parameters=[MODE_PARAMETER],
        responses={200: Sources, **errors(403)},
    )
    def get(self, request: Request) -> Response:
        return Response(self.sources.list_sources(request_context(request)))
