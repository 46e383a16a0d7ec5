"""What every REST view shares: the base view, the request context and the error mapping.

Views parse the request, call a service and render its answer; the exception handler turns every
failure, including DRF's own and unexpected exceptions, into `{error, code, help}`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from django.core.exceptions import ImproperlyConfigured, RequestDataTooBig
from django.http import Http404, HttpRequest, JsonResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import exceptions
from rest_framework.negotiation import BaseContentNegotiation, DefaultContentNegotiation
from rest_framework.parsers import BaseParser, JSONParser
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from kernel.context import MODE_HEADER, RequestContext
from kernel.errors import BodyTooLarge, InputInvalid, MemCastleError, ServerFailed
from kernel.shapes import Error
from kernel.validation import body_object, refuse_unwritable

logger = logging.getLogger("memcastle.api")


ERROR_MEANINGS = {
    400: "invalid input (the message names the field)",
    401: "missing or wrong bearer token (authentication enabled)",
    403: "the memory mode forbids the operation",
    404: "unknown job, wing, room, drawer or route",
    405: "method not allowed on this route",
    409: "conflict with the palace's current state",
    500: "server failure; the detail is in the daemon log",
    502: "a service the daemon depends on failed, or sent what it should not (a registry)",
}


MODE_PARAMETER = OpenApiParameter(
    "X-MemCastle-Mode",
    str,
    OpenApiParameter.HEADER,
    enum=["full", "read_only", "disabled"],
    description="memory mode of this request; full when absent",
)


# Parameters every route checks the same way, declared here once rather than at each route.
NON_NEGATIVE_PARAMETERS = ("limit", "offset", "max_items", "max_bytes")
# Instants: an RFC 3339 timestamp (a YYYY-MM-DD date is taken too, as midnight UTC).
INSTANT_PARAMETERS = ("as_of", "from", "until")


def declare_parameter_bounds(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """drf-spectacular post-processing hook: the document states what the routes enforce of
    their common parameters, so a request the schema allows is one the daemon takes: counts
    (`limit`, `offset`, `max_items`, `max_bytes`) are not negative, instants are timestamps, a
    path's `..._id` is a UUID, and a required query string is not empty."""
    for item in result.get("paths", {}).values():
        for operation in item.values():
            for parameter in operation.get("parameters", []):
                schema = parameter.setdefault("schema", {})
                name, where = parameter.get("name", ""), parameter.get("in")
                if where == "query" and name in NON_NEGATIVE_PARAMETERS:
                    schema["minimum"] = 0
                if where == "query" and name in INSTANT_PARAMETERS:
                    schema["format"] = "date-time"
                if where == "path" and name.endswith("_id"):
                    schema["format"] = "uuid"
                if (
                    where == "query"
                    and parameter.get("required")
                    and schema.get("type") == "string"
                ):
                    schema["minLength"] = 1
    return result


# Every string a request carries refuses NUL characters and lone surrogates
# (`kernel.validation.refuse_unwritable`). The pattern states only the NUL: a class of
# surrogates (`\ud800-\udfff`) is no pattern Rust's validators compile (Schemathesis dropped
# it, and generated the NULs it was there to forbid), and an ECMA-262 one without the `u` flag
# reads it as refusing every character beyond U+FFFF, which the daemon takes. A lone surrogate
# is no Unicode text, so no generator sends one.
WITHOUT_NUL = r"^[^\x00]*$"


