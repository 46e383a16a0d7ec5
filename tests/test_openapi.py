"""The OpenAPI document: valid, complete, honest about errors, changed since the shapes only
where a declaration was wrong or missing, and fuzzed for server errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from drf_spectacular.validation import validate_schema

from tests.daemon import Daemon
from tests.support.openapi import differences, openapi_document

SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"
BEFORE_SHAPES = Path(__file__).parent / "fixtures" / "openapi-888e330.json"


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


# How the document differs from the one before shapes (tests/fixtures/openapi-888e330.json),
# each difference with why. Every one is a declaration that was wrong or missing; any other
# difference (a renamed component, a changed operation id, a lost description) fails the test,
# and so does a listed one that no longer happens.
CORRECTIONS: dict[str, tuple[str, ...]] = {
    "A drawer carries `supersedes` and `superseded_by` once it is corrected (api.md History), "
    "and so do the listings and the search hits that show it": (
        "added Drawer.supersedes",
        "added Drawer.superseded_by",
        "added DrawerListing.supersedes",
        "added DrawerListing.superseded_by",
        "added SearchHit.supersedes",
        "added SearchHit.superseded_by",
    ),
    "A drawer's provenance is `{requested_by, job_id}` (api.md History), not any object": (
        "added DrawerProvenance",
        "changed Drawer.provenance",
        "changed SearchHit.provenance",
    ),
    "A mined drawer's source carries its document's `origin` (api.md Searching: "
    "`source.origin`), which the source declared only for requests": ("added DrawerSource.origin",),
    "A create answers with `created` (api.md Wings, rooms and drawers), which Wing, Room and "
    "Drawer do not declare: creating a wing or a room, and filing a drawer, a note or a diary "
    "entry, answer WingCreated, RoomCreated and DrawerFiled": (
        "added WingCreated",
        "added RoomCreated",
        "added DrawerFiled",
        "changed POST /api/wings 201",
        "changed POST /api/wings 200",
        "changed POST /api/wings/{wing}/rooms 201",
        "changed POST /api/wings/{wing}/rooms 200",
        "changed POST /api/wings/{wing}/rooms/{room}/drawers 201",
        "changed POST /api/wings/{wing}/rooms/{room}/drawers 200",
        "changed POST /api/notes 201",
        "changed POST /api/notes 200",
        "changed POST /api/diary 201",
        "changed POST /api/diary 200",
    ),
    "DrawerList gave `wing` and `room` one NamedRef field, so the document lost `wing` and "
    "titled `room` Wing": (
        "added DrawerList.wing",
        "changed DrawerList.room",
        "changed DrawerList required",
    ),
    "Superseded gave both sides one Drawer field, so the document lost `superseded`; and "
    "`replacement` is null when the drawer is only invalidated (api.md Correcting a drawer)": (
        "added Superseded.superseded",
        "changed Superseded.replacement",
        "changed Superseded required",
    ),
    "The wake-up's `diary` is null without a wing, or with no entry in it": (
        "changed WakeUp.diary",
    ),
    "`GET /api/status` was a free-form object; it now declares its fields (the job counts, the "
    "search indexes' state, the embedding profiles, the request's mode)": (
        "changed GET /api/status 200",
        "added StatusReport",
        "added StatusStore",
        "added StatusDatastore",
        "added StatusMigrations",
        "added StatusEmbeddings",
        "added JobCounts",
        "added SearchIndexStatus",
        "added ModeEnum",
    ),
    "A mined source is listed with when it was first and last recorded": (
        "added MinedSource.created_at",
        "added MinedSource.updated_at",
        "changed MinedSource required",
    ),
    "A mention's observation is `{name, rule, confidence}` (api.md The knowledge graph)": (
        "added Observation",
        "changed Mention.observation",
        "changed MentionLinked.observation",
        "changed MentionAlreadyLinked.observation",
    ),
    "Where an extractor read a relationship or a mention is declared (api.md The knowledge "
    "graph: `provenance`)": (
        "added ExtractionProvenance",
        "changed Relationship.provenance",
        "changed Mention.provenance",
    ),
    "The graph at a glance and an entity's neighbourhood declared their counts and entities as "
    "free-form objects": (
        "added GraphCounts",
        "added GraphTopEntity",
        "added GraphNeighbour",
        "changed Graph.counts",
        "changed Graph.top",
        "changed Graph.entities",
    ),
}


def test_the_document_changed_only_where_a_declaration_was_wrong_or_missing(
    schema: dict,
) -> None:
    before = json.loads(BEFORE_SHAPES.read_text())
    listed = [change for changes in CORRECTIONS.values() for change in changes]
    assert len(listed) == len(set(listed)), "a difference is listed twice"
    found = differences(before, json.loads(json.dumps(schema)))
    assert sorted(found - set(listed)) == [], "differences no correction explains"
    assert sorted(set(listed) - found) == [], "listed differences that no longer happen"
