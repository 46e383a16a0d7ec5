"""REST views for mining sources: parse, call `SourceService`, `SourcePackages` and `SignIns`,
render."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response

from kernel.errors import InputInvalid
from kernel.rest import (
    MODE_PARAMETER,
    MemCastleView,
    errors,
    refuse_body_fields,
    request_context,
    service,
)
from sources.packages import SourcePackages
from sources.services import SourceService
from sources.shapes import (
    SignInOutcome,
    SignInStarted,
    SourceAdapter,
    SourceInstalled,
    SourceRemoved,
    Sources,
)
from sources.sign_in import WAIT_SECONDS, SignIns


class SourcesView(MemCastleView):
    sources: SourceService = service()

    @extend_schema(
        summary="The mining sources this daemon has, and the places mined",
        parameters=[MODE_PARAMETER],
        responses={200: Sources, **errors(403)},
    )
    def get(self, request: Request) -> Response:
        return Response(self.sources.list_sources(request_context(request)))


class ArchiveParser(BaseParser):
    """A source package as the request body: the `.tar.gz` itself, read as bytes."""

    media_type = "application/gzip"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        return stream.read() if stream is not None else b""


class OctetStreamParser(ArchiveParser):
    media_type = "application/octet-stream"


def _flag(request: Request, name: str) -> bool:
    value = request.query_params.get(name, "false")
    if value not in ("true", "false"):
        raise InputInvalid(name, f"must be true or false, not {value!r}")
    return value == "true"


class SourcePackagesView(MemCastleView):
    packages: SourcePackages = service()
    parser_classes = [ArchiveParser, OctetStreamParser]
    query_parameters = ("consent", "enable")

    @extend_schema(
        summary="Install a source package, or replace an installed version: the body is the "
        ".tar.gz itself (a replaced source keeps its state)",
        request={"application/gzip": OpenApiTypes.BINARY},
        parameters=[
            OpenApiParameter(
                "consent",
                str,
                description="the digest of the permissions agreed to (the refusal names it)",
            ),
            OpenApiParameter("enable", bool, description="enable it once installed"),
        ],
        responses={200: SourceInstalled, **errors(400)},
    )
    def post(self, request: Request) -> Response:
        data = request.data if isinstance(request.data, bytes) else b""
        if not data:
            raise InputInvalid("body", "must be the package archive (.tar.gz)")
        consent = request.query_params.get("consent") or None
        return Response(
            SourceInstalled.render(
                self.packages.install(data, consent=consent, enable=_flag(request, "enable"))
            )
        )


class SourcePackageView(MemCastleView):
    packages: SourcePackages = service()

    @extend_schema(
        summary="One source, built in or installed: what it is, its state and what it may do",
        parameters=[MODE_PARAMETER],
        responses={200: SourceAdapter, **errors(403, 404)},
    )
    def get(self, request: Request, name: str) -> Response:
        return Response(SourceAdapter.render(self.packages.show(request_context(request), name)))

    @extend_schema(
        summary="Remove an installed source: its files and row go, what it mined stays",
        request=None,
        responses={200: SourceRemoved, **errors(400, 404)},
    )
    def delete(self, request: Request, name: str) -> Response:
        return Response(SourceRemoved.render(self.packages.remove(name)))


class SourceEnableView(MemCastleView):
    packages: SourcePackages = service()

    @extend_schema(
        summary="Allow an installed source to be mined (enabling a bundled one is the consent "
        "to what it asks); idempotent",
        request=None,
        responses={200: SourceAdapter, **errors(400, 404, 409)},
    )
    def post(self, request: Request, name: str) -> Response:
        return Response(SourceAdapter.render(self.packages.enable(name)))


class SourceDisableView(MemCastleView):
    packages: SourcePackages = service()

    @extend_schema(
        summary="Stop an installed source from being mined; idempotent",
        request=None,
        responses={200: SourceAdapter, **errors(400, 404)},
    )
    def post(self, request: Request, name: str) -> Response:
        return Response(SourceAdapter.render(self.packages.disable(name)))


class NoStore(MemCastleView):
    """Every answer of a sign-in route, errors too, is sent `Cache-Control: no-store`."""

    def finalize_response(
        self, request: Request, response: Response, *args: Any, **kwargs: Any
    ) -> Response:
        answer = super().finalize_response(request, response, *args, **kwargs)
        answer["Cache-Control"] = "no-store"
        return answer


class SourceAuthView(NoStore):
    sign_ins: SignIns = service()

    @extend_schema(
        summary="Start signing a source in: what the user must do (a code to type, or a page to "
        "open); never a token",
        request=None,
        responses={200: SignInStarted, **errors(400, 404, 502)},
    )
    def post(self, request: Request, name: str) -> Response:
        refuse_body_fields(request)
        return Response(SignInStarted.render(self.sign_ins.start(name)))


class SourceAuthWaitView(NoStore):
    sign_ins: SignIns = service()
    query_parameters = ("timeout",)

    @extend_schema(
        summary="Wait for the outcome of a sign-in: pending after `timeout` seconds (wait "
        "again), else the outcome, told once; never a token",
        request=None,
        parameters=[
            OpenApiParameter(
                "timeout",
                {"type": "number", "minimum": 0, "maximum": WAIT_SECONDS},
                description=f"seconds to hold the request, 0 to {WAIT_SECONDS:g} (the default)",
            )
        ],
        responses={200: SignInOutcome, **errors(400, 404, 502)},
    )
    def post(self, request: Request, name: str, flow: str) -> Response:
        refuse_body_fields(request)
        return Response(
            SignInOutcome.render(
                self.sign_ins.wait(name, flow, request.query_params.get("timeout"))
            )
        )
