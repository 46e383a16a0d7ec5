"""The OpenAPI document: valid, complete, honest about errors, changed since the shapes only
where a declaration was wrong or missing, true to what the daemon sends, and fuzzed."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from drf_spectacular.validation import validate_schema
from hypothesis import example, given, settings
from hypothesis import strategies as st

from palace.names import MAX_NAME_LENGTH, PathInvalid, check_drawer_name, check_wing_name
from palace.openapi import DRAWER_NAME_ENDS, DRAWER_NAME_SEGMENTS, SEGMENT_NAME, UUID_SHAPED
from sources.manifest import consent_digest, parse_manifest
from sources.registry_publish import write_index
from tests.support.components import manifest, package
from tests.support.daemon import Daemon
from tests.support.oauth_provider import OAuthProvider, oauth_manifest
from tests.support.openapi import (
    SCHEMATHESIS_EXCLUDED,
    closed,
    differences,
    openapi_document,
    response_validator,
)

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
def test_property_based_run_finds_no_server_error(fresh_daemon: Daemon, tmp_path: Path) -> None:
    """Schemathesis generates requests for every operation (but shutdown) from the schema, then
    runs its stateful phase, and checks every answer against the schema with its objects closed
    (`closed`): an answer with a key its shape does not declare, an undocumented status or a
    schema-violating request accepted fails as surely as a server error."""
    fresh_daemon.start()
    with fresh_daemon.client() as client:
        served = client.get("/api/schema/", params={"format": "json"})
    assert served.status_code == 200
    strict = tmp_path / "openapi.json"
    strict.write_text(json.dumps(closed(served.json())))
    result = subprocess.run(
        [
            str(SCHEMATHESIS),
            "run",
            str(strict),
            "--url",
            fresh_daemon.base_url,
            # Every check but one: a schema-valid request may still be refused for the
            # palace's state (an unknown profile, a transition the job's status does not
            # allow), which bench/schema.py reports.
            "--checks",
            "all",
            "--exclude-checks",
            "positive_data_acceptance",
            *SCHEMATHESIS_EXCLUDED,
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
    "Filing into a `{wing}` or `{room}` shaped like a UUID that names nothing is a 404 (it is "
    "an id, never a name to create), which the two filing routes did not declare "
    "(schemathesis --checks all: an undocumented status)": (
        "added POST /api/wings/{wing}/rooms 404",
        "added POST /api/wings/{wing}/rooms/{room}/drawers 404",
    ),
    "A drawer's `source`, and its `kind`, may be left out (`manual` then), but the document "
    "required them (schemathesis --checks all: a schema-violating request accepted)": (
        "changed DrawerBodyRequest required",
        "changed DrawerBodyRequest.source",
        "changed DrawerSourceRequest.kind",
        "removed DrawerSourceRequest required",
    ),
    "GET /api/sources answers 400 for a bad X-MemCastle-Mode header or an unknown query "
    "parameter, like every route, but did not say so (schemathesis: an undocumented status)": (
        "added GET /api/sources 400",
    ),
    "Counts (`limit`, `offset`, `max_items`, `max_bytes`) are refused when negative, instants "
    "when they are not timestamps, a path's `..._id` when it is not a UUID, an empty "
    "`agent_identity` and a graph `depth` other than 1 to 3, but the document allowed them "
    "(schemathesis: schema-valid requests refused)": (
        "changed GET /api/diary parameters",
        "changed GET /api/entities parameters",
        "changed GET /api/entities/{entity_id}/mentions parameters",
        "changed GET /api/graph parameters",
        "changed GET /api/jobs parameters",
        "changed GET /api/jobs/{job_id} parameters",
        "changed GET /api/recall parameters",
        "changed GET /api/search parameters",
        "changed GET /api/wings/{wing}/rooms/{room}/drawers parameters",
        "changed POST /api/jobs/{job_id}/{action} parameters",
        "changed GET /api/wake-up parameters",
        "changed GET /api/entities/{entity_id}/relationships parameters",
        "changed GET /api/relationships/{relationship_id}/history parameters",
    ),
    "Added since: the database console's routes (docs/database.md)": (
        "added GET /api/db",
        "added POST /api/db",
        "added DELETE /api/db",
        "added DatabaseConsoleAnswer",
        "added DatabaseConsoleOpenRequest",
    ),
    "Added since: installed sources (docs/sources.md), each listed with its state": (
        "added POST /api/source-packages",
        "added GET /api/source-packages/{name}",
        "added DELETE /api/source-packages/{name}",
        "added POST /api/source-packages/{name}/enable",
        "added POST /api/source-packages/{name}/disable",
        "added SourceInstalled",
        "added SourceRemoved",
        "added SourceStateEnum",
        "added SourceAdapter.state",
        "added SourceAdapter.version",
        "added SourceAdapter.unavailable_reason",
        "added SourceAdapter.permissions",
        "added SourceAdapter.consent_digest",
        "added SourceAdapter.digest",
        "added SourceAdapter.installed_at",
        "added SourceAdapter.updated_at",
        "changed SourceAdapter required",
    ),
    "Added since: source registries (docs/source-registry.md): search, preview, install and "
    "update by name; a source installed from one says where it came from and who signed it": (
        "added GET /api/source-registry",
        "added GET /api/source-registry/{spec}",
        "added POST /api/source-registry/{spec}/install",
        "added POST /api/source-registry/{name}/update",
        "added RegistryHit",
        "added RegistrySearch",
        "added RegistryPreview",
        "added RegistryUpdate",
        "added RegistryUpdateStatusEnum",
        "added RegistryInstallRequest",
        "added RegistryUpdateBodyRequest",
        "added SourceAdapter.registry",
        "added SourceAdapter.archive_digest",
        "added SourceAdapter.signed_by",
    ),
    "Added since: signing a source in (docs/source-packages.md, Signing in): the two routes, "
    "and `auth` on a source that declares a sign-in": (
        "added POST /api/source-packages/{name}/auth",
        "added POST /api/source-packages/{name}/auth/{flow}/wait",
        "added SignInStarted",
        "added SignInOutcome",
        "added SignInFlowEnum",
        "added SignInStatusEnum",
        "added CredentialStoreEnum",
        "added SourceAuth",
        "added SourceAdapter.auth",
    ),
    "Added since: removing finished jobs on demand (docs/jobs.md, Retention)": (
        "added POST /api/jobs/prune",
        "added JobsPruned",
        "added JobsPruneRequest",
    ),
    "Every free-text string of a request says it holds no NUL (which every route refuses), "
    "a wing's or room's name follows the naming rules, a job's type is one of the kinds": (
        "changed AliasBodyRequest.alias",
        "changed AliasBodyRequest.requested_by",
        "changed DELETE /api/wings/{wing} parameters",
        "changed DELETE /api/wings/{wing}/rooms/{room} parameters",
        "changed DELETE /api/wings/{wing}/rooms/{room}/drawers/{drawer} parameters",
        "changed DiaryBodyRequest.agent_identity",
        "changed DiaryBodyRequest.content",
        "changed DiaryBodyRequest.requested_by",
        "changed DiaryBodyRequest.tags",
        "changed DiaryBodyRequest.wing",
        "changed DrawerBodyRequest.content",
        "changed DrawerBodyRequest.name",
        "changed DrawerBodyRequest.requested_by",
        "changed DrawerBodyRequest.tags",
        "changed DrawerSourceRequest.agent",
        "changed DrawerSourceRequest.uri",
        "changed EmbeddingBodyRequest.profile",
        "changed EmbeddingBodyRequest.requested_by",
        "changed GET /api/wings/{wing} parameters",
        "changed GET /api/wings/{wing}/rooms parameters",
        "changed GET /api/wings/{wing}/rooms/{room} parameters",
        "changed GET /api/wings/{wing}/rooms/{room}/drawers/{drawer} parameters",
        "changed JobSubmissionRequest.based_on_job",
        "changed JobSubmissionRequest.locator",
        "changed JobSubmissionRequest.options",
        "changed JobSubmissionRequest.path",
        "changed JobSubmissionRequest.requested_by",
        "changed JobSubmissionRequest.scope",
        "changed JobSubmissionRequest.source",
        "changed JobSubmissionRequest.type",
        "changed JobSubmissionRequest.wing",
        "changed MentionBodyRequest.kind",
        "changed MentionBodyRequest.name",
        "changed MentionBodyRequest.requested_by",
        "changed NamedBodyRequest.description",
        "changed NamedBodyRequest.name",
        "changed NamedBodyRequest.requested_by",
        "changed NoteBodyRequest.content",
        "changed NoteBodyRequest.requested_by",
        "changed NoteBodyRequest.room",
        "changed NoteBodyRequest.tags",
        "changed NoteBodyRequest.uri",
        "changed NoteBodyRequest.wing",
        "changed POST /api/wings/{wing}/rooms parameters",
        "changed POST /api/wings/{wing}/rooms/{room}/drawers parameters",
        "changed SearchBodyRequest.profile",
        "changed SearchBodyRequest.text",
        "changed SearchFilterRequest.room",
        "changed SearchFilterRequest.tags",
        "changed SearchFilterRequest.wing",
        "changed SupersedeBodyRequest.content",
        "changed SupersedeBodyRequest.requested_by",
        "changed SupersedeBodyRequest.tags",
    ),
    "Miners are managed through /api/miners (api.md Miners)": (
        "added GET /api/miners",
        "added POST /api/miners",
        "added POST /api/miners/reload",
        "added GET /api/miners/{name}",
        "added PUT /api/miners/{name}",
        "added DELETE /api/miners/{name}",
        "added POST /api/miners/{name}/enable",
        "added POST /api/miners/{name}/disable",
        "added POST /api/miners/{name}/run",
        "added Miner",
        "added MinerCredential",
        "added MinerCredentialKindEnum",
        "added MinerList",
        "added MinerRemoved",
        "added MinersReloaded",
        "added MinerDefinitionRequest",
        "added MinerChangeRequest",
        "added MinerRunRequest",
    ),
    "Triggers are managed through /api/triggers (api.md Triggers), and a source says which "
    "triggers may start it": (
        "added GET /api/triggers",
        "added POST /api/triggers",
        "added POST /api/triggers/reload",
        "added GET /api/triggers/{name}",
        "added PUT /api/triggers/{name}",
        "added DELETE /api/triggers/{name}",
        "added POST /api/triggers/{name}/enable",
        "added POST /api/triggers/{name}/disable",
        "added POST /api/triggers/{name}/fire",
        "added Trigger",
        "added TriggerState",
        "added TriggerList",
        "added TriggerRemoved",
        "added TriggerFired",
        "added TriggersReloaded",
        "added TriggerDefinitionRequest",
        "added TriggerChangeRequest",
        "added TriggerTypeEnum",
        "added TriggerStatusEnum",
        "added FireOutcomeEnum",
        "added TriggersEnum",
        "added SourceAdapter.triggers",
    ),
    "Recall's JSON request has a filter without room, which recall refuses": (
        "added RecallBodyRequest",
        "added RecallFilterRequest",
        "changed POST /api/recall requestBody",
        "added RankingEnum",
        "changed SearchBodyRequest.ranking",
        "removed SearchBodyRankingEnum",
    ),
    "A search filter's temporal is one of the forms the daemon reads, not any JSON": (
        "changed SearchFilterRequest.temporal",
    ),
    "Added since: the effective configuration, secrets left out (docs/api.md, Configuration)": (
        "added GET /api/config",
        "added EffectiveConfig",
        "added ConfigAssets",
    ),
    "A hit's signals declare each leg's score and, with source preferences configured, "
    "`signals.preference` (api.md Searching), which is an object, not a score": (
        "added SearchSignals",
        "added PreferenceSignal",
        "added PreferenceCriterion",
        "added LevelEnum",
        "changed SearchHit.signals",
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


def test_a_strict_response_schema_refuses_what_the_shape_does_not_declare(schema: dict) -> None:
    health = response_validator(schema, "GET", "/api/health", 200)
    assert health.is_valid({"status": "ok"})
    assert not health.is_valid({"status": "ok", "uptime": 1})
    assert not health.is_valid({})
    wake_up = response_validator(schema, "GET", "/api/wake-up", 200)
    now = "2026-12-04T06:04:28.123456Z"
    drawer = {
        "id": "0b2e6a52-5d47-4d0e-9d86-1f1d2c1a5e10",
        "wing": "1b2e6a52-5d47-4d0e-9d86-1f1d2c1a5e10",
        "room": "2b2e6a52-5d47-4d0e-9d86-1f1d2c1a5e10",
        "name": None,
        "content": "c",
        "content_hash": "h",
        "fingerprint": "f",
        "source": {"kind": "manual"},
        "tags": [],
        "provenance": {"requested_by": "cli", "job_id": None},
        "valid_from": now,
        "valid_to": None,
        "created_at": now,
        "updated_at": now,
    }
    answer = {"diary": drawer, "recent_highlights": [drawer], "generated_at": now}
    assert wake_up.is_valid(answer)
    assert wake_up.is_valid({**answer, "diary": None})
    assert not wake_up.is_valid({**answer, "generated_at": "yesterday"})
    assert not wake_up.is_valid({**answer, "recent_highlights": None})
    for wrong in (
        {"source": {"kind": "manual", "secret": "s"}},
        {"provenance": {"requested_by": "cli"}},
        {"id": "not a uuid"},
        {"content": None},
    ):
        assert not wake_up.is_valid({**answer, "diary": {**drawer, **wrong}}), wrong


TERMINAL = ("completed", "failed", "cancelled")
WAIT = 30.0


@pytest.fixture(scope="module")
def extracting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon that extracts what it mines and notes (the heuristic provider), so its graph
    has what an extractor writes as well as what people do."""
    running = Daemon(
        tmp_path_factory.mktemp("answers"), {"MEMCASTLE_EXTRACTION_PROVIDER": "heuristic"}
    ).start()
    yield running
    running.stop()


