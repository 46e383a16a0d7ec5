"""Token authentication as the tests turn it on and check its refusals."""

from __future__ import annotations

import httpx

from tests.support.http import assert_error

# The configured secret of a daemon started with `AUTH_ENV`.
SECRET = "s3cret-0123456789-abcdefghijklmn"
AUTH_ENV = {"MEMCASTLE_AUTH_ENABLED": "true", "MEMCASTLE_AUTH_TOKEN": SECRET}
UNAUTHORIZED = "memcastle::auth::unauthorized"


def assert_unauthorized(response: httpx.Response) -> None:
    """A 401 with the error body, and the challenge that names the scheme to use."""
    assert_error(response, 401, UNAUTHORIZED)
    assert response.headers.get("www-authenticate") == "Bearer"