def declare_no_nul(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """drf-spectacular post-processing hook: every free-text string of a request (its query and
    path parameters, and the request bodies' components) declares that it holds no NUL
    character, which every route refuses. Strings with an enum, a format or a pattern of their
    own already say more."""
    for item in result.get("paths", {}).values():
        for operation in item.values():
            for parameter in operation.get("parameters", []):
                _refuse_unwritable_in(parameter.get("schema", {}))
    for name, component in result.get("components", {}).get("schemas", {}).items():
        if name.endswith("Request"):
            _refuse_unwritable_in(component)
    return result


def _refuse_unwritable_in(schema: dict[str, Any]) -> None:
    if schema.get("type") == "string":
        if not {"enum", "format", "pattern"} & set(schema):
            schema["pattern"] = WITHOUT_NUL
        return
    for child in schema.get("properties", {}).values():
        _refuse_unwritable_in(child)
    for nested in ("items", "additionalProperties"):
        if isinstance(schema.get(nested), dict):
            _refuse_unwritable_in(schema[nested])


def errors(*statuses: int) -> dict[int, OpenApiResponse]:
    """OpenAPI responses for the error statuses a route can answer: 400 always (every route
    refuses a query parameter it does not take, and a bad memory-mode header where the mode
    counts), 401 and 500 always."""
    codes = sorted({*statuses, 400, 401, 500})
    return {
        code: OpenApiResponse(response=Error, description=ERROR_MEANINGS[code]) for code in codes
    }


def request_context(request: Request, *, body: Any = None) -> RequestContext:
    """The memory mode from the header, the channel from the body's `requested_by`."""
    return RequestContext.build(
        mode=request.headers.get(MODE_HEADER), requested_by=_requested_by(body)
    )


def _requested_by(body: Any) -> object:
    if not isinstance(body, dict):
        return None
    if "requested_by" in body and body["requested_by"] is None:
        raise InputInvalid("requested_by", "must be a string naming the channel, not null")
    return body.get("requested_by")


def administrative_context(request: Request, *, body: Any = None) -> RequestContext:
    """For routes outside the mode system (tokens): the mode header is accepted and ignored."""
    return RequestContext.build(requested_by=_requested_by(body))


def created_response(answer: dict[str, Any]) -> Response:
    """201 for something new, 200 when it already existed (`created: false`)."""
    return Response(answer, status=201 if answer.get("created") else 200)


class JSONOnly(BaseContentNegotiation):
    """The API answers JSON whatever the Accept header says, so an error never turns into a
    406 that hides it."""

    def select_parser(self, request: Request, parsers: Iterable[BaseParser]) -> BaseParser | None:
        return DefaultContentNegotiation().select_parser(request, parsers)

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, renderer.media_type


class _NotHandedOver:
    """A view's service before the composition root hands it over: any use fails loudly."""

    def __getattr__(self, name: str) -> Any:
        raise ImproperlyConfigured(
            "the view's service was not handed over: bind it with View.as_view(name=service)"
        )


def service() -> Any:
    """Declares a service a view calls, handed over by the composition root with
    `as_view(hierarchy=...)` (`memcastle_project.urls`):
    `hierarchy: HierarchyService = service()`. Django's `as_view` takes only keywords the class
    has an attribute for."""
    return _NotHandedOver()


class JSONBodyParser(JSONParser):
    """DRF's JSON parser, refusing what no route takes: JSON nested deeper than the parser can
    read (DRF lets its `RecursionError` through, a 500), a body of JSON `null` (which the
    services would read as no body) and NUL characters in any string."""

    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError("JSON nested too deeply") from None
        if data is None:
            raise exceptions.ParseError("the body is JSON null: send an object, or no body")
        refuse_unwritable(data, "body")
        return data


# The base of every REST view: JSON in and out; authentication is done at the ASGI edge.
# (A comment, not a docstring: the OpenAPI generator would give it to every operation.)
class MemCastleView(APIView):
    authentication_classes: list = []
    permission_classes: list = []
    parser_classes = [JSONBodyParser]
    renderer_classes = [JSONRenderer]
    content_negotiation_class = JSONOnly
    # The query parameters the route takes; any other is refused, naming it, so a misspelt
    # option (`?limt=5`) is never silently ignored. `None` leaves the check to the service
    # (search and recall, whose options MCP and the CLI share).
    query_parameters: tuple[str, ...] | None = ()

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if self.query_parameters is not None:
            refuse_unknown_parameters(request, self.query_parameters)
        for name, value in request.query_params.items():
            refuse_unwritable(value, name)


# DRF's own parameter (the browsable API's `?format=json`), accepted by every route.
TRANSPORT_PARAMETERS = ("format",)


def refuse_body_fields(request: Request) -> None:
    """For a POST that takes no body but `requested_by`: any other field is refused, naming
    it, rather than ignored."""
    for name in body_object(request.data):
        if name != "requested_by":
            raise InputInvalid(name, "is not a field of this route (it takes only requested_by)")


def refuse_unknown_parameters(request: Request, known: tuple[str, ...]) -> None:
    for name in request.query_params:
        if name not in known and name not in TRANSPORT_PARAMETERS:
            listed = ", ".join(known) or "none"
            raise InputInvalid(name, f"is not a parameter of this route (known: {listed})")


def _translate(exc: Exception) -> MemCastleError:
    if isinstance(exc, MemCastleError):
        return exc
    if isinstance(exc, RequestDataTooBig):
        return BodyTooLarge()
    if isinstance(exc, exceptions.ParseError):
        return InputInvalid("body", f"is not valid JSON ({exc.detail})")
    if isinstance(exc, exceptions.UnsupportedMediaType):
        return MemCastleError(
            str(exc.detail),
            code="memcastle::input::invalid",
            status=415,
            help="send the body as JSON with `Content-Type: application/json`",
        )
    if isinstance(exc, exceptions.MethodNotAllowed):
        return method_not_allowed(str(exc.detail))
    if isinstance(exc, exceptions.NotFound):
        return route_not_found()
    if isinstance(exc, exceptions.APIException):
        return MemCastleError(
            str(exc.detail), code="memcastle::input::invalid", status=exc.status_code
        )
    logger.exception("unexpected failure while handling a request", exc_info=exc)
    return ServerFailed()


def method_not_allowed(message: str) -> MemCastleError:
    return MemCastleError(
        message,
        code="memcastle::http::method_not_allowed",
        status=405,
        help="see the allowed methods in the Allow header or at /api/docs/",
    )


def route_not_found() -> MemCastleError:
    return MemCastleError(
        "no such route",
        code="memcastle::http::not_found",
        status=404,
        help="the routes are listed at /api/docs/ and /api/schema/",
    )


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    """DRF's EXCEPTION_HANDLER: every failure of a view becomes the error body."""
    error = route_not_found() if isinstance(exc, Http404) else _translate(exc)
    response = Response(Error.render(error.body()), status=error.status)
    if error.expected:
        # Django's `log_response` skips a response marked as logged already (a private flag the
        # stubs do not declare).
        response._has_been_logged = True  # type: ignore[attr-defined]
    if isinstance(exc, exceptions.MethodNotAllowed):
        view = context.get("view")
        if view is not None:
            response["Allow"] = ", ".join(view.allowed_methods)
    return response


def handler404(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    error = route_not_found()
    return JsonResponse(Error.render(error.body()), status=error.status)


def handler400(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    error = InputInvalid("request", "could not be read")
    return JsonResponse(Error.render(error.body()), status=error.status)


def handler500(request: HttpRequest) -> JsonResponse:
    error = ServerFailed()
    return JsonResponse(Error.render(error.body()), status=error.status)