class Answers:
    """Requests to a daemon, each answer checked against the body its route documents for its
    status, with every object closed to keys it does not declare."""

    def __init__(self, client: httpx.Client, document: dict[str, Any]) -> None:
        self.client = client
        self.document = document
        self.checked: set[tuple[str, str, int]] = set()

    def __call__(
        self,
        method: str,
        route: str,
        status: int = 200,
        *,
        params: Any = None,
        json: Any = None,
        content: bytes | None = None,
        headers: dict[str, str] | None = None,
        **parts: str,
    ) -> Any:
        response = self.client.request(
            method,
            route.format(**parts),
            params=params,
            json=json,
            content=content,
            headers=headers,
        )
        assert response.status_code == status, response.text
        body = response.json()
        validator = response_validator(self.document, method, route, status)
        problems = [
            f"{'/'.join(map(str, error.absolute_path)) or '(body)'}: {error.message}"
            for error in validator.iter_errors(body)
        ]
        assert problems == [], f"{method} {route} {status}: {problems}"
        self.checked.add((method, route, status))
        return body

    def job(self, job_id: str) -> dict[str, Any]:
        """The job once it ended; it must have completed."""
        deadline = time.monotonic() + WAIT
        while True:
            job = self("GET", "/api/jobs/{job_id}", job_id=job_id)
            if job["status"] in TERMINAL:
                assert job["status"] == "completed", job
                return job
            assert time.monotonic() < deadline, f"job {job_id} did not end: {job}"
            time.sleep(0.05)


