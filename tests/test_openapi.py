"""The OpenAPI document: valid, complete, honest about errors, and fuzzed for server errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from drf_spectacular.validation import validate_schema

from tests.support.daemon import Daemon
from tests.support.openapi import openapi_document

SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"


@pytest.fixture(scope="module")
def schema() -> dict:
    return openapi_document()


def test_schema_is_valid_openapi(schema: dict) -> None:
    validate_schema(schema)


def test_every_route_is_documented(schema: dict) -> None:
    documented = set(schema["paths"])
    for route in (
        "/api/health",
        "/api/status",
        "/api/shutdown",
        "/api/auth/token",
        "/api/wings",
        "/api/wings/{wing}",
        "/api/wings/{wing}/rooms",
        "/api/wings/{wing}/rooms/{room}",
        "/api/wings/{wing}/rooms/{room}/drawers",
        "/api/wings/{wing}/rooms/{room}/drawers/{drawer}",
        "/api/drawers/{drawer_id}",
        "/api/jobs",
        "/api/jobs/{job_id}",
        "/api/jobs/{job_id}/{action}",
        "/api/events",
    ):
        assert route in documented


def test_every_operation_documents_the_error_body(schema: dict) -> None:
    error_ref = "#/components/schemas/Error"
    assert set(schema["components"]["schemas"]["Error"]["required"]) == {"error", "code", "help"}
    for path, operations in schema["paths"].items():
        if path in ("/api/health", "/api/shutdown", "/api/schema/"):
            continue
        for method, operation in operations.items():
            responses = operation["responses"]
            for status in ("401", "500"):
                content = responses[status]["content"]["application/json"]["schema"]
                assert content == {"$ref": error_ref}, f"{method.upper()} {path} {status}"


def test_the_live_schema_and_docs_are_served(daemon: Daemon) -> None:
    with daemon.client() as client:
        served = client.get("/api/schema/", params={"format": "json"})
        assert served.status_code == 200
        assert served.json()["info"]["title"] == "MemCastle"
        docs = client.get("/api/docs/")
        assert docs.status_code == 200
        assert "swagger" in docs.text.lower()


@pytest.mark.slow
def test_property_based_run_finds_no_server_error(fresh_daemon: Daemon) -> None:
    """Schemathesis generates requests for every operation (but shutdown) from the schema."""
    fresh_daemon.start()
    result = subprocess.run(
        [
            str(SCHEMATHESIS),
            "run",
            f"{fresh_daemon.base_url}/api/schema/",
            "--checks",
            "not_a_server_error",
            "--exclude-path",
            "/api/shutdown",
            # A stream that ends only when the daemon stops.
            "--exclude-path",
            "/api/events",
            "--max-examples",
            "10",
            "--workers",
            "1",
            "--seed",
            "20261202",
        ],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=fresh_daemon.root,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "Internal Server Error" not in fresh_daemon.log()
