"""Every failure is `{error, code, help}`; an unexpected one never leaks its detail."""

from __future__ import annotations

import logging

import pytest
from django.core.exceptions import RequestDataTooBig
from rest_framework import exceptions

from memcastle_project.api import exception_handler
from memcastle_project.errors import InputInvalid, MemCastleError


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