def test_real_answers_are_what_the_document_declares(
    extracting: Daemon, schema: dict, tmp_path: Path, wing_name: str
) -> None:
    with extracting.client() as client:
        answer = Answers(client, schema)
        w = {"wing": wing_name}
        answer("GET", "/api/health")
        answer("GET", "/api/status")
        answer("GET", "/api/config")
        answer("POST", "/api/wings", 201, json={"name": wing_name})
        answer("POST", "/api/wings", 200, json={"name": wing_name, "description": "d"})
        answer("GET", "/api/wings")
        answer("GET", "/api/wings/{wing}", **w)
        answer("POST", "/api/wings/{wing}/rooms", 201, json={"name": "notes"}, **w)
        answer("GET", "/api/wings/{wing}/rooms", **w)
        answer("GET", "/api/wings/{wing}/rooms/{room}", **w, room="notes")

        drawers = "/api/wings/{wing}/rooms/{room}/drawers"
        named = answer(
            "POST",
            drawers,
            201,
            **w,
            room="notes",
            json={
                "content": "We deploy with Atlas on Fridays.",
                "name": "ops/deploy.md",
                "tags": ["ops"],
                "source": {"kind": "file", "uri": "/work/ops.md"},
            },
        )
        unnamed = {"content": "Alice reviews the deploys."}
        filed = answer("POST", drawers, 201, **w, room="notes", json=unnamed)
        answer("POST", drawers, 200, **w, room="notes", json=unnamed)
        answer("GET", drawers, **w, room="notes")
        answer("GET", drawers + "/{drawer}", **w, room="notes", drawer="ops/deploy.md")
        answer("GET", "/api/drawers/{drawer_id}", drawer_id=named["id"])

        # A correction, then an invalidation: history, listings and hits carry the links.
        revised = answer(
            "POST",
            "/api/drawers/{drawer_id}/supersede",
            drawer_id=named["id"],
            json={"content": "We deploy with Atlas on Thursdays."},
        )
        retired = answer(
            "POST",
            "/api/drawers/{drawer_id}/supersede",
            drawer_id=revised["replacement"]["id"],
            json={},
        )
        assert retired["replacement"] is None
        history = answer("GET", "/api/drawers/{drawer_id}/history", drawer_id=named["id"])
        assert {"supersedes", "superseded_by"} <= {k for v in history["versions"] for k in v}
        answer("GET", drawers, **w, room="notes")
        answer("GET", "/api/drawers/{drawer_id}/duplicates", drawer_id=named["id"])

        answer("POST", "/api/notes", 201, json={**w, "content": "Atlas uses Grafana."})
        answer("POST", "/api/diary", 201, json={**w, "agent_identity": "a", "content": "hi"})
        answer("GET", "/api/diary", params={**w, "agent_identity": "a"})
        answer("GET", "/api/wake-up", params={**w, "agent_identity": "a"})
        nobody = answer("GET", "/api/wake-up", params={"agent_identity": "a", "wing": "none-x"})
        assert nobody["diary"] is None

        # Mined drawers (their source has an origin), and what the extractor reads of them.
        docs = tmp_path / "docs"
        docs.mkdir()
        (docs / "team.md").write_text("Alice works on Atlas. Atlas depends on PostgreSQL.\n")
        mined = answer("POST", "/api/jobs", 201, json={"type": "mine", "path": str(docs), **w})
        answer.job(mined["id"])
        answer("GET", "/api/sources")
        answer("GET", "/api/jobs", params={"kind": "mine"})

        def mined_atlas() -> dict[str, Any] | None:
            """Atlas as the extractor read it from the mined document, once it has."""
            listed = answer("GET", "/api/entities", params={"name": "Atlas", "limit": 200})
            for entity in listed["entities"]:
                route = "/api/entities/{entity_id}/mentions"
                mentions = answer("GET", route, entity_id=entity["id"])["mentions"]
                if any("origin" in each["drawer"]["source"] for each in mentions):
                    assert all("provenance" in each for each in mentions), mentions
                    return entity
            return None

        deadline = time.monotonic() + WAIT
        while (atlas := mined_atlas()) is None:
            assert time.monotonic() < deadline, "the extract job did not read the mined drawer"
            time.sleep(0.1)
        e = {"entity_id": atlas["id"]}
        answer("GET", "/api/entities/{entity_id}", **e)
        read = answer("GET", "/api/entities/{entity_id}/relationships", **e)["relationships"]
        assert any("provenance" in each for each in read), "no relationship by the extractor"
        answer("GET", "/api/entities/{entity_id}/candidates", **e)
        answer("POST", "/api/entities/{entity_id}/aliases", 201, json={"alias": "ATLAS"}, **e)
        answer("POST", "/api/entities/{entity_id}/aliases", 200, json={"alias": "ATLAS"}, **e)
        mention = {"name": "Atlas", "kind": atlas["kind"]}
        # A drawer filed by hand is not read by the extractor: a person links it.
        by_hand = {"drawer_id": filed["id"]}
        answer("POST", "/api/drawers/{drawer_id}/mentions", 201, json=mention, **by_hand)
        answer("POST", "/api/drawers/{drawer_id}/mentions", 200, json=mention, **by_hand)

        # Facts asserted, contradicted and superseded: relationships with their lifecycle.
        def checkpoint(*facts: dict[str, Any]) -> None:
            items = [
                {"destination": "project", "wing": wing_name, "content": f"{fact}", "tags": []}
                | {"fact": fact}
                for fact in facts
            ]
            body = {"type": "checkpoint", "payload": {"items": items}}
            answer.job(answer("POST", "/api/jobs", 201, json=body)["id"])

        def lifecycles(entity_id: str) -> list[dict[str, Any]]:
            route = "/api/entities/{entity_id}/relationships"
            params = {"include_expired": "true"}
            read = answer("GET", route, entity_id=entity_id, params=params)["relationships"]
            return [fact["lifecycle"] for fact in read]

        bob = {"name": "Bob", "kind": "person"}
        checkpoint(
            *(
                {"op": "add", "subject": bob, "predicate": "located_in", "confidence": confidence}
                | {"object": {"name": city, "kind": "place"}}
                for city, confidence in (("Lyon", 0.4), ("Nice", 0.9))
            )
        )
        found = answer("GET", "/api/entities", params={"name": "Bob"})["entities"]
        bob_id = next(entity["id"] for entity in found if entity["name"] == "Bob")
        facts = answer("GET", "/api/entities/{entity_id}/relationships", entity_id=bob_id)
        low, high = sorted(facts["relationships"], key=lambda fact: fact["confidence"])
        checkpoint(
            {"op": "link", "relationship_id": low["id"], "other_id": high["id"]}
            | {"kind": "contradicts", "reason": "one city at a time"}
        )
        assert any("preferred" in each for each in lifecycles(bob_id)), "no conflict"
        checkpoint(
            {"op": "supersede", "relationship_id": high["id"], "reason": "moved"}
            | {"to": {"name": "Paris", "kind": "place"}}
        )
        assert "superseded" in {each["state"] for each in lifecycles(bob_id)}
        route = "/api/relationships/{relationship_id}/history"
        answer("GET", route, relationship_id=low["id"])
        answer("GET", "/api/graph")
        answer("GET", "/api/graph", params={"entity": bob_id, "depth": 2})
        answer("GET", "/api/graph", params={"entity": atlas["id"]})

        hits = answer("GET", "/api/search", params={"q": "Atlas", **w})["results"]
        assert any("origin" in hit["source"] for hit in hits), "no mined drawer found"
        expanded = {"q": "deploys", "expand": "true", "include_historical": "true"}
        hits = answer("GET", "/api/search", params=expanded)["results"]
        assert any("via" in hit for hit in hits), "no hit by expansion"
        everything = {"text": "deploy", "filter": {**w, "temporal": "all"}}
        hits = answer("POST", "/api/search", json=everything)["results"]
        assert any("superseded_by" in hit for hit in hits), "no corrected drawer found"
        answer("GET", "/api/recall", params={"q": "Grafana", **w})
        answer("POST", "/api/recall", json={"text": "Grafana", "filter": w})

        vector = [1.0] + [0.0] * 383
        body = {"profile": "local", "embedding": vector}
        answer("PUT", "/api/drawers/{drawer_id}/embedding", json=body, drawer_id=filed["id"])
        answer("POST", "/api/auth/token", 201)
        answer("DELETE", "/api/auth/token")
        answer("GET", "/api/db")
        answer("POST", "/api/db", 201, json={"port": 0})
        answer("POST", "/api/db", 200, json={"port": 0})
        answer("POST", "/api/db", 409, json={"port": 1})
        answer("DELETE", "/api/db")

        # A source package installed, shown, enabled, disabled and removed.
        probe = {"name": "probe"}
        archive = {"content": package("probe"), "headers": {"Content-Type": "application/gzip"}}
        answer("POST", "/api/source-packages", 400, **archive)
        consent = {
            "consent": consent_digest("probe", parse_manifest(manifest("probe")).permissions)
        }
        answer("POST", "/api/source-packages", params=consent, **archive)
        answer("GET", "/api/source-packages/{name}", **probe)
        answer("POST", "/api/source-packages/{name}/enable", **probe)
        answer("POST", "/api/source-packages/{name}/disable", **probe)
        answer("POST", "/api/source-packages/{name}/enable", 404, name="nothing")
        answer("DELETE", "/api/source-packages/{name}", **probe)

        # A sign-in: refused for a source that declares none, then run against a local
        # provider for one that does.
        answer("POST", "/api/source-packages/{name}/auth", 400, name="directory")
        answer("POST", "/api/source-packages/{name}/auth", 404, name="nothing")
        signs_in(answer)

        # The same source from a registry of a directory: searched, previewed, installed and
        # updated by name; a refusal of the registry's.
        site = tmp_path / "registry"
        site.mkdir()
        (site / "probe-1.0.0.tar.gz").write_bytes(package("probe"))
        write_index([site / "probe-1.0.0.tar.gz"], site / "memcastle-index.json")
        here = {"registry": str(site)}
        answer("GET", "/api/source-registry", params={"q": "probe", **here})
        answer("GET", "/api/source-registry/{spec}", params=here, spec="probe")
        answer("GET", "/api/source-registry/{spec}", 404, params=here, spec="nothing")
        missing = {"registry": str(tmp_path / "none")}
        answer("GET", "/api/source-registry", 502, params=missing)
        install = "/api/source-registry/{spec}/install"
        answer("POST", install, json={**here, **consent}, spec="probe@1.0.0")
        update = "/api/source-registry/{name}/update"
        answer("POST", update, json={"check": True}, **probe)
        answer("POST", update, json={}, **probe)
        answer("DELETE", "/api/source-packages/{name}", **probe)

        # A miner created, listed, shown, changed, disabled, enabled, run, reloaded, removed.
        miner = {"name": "openapi"}
        place = {"source": "directory", "locator": str(tmp_path), "wing": "miners-openapi"}
        answer("POST", "/api/miners", 201, json={**miner, **place})
        answer("GET", "/api/miners")
        answer("GET", "/api/miners/{name}", **miner)
        answer("PUT", "/api/miners/{name}", json={"scope": {"since": "2026-01"}}, **miner)
        answer("POST", "/api/miners/{name}/disable", **miner)
        answer("POST", "/api/miners/{name}/enable", **miner)
        answer.job(answer("POST", "/api/miners/{name}/run", 201, **miner)["id"])
        answer("POST", "/api/miners/reload")

        # A trigger of that miner defined, listed, shown, changed, enabled, fired, disabled,
        # reloaded, removed.
        trigger = {"name": "openapi-hourly"}
        schedule = {"miner": "openapi", "type": "schedule", "settings": {"every": "1h"}}
        answer("POST", "/api/triggers", 201, json={**trigger, **schedule})
        answer("GET", "/api/triggers")
        answer("GET", "/api/triggers/{name}", **trigger)
        answer("PUT", "/api/triggers/{name}", json={"settings": {"every": "2h"}}, **trigger)
        answer("POST", "/api/triggers/{name}/enable", **trigger)
        answer.job(answer("POST", "/api/triggers/{name}/fire", 202, **trigger)["job"])
        answer("POST", "/api/triggers/{name}/disable", **trigger)
        answer("POST", "/api/triggers/reload")
        answer("DELETE", "/api/triggers/{name}", **trigger)
        answer("DELETE", "/api/miners/{name}", **miner)

        answer("POST", "/api/jobs/prune", json={"older_than_days": 365})
        demo = {"type": "demo", "steps": 50, "step_ms": 100}
        started = answer("POST", "/api/jobs", 201, json=demo)
        answer("POST", "/api/jobs/{job_id}/{action}", job_id=started["id"], action="cancel")
        answer("GET", "/api/wings/{wing}", 404, wing="no-such-wing")
        answer("GET", "/api/search", 400, params={"q": "x", "limit": "many"})

        answer("DELETE", drawers + "/{drawer}", **w, room="notes", drawer=filed["id"])
        answer("DELETE", "/api/wings/{wing}/rooms/{room}", **w, room="notes")
        answer("DELETE", "/api/wings/{wing}", **w)

    # Every route was asked, but shutdown (it would stop the daemon) and the event stream.
    documented = {
        (method.upper(), route)
        for route, operations in schema["paths"].items()
        for method in operations
    }
    asked = {(method, route) for method, route, _ in answer.checked}
    assert documented - asked == {("POST", "/api/shutdown"), ("GET", "/api/events")}
    assert "Internal Server Error" not in extracting.log()


