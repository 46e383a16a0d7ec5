"""Every failure is `{error, code, help}`; an unexpected one never leaks its detail."""

from __future__ import annotations

import logging

import pytest
from django.core.exceptions import RequestDataTooBig
from django.test import RequestFactory
from django.utils.log import log_response
from rest_framework import exceptions

from kernel.errors import InputInvalid, MemCastleError, StoreFailed
from kernel.rest import exception_handler
from palace.search.indexes import IndexesBuilding


def test_an_unexpected_exception_is_a_generic_500(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="memcastle.api"):
        response = exception_handler(RuntimeError("secret detail /home/alice"), {})
    assert response.status_code == 500
    assert response.data == {
        "error": "the daemon failed to handle the request",
        "code": "memcastle::server::failed",
        "help": "retry the request; if it keeps failing, read the daemon log",
    }
    assert "secret detail" not in str(response.data)
    assert "secret detail /home/alice" in caplog.text


def test_domain_errors_keep_their_status_and_code() -> None:
    response = exception_handler(InputInvalid("limit", "must not be negative"), {})
    assert response.status_code == 400
    assert response.data["code"] == "memcastle::input::invalid"
    assert response.data["error"] == "`limit` must not be negative"


@pytest.mark.parametrize(
    ("exc", "status", "code"),
    [
        (exceptions.ParseError("bad"), 400, "memcastle::input::invalid"),
        (exceptions.MethodNotAllowed("PUT"), 405, "memcastle::http::method_not_allowed"),
        (exceptions.UnsupportedMediaType("text/plain"), 415, "memcastle::input::invalid"),
        (exceptions.NotFound(), 404, "memcastle::http::not_found"),
    ],
)
def test_framework_errors_are_translated(exc: Exception, status: int, code: str) -> None:
    response = exception_handler(exc, {})
    assert response.status_code == status
    assert set(response.data) == {"error", "code", "help"}
    assert response.data["code"] == code


def test_the_body_has_exactly_three_fields() -> None:
    assert set(MemCastleError("x").body()) == {"error", "code", "help"}


def test_a_body_over_the_limit_is_a_413() -> None:
    response = exception_handler(RequestDataTooBig("too big"), {})
    assert response.status_code == 413
    assert response.data["code"] == "memcastle::input::too_large"


def _request_log(exc: Exception, caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """What Django's request log says of the response `exc` becomes."""
    response = exception_handler(exc, {})
    request = RequestFactory().get("/api/search")
    with caplog.at_level(logging.INFO, logger="django.request"):
        log_response("Service Unavailable: %s", request.path, response=response, request=request)
    return [record for record in caplog.records if record.name == "django.request"]


def test_a_search_refused_while_indexing_is_not_logged_as_a_server_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert _request_log(IndexesBuilding("the search indexes are being rebuilt"), caplog) == []


def test_a_failing_datastore_is_still_logged_as_a_server_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    records = _request_log(StoreFailed("the datastore failed to answer", status=503), caplog)
    assert [record.levelno for record in records] == [logging.ERROR]
