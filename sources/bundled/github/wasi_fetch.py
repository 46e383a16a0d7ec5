"""Blocking HTTP GET for a component, on `wasi:http/outgoing-handler`, and the host's token.

componentize-py offers an asyncio loop for `wasi:http` (its `poll_loop`), but a source answers
one call at a time and waits for each page anyway, so a request here is sent, its response
awaited on the future's pollable, and its body read to the end, all before `fetch` returns.

Every resource is dropped as soon as it is used, children before their parent (a body's stream,
then the body, then the response): the host refuses to drop a resource that still has children.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from componentize_py_types import Err, Ok
from github_issues import Response
from memcastle_transcripts import SourceFailed
from wit_world.imports import host, outgoing_handler, streams
from wit_world.imports import http_types as http

# A stalled server fails the request instead of holding the call until its time limit: the
# host's epoch deadline cannot interrupt a wait inside the host.
TIMEOUT_NS = 30 * 1_000_000_000
# A response body past this size is refused: GitHub's pages are far smaller.
MAX_BODY = 32 * 1024 * 1024
READ_CHUNK = 64 * 1024


def fetch(url: str, headers: list[tuple[str, str]]) -> Response:
    """GET `url` with `headers`; the response whatever its status. Failing to reach the server
    is `SourceFailed` naming it."""
    parts = urlsplit(url)
    request = http.OutgoingRequest(http.Fields.from_list([(k, v.encode()) for k, v in headers]))
    request.set_method(http.Method_Get())
    request.set_scheme(http.Scheme_Https() if parts.scheme == "https" else http.Scheme_Http())
    request.set_authority(parts.netloc)
    request.set_path_with_query(parts.path + (f"?{parts.query}" if parts.query else ""))
    try:
        future = outgoing_handler.handle(request, _options())
    except Err as exc:
        raise SourceFailed(f"the request to {parts.netloc} was refused: {exc.value}") from None
    with future:
        response = _await(future, parts.netloc)
    with response:
        return _read(response)


def access_token() -> str:
    """The host's current access token of the sign-in the manifest declares."""
    try:
        return host.access_token()
    except Err as exc:
        raise SourceFailed(
            f"the github source has no access token ({exc.value}): sign in with "
            "`memcastle source auth github`"
        ) from None


def _options() -> http.RequestOptions:
    options = http.RequestOptions()
    options.set_connect_timeout(TIMEOUT_NS)
    options.set_first_byte_timeout(TIMEOUT_NS)
    options.set_between_bytes_timeout(TIMEOUT_NS)
    return options


def _await(future: http.FutureIncomingResponse, authority: str) -> http.IncomingResponse:
    """The response of a request, once it has come: the outer result is the future's own (it
    can be taken once), the inner the request's."""
    while (outcome := future.get()) is None:
        with future.subscribe() as ready:
            ready.block()
    if isinstance(outcome, Ok) and isinstance(outcome.value, Ok):
        return outcome.value.value
    said = outcome.value.value if isinstance(outcome, Ok) else "the response was taken already"
    raise SourceFailed(f"could not reach {authority}: {said}")


def _read(response: http.IncomingResponse) -> Response:
    status = response.status()
    with response.headers() as fields:
        headers = {name.lower(): value.decode("latin-1") for name, value in fields.entries()}
    with response.consume() as body, body.stream() as stream:
        data = _read_all(stream)
    return Response(status, headers, data)


def _read_all(stream: streams.InputStream) -> bytes:
    data = bytearray()
    while True:
        try:
            data += stream.blocking_read(READ_CHUNK)
        except Err as exc:
            if isinstance(exc.value, streams.StreamError_Closed):
                return bytes(data)
            raise SourceFailed(f"the response broke off: {exc.value}") from None
        if len(data) > MAX_BODY:
            raise SourceFailed(f"a response was larger than {MAX_BODY // (1024 * 1024)} MiB")