def signs_in(answer: Answers) -> None:
    """The probe source declaring the device flow of a local provider, signed in."""
    provider = OAuthProvider(interval=0.05).start()
    try:
        text = oauth_manifest(provider, flow="device")
        digest = consent_digest("probe", parse_manifest(text).permissions)
        archive = {
            "content": package("probe", text),
            "headers": {"Content-Type": "application/gzip"},
        }
        installed = answer("POST", "/api/source-packages", params={"consent": digest}, **archive)
        assert installed["source"]["auth"]["signed_in"] is False
        probe = {"name": "probe"}
        started = answer("POST", "/api/source-packages/{name}/auth", **probe)
        wait = "/api/source-packages/{name}/auth/{flow}/wait"
        now = {"timeout": "0"}
        answer("POST", wait, params=now, **probe, flow=started["flow"])
        provider.approve(started["user_code"])
        deadline = time.monotonic() + WAIT
        while (told := answer("POST", wait, params=now, **probe, flow=started["flow"]))[
            "status"
        ] == "pending":
            assert time.monotonic() < deadline, "the sign-in did not end"
            time.sleep(0.05)
        assert told["signed_in"] is True
        answer("POST", wait, 502, params=now, **probe, flow=started["flow"])
        assert answer("GET", "/api/source-packages/{name}", **probe)["auth"]["signed_in"]
        answer("GET", "/api/sources")
        answer("DELETE", "/api/source-packages/{name}", **probe)
    finally:
        provider.stop()


