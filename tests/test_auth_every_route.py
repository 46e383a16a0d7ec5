"""With authentication on, every route refuses a request without a valid token, by construction:
the operations are read from the daemon's own OpenAPI document, so a route added later is
covered without touching this test. Each refusal is a 401 with the error body and no data.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests.support.auth import SECRET, assert_unauthorized
from tests.support.daemon import Daemon

# What a client might send instead of a valid `Authorization: Bearer <token>` header.
CREDENTIALS = {
    "none": ({}, {}),
    "wrong token": ({"Authorization": f"Bearer {SECRET}-not"}, {}),
    "token in the query string": ({}, {"token": SECRET, "access_token": SECRET}),
    "malformed header": ({"Authorization": f"Bearer{SECRET}"}, {}),
    "bearer without a token": ({"Authorization": "Bearer"}, {}),
    "another scheme": ({"Authorization": f"Basic {SECRET}"}, {}),
}
# Routes the document does not list, which are guarded all the same.
UNLISTED = [
    ("GET", "/mcp"),
    ("POST", "/mcp"),
    ("GET", "/api/events"),
    ("GET", "/api/schema/"),
    ("GET", "/api/docs/"),
    ("GET", "/ui/"),
    ("GET", "/api/no-such-route"),
    ("DELETE", "/"),
]
OPEN = {("GET", "/api/health")}


@pytest.fixture(scope="module")
def operations(shared_secured: Daemon) -> list[tuple[str, str]]:
    """Every operation of the daemon's OpenAPI document, its path parameters filled in."""
    with shared_secured.client(Authorization=f"Bearer {SECRET}") as client:
        document = client.get("/api/schema/", params={"format": "json"}).json()
    found = []
    for route, item in document["paths"].items():
        for method in item:
            if method.upper() in ("GET", "POST", "PUT", "PATCH", "DELETE"):
                found.append((method.upper(), fill(route)))
    assert len(found) > 40, "the document lists the daemon's routes"
    return found


def fill(route: str) -> str:
    """A concrete path for a templated route: every parameter a well-formed UUID."""
    parts = route.split("/")
    return "/".join(str(uuid.uuid4()) if part.startswith("{") else part for part in parts)


@pytest.fixture(scope="module")
def anonymous(shared_secured: Daemon) -> Iterator[httpx.Client]:
    with shared_secured.client() as client:
        yield client


@pytest.mark.parametrize("credential", CREDENTIALS)
def test_every_documented_operation_refuses_without_a_valid_token(
    anonymous: httpx.Client, operations: list[tuple[str, str]], credential: str
) -> None:
    headers, params = CREDENTIALS[credential]
    for method, path in operations:
        if (method, path) in OPEN:
            continue
        body = {} if method in ("POST", "PUT", "PATCH") else None
        response = anonymous.request(method, path, headers=headers, params=params, json=body)
        assert_unauthorized(response)
        assert set(response.json()) == {"error", "code", "help"}, (method, path)


@pytest.mark.parametrize("credential", CREDENTIALS)
def test_routes_the_document_does_not_list_refuse_too(
    anonymous: httpx.Client, credential: str
) -> None:
    headers, params = CREDENTIALS[credential]
    for method, path in UNLISTED:
        response = anonymous.request(method, path, headers=headers, params=params)
        assert_unauthorized(response)


def test_the_health_check_stays_open_and_says_nothing_more(anonymous: httpx.Client) -> None:
    response = anonymous.get("/api/health")

    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_the_same_operations_answer_with_the_token(
    shared_secured: Daemon, operations: list[tuple[str, str]]
) -> None:
    """The refusals above are the token's doing: with it, no read is a 401 (the event stream,
    which never ends, aside)."""
    with shared_secured.client(Authorization=f"Bearer {SECRET}") as client:
        for method, path in operations:
            if method == "GET" and path != "/api/events":
                assert client.get(path).status_code != 401, path