@settings(max_examples=500, deadline=None)
@example("0\n")
@given(st.text(max_size=40) | st.uuids().map(str) | st.uuids().map(lambda u: "{" + u.hex + "}"))
def test_the_declared_name_rules_are_the_ones_the_palace_enforces(name: str) -> None:
    """What the document declares of a wing's or room's name (`palace.openapi`) says exactly
    what `palace.names` refuses, for any text. A JSON Schema pattern is an ECMA-262 regular
    expression, whose `$` is the end of the text (Python's also matches before a last newline):
    `fullmatch` reads it so."""
    declared = re.fullmatch(SEGMENT_NAME, name) is not None and not re.fullmatch(UUID_SHAPED, name)
    try:
        check_wing_name(name)
        accepted = True
    except PathInvalid:
        accepted = False
    assert declared == accepted, name


@settings(max_examples=500, deadline=None)
@example("a\n")
@example("src/../lib.rs")
@example("...")
@given(st.text(max_size=40) | st.text("ab./ \t\n\x85\u2028", max_size=12) | st.uuids().map(str))
def test_the_declared_drawer_name_rules_are_the_ones_the_palace_enforces(name: str) -> None:
    """The same for a drawer's name, whose segments `/` separates (`palace.names`): the
    document's two patterns and its `not`, read as ECMA-262 reads them, say exactly what the
    daemon refuses. Before they were declared a generated name with a control character was a
    schema-valid request refused."""
    declared = (
        re.fullmatch(DRAWER_NAME_ENDS, name) is not None
        and re.fullmatch(DRAWER_NAME_SEGMENTS, name) is not None
        and not re.fullmatch(UUID_SHAPED, name)
        and len(name) <= MAX_NAME_LENGTH
    )
    try:
        check_drawer_name(name)
        accepted = True
    except PathInvalid:
        accepted = False
    assert declared == accepted, name
