"""Every MCP tool, with the SDK's own client, against the shared real daemon.

A tool is a thin layer over the service the REST route calls, so where both exist the tests
compare the two answers (and the two error bodies) rather than restating the service's rules.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from mcp_bridge.server import instructions
from mcp_bridge.tools import TOOLS
from tests.support.daemon import Daemon
from tests.support.mcp_client import call, connect, failure, finished, wait_for_job

pytestmark = pytest.mark.anyio


@pytest.fixture
def rest(daemon: Daemon) -> httpx.Client:
    with daemon.client() as client:
        yield client


def _item(content: str, **extra: Any) -> dict[str, Any]:
    return {"destination": "project", "content": content, "tags": [], **extra}


async def test_initialize_sends_the_generated_instructions(daemon: Daemon) -> None:
    async with connect(daemon.base_url) as client:
        assert client.instructions == instructions(TOOLS)
        assert client.server_info is not None and client.server_info.name == "memcastle"
        assert client.protocol_version < "2026", "the session (initialize) protocol is spoken"


async def test_list_tools_advertises_the_table(daemon: Daemon) -> None:
    async with connect(daemon.base_url) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert list(listed) == [tool.name for tool in TOOLS]
    for tool in TOOLS:
        advertised = listed[tool.name]
        assert advertised.title == tool.title
        assert advertised.input_schema == tool.input_schema
        hints = advertised.annotations
        assert hints is not None
        assert (
            hints.read_only_hint,
            hints.destructive_hint,
            hints.idempotent_hint,
            hints.open_world_hint,
        ) == (tool.read_only, tool.destructive, tool.idempotent, tool.open_world)


async def test_status_is_the_rest_report_with_the_session_mode(
    daemon: Daemon, rest: httpx.Client
) -> None:
    async with connect(daemon.base_url) as client:
        status = await call(client, "memcastle_status")
    expected = rest.get("/api/status").json()
    for volatile in ("uptime_secs", "drawers", "jobs", "search", "datastore", "migrations"):
        status.pop(volatile)
        expected.pop(volatile)
    assert status == expected
    assert status["mode"] == "full"


async def test_unknown_tool_and_unknown_argument_are_refused(daemon: Daemon) -> None:
    async with connect(daemon.base_url) as client:
        unknown = await failure(client, "memcastle_delete_everything")
        extra = await failure(client, "memcastle_status", {"verbose": True})
        channel = await failure(
            client,
            "memcastle_diary_write",
            {"agent_identity": "a", "wing": "w", "content": "x", "requested_by": "http"},
        )
    assert unknown.code == "memcastle::input::invalid" and "`name`" in unknown.body["error"]
    assert extra.code == "memcastle::input::invalid" and "`verbose`" in extra.body["error"]
    assert "`requested_by`" in channel.body["error"], "MCP writes are always requested by mcp"


async def test_search_and_recall_answer_as_rest(
    daemon: Daemon, rest: httpx.Client, wing_name: str
) -> None:
    for content in ("the formatter runs before commit", "lint the formatter config"):
        note = {"content": content, "wing": wing_name, "room": "tooling"}
        assert rest.post("/api/notes", json=note).status_code == 201
    options = {"query": "formatter", "wing": wing_name, "ranking": "lexical", "limit": 0}
    async with connect(daemon.base_url) as client:
        searched = await call(client, "memcastle_search", {**options, "room": "tooling"})
        recalled = await call(client, "memcastle_recall", options)
        tags = await call(client, "memcastle_search", {**options, "tags": ["none-such"]})
        spelled_q = await call(
            client, "memcastle_search", {"q": "formatter", "wing": wing_name, "room": "tooling"}
        )
        missing = await failure(client, "memcastle_search", {"wing": wing_name})
    params = {"q": "formatter", "wing": wing_name, "ranking": "lexical", "limit": 0}
    assert searched == rest.get("/api/search", params={**params, "room": "tooling"}).json()
    assert recalled == rest.get("/api/recall", params=params).json()
    assert len(searched["results"]) == 2
    assert tags["results"] == []
    assert spelled_q["results"] == searched["results"]
    assert missing.code == "memcastle::input::invalid"


@pytest.mark.parametrize(
    ("tool", "arguments", "route", "params"),
    [
        (
            "memcastle_search",
            {"query": "x", "ranking": "fancy"},
            "/api/search",
            {"ranking": "fancy"},
        ),
        ("memcastle_search", {"query": "x", "limit": -1}, "/api/search", {"limit": -1}),
        (
            "memcastle_search",
            {"query": "x", "as_of": "2026-01-01", "include_historical": True},
            "/api/search",
            {"as_of": "2026-01-01", "include_historical": "true"},
        ),
        (
            "memcastle_search",
            {"query": "x", "from": "2026-02-01"},
            "/api/search",
            {"from": "2026-02-01"},
        ),
        (
            "memcastle_search",
            {"query": "x", "wing": "no-such-wing"},
            "/api/search",
            {"wing": "no-such-wing"},
        ),
        (
            "memcastle_search",
            {"query": "x", "ranking": "semantic", "profile": "nope"},
            "/api/search",
            {"ranking": "semantic", "profile": "nope"},
        ),
        ("memcastle_recall", {"query": "  "}, "/api/recall", {}),
    ],
)
async def test_search_refusals_are_the_rest_refusals(
    daemon: Daemon,
    rest: httpx.Client,
    tool: str,
    arguments: dict[str, Any],
    route: str,
    params: dict[str, Any],
) -> None:
    async with connect(daemon.base_url) as client:
        refused = await failure(client, tool, arguments)
    response = rest.get(route, params={"query": arguments["query"], **params})
    assert response.status_code in (400, 404)
    assert refused.body == response.json()


async def test_diary_write_read_and_wake_up(
    daemon: Daemon, rest: httpx.Client, wing_name: str
) -> None:
    agent = f"agent-{uuid.uuid4().hex[:8]}"
    async with connect(daemon.base_url) as client:
        entry = await call(
            client,
            "memcastle_diary_write",
            {"agent_identity": agent, "wing": wing_name, "content": "shipped the parser"},
        )
        read = await call(client, "memcastle_diary_read", {"agent_identity": agent, "limit": 0})
        woken = await call(
            client, "memcastle_wake_up", {"agent_identity": agent, "wing": wing_name}
        )
        missing = await failure(client, "memcastle_diary_read", {})
        bad_budget = await failure(
            client, "memcastle_wake_up", {"agent_identity": agent, "max_bytes": -1}
        )
        blank = await failure(
            client,
            "memcastle_diary_write",
            {"agent_identity": agent, "wing": wing_name, "content": "   "},
        )
    assert entry["provenance"]["requested_by"] == "mcp"
    assert read == rest.get("/api/diary", params={"agent_identity": agent}).json()
    assert [e["id"] for e in read["entries"]] == [entry["id"]] and read["limit"] == 20
    assert woken["diary"]["id"] == entry["id"]
    assert missing.code == bad_budget.code == blank.code == "memcastle::input::invalid"
    assert "`agent_identity`" in missing.body["error"]
    assert "`max_bytes`" in bad_budget.body["error"]
    assert "`content`" in blank.body["error"]


async def test_history_from_any_version(daemon: Daemon, rest: httpx.Client, wing_name: str) -> None:
    note = rest.post("/api/notes", json={"content": "deploys on friday", "wing": wing_name}).json()
    replacement = rest.post(
        f"/api/drawers/{note['id']}/supersede", json={"content": "deploys on monday"}
    ).json()["replacement"]
    async with connect(daemon.base_url) as client:
        from_old = await call(client, "memcastle_history", {"drawer_id": note["id"]})
        from_new = await call(client, "memcastle_history", {"drawer_id": replacement["id"]})
        unknown = await failure(client, "memcastle_history", {"drawer_id": str(uuid.uuid4())})
        absent = await failure(client, "memcastle_history", {})
    assert from_new["versions"] == from_old["versions"]
    assert [v["content"] for v in from_old["versions"]] == [
        "deploys on friday",
        "deploys on monday",
    ]
    assert from_old == rest.get(f"/api/drawers/{note['id']}/history").json()
    assert unknown.code == "memcastle::palace::drawer_not_found"
    assert absent.code == "memcastle::input::invalid" and "`drawer_id`" in absent.body["error"]


@pytest.mark.parametrize("as_string", [False, True], ids=["object", "json-string"])
async def test_checkpoint_takes_the_payload_as_object_or_string(
    daemon: Daemon, rest: httpx.Client, wing_name: str, as_string: bool
) -> None:
    payload: Any = {"items": [_item("use ruff for lint", wing=wing_name)]}
    if as_string:
        payload = json.dumps(payload)
    async with connect(daemon.base_url) as client:
        job = await call(client, "memcastle_checkpoint", {"payload": payload})
        assert job["status"] == "queued", "returned at once"
        done = await wait_for_job(client, job["id"], finished)
    assert done["status"] == "completed", done
    assert (done["result"]["items"], done["result"]["duplicates"]) == (1, 0)
    assert done["requested_by"] == "mcp"
    found = rest.get("/api/search", params={"q": "ruff", "wing": wing_name}).json()["results"]
    assert [hit["provenance"]["requested_by"] for hit in found] == ["mcp"]


@pytest.mark.parametrize(
    "payload",
    ["{not json", {"items": []}, {"items": [_item("  ")]}, {"items": [{"content": "x"}]}, 7],
    ids=["broken-string", "no-items", "blank-content", "malformed-item", "number"],
)
async def test_checkpoint_refusals_blame_the_payload(
    daemon: Daemon, rest: httpx.Client, payload: Any
) -> None:
    before = rest.get("/api/jobs", params={"kind": "checkpoint"}).json()["total"]
    async with connect(daemon.base_url) as client:
        refused = await failure(client, "memcastle_checkpoint", {"payload": payload})
    assert refused.code == "memcastle::input::invalid"
    assert refused.body["error"].startswith("`payload`")
    rest_refusal = rest.post("/api/jobs", json={"type": "checkpoint", "payload": payload})
    assert rest_refusal.json() == refused.body
    assert rest.get("/api/jobs", params={"kind": "checkpoint"}).json()["total"] == before


async def test_mine_a_directory(
    daemon: Daemon, rest: httpx.Client, tmp_path: Path, wing_name: str
) -> None:
    (tmp_path / "notes.md").write_text("The build uses make.\n", encoding="utf-8")
    async with connect(daemon.base_url) as client:
        job = await call(client, "memcastle_mine", {"path": str(tmp_path), "wing": wing_name})
        done = await wait_for_job(client, job["id"], finished)
        again = await wait_for_job(
            client,
            (await call(client, "memcastle_mine", {"path": str(tmp_path), "wing": wing_name}))[
                "id"
            ],
            finished,
        )
        relative = await failure(client, "memcastle_mine", {"path": "docs"})
        both = await failure(
            client, "memcastle_mine", {"path": str(tmp_path), "source": "directory"}
        )
        options = await failure(
            client, "memcastle_mine", {"source": "directory", "options": {"since": 2026}}
        )
    assert job["status"] == "queued" and job["requested_by"] == "mcp"
    assert done["status"] == "completed" and done["result"]["created"] == 1, done
    assert again["result"]["created"] == 0, "mining skips what has not changed"
    for refused in (relative, both, options):
        assert refused.code == "memcastle::input::invalid", refused.body
    assert rest.post("/api/jobs", json={"type": "mine", "path": "docs"}).json() == relative.body


async def test_audit_then_repair(daemon: Daemon) -> None:
    async with connect(daemon.base_url) as client:
        audit = await call(client, "memcastle_audit")
        audited = await wait_for_job(client, audit["id"], finished)
        repair = await call(client, "memcastle_repair", {"based_on_job": audit["id"]})
        repaired = await wait_for_job(client, repair["id"], finished)
        not_an_audit = await failure(
            client, "memcastle_repair", {"based_on_job": str(uuid.uuid4())}
        )
        bad_scope = await failure(client, "memcastle_audit", {"scope": 7})
    assert audited["status"] == "completed"
    assert repaired["status"] == "completed" and repaired["result"]["dry_run"] is True
    assert not_an_audit.code.startswith("memcastle::")
    assert bad_scope.code == "memcastle::input::invalid"


async def test_job_control(daemon: Daemon, rest: httpx.Client) -> None:
    slow = rest.post("/api/jobs", json={"type": "demo", "steps": 50, "step_ms": 200}).json()
    failing = rest.post(
        "/api/jobs", json={"type": "demo", "steps": 2, "step_ms": 1, "fail_at_step": 1}
    ).json()
    async with connect(daemon.base_url) as client:
        await wait_for_job(client, slow["id"], lambda job: job["status"] == "running")
        paused = await call(client, "memcastle_job_pause", {"job_id": slow["id"]})
        assert paused["pause_requested"] is True
        await wait_for_job(client, slow["id"], lambda job: job["status"] == "paused")
        twice = await failure(client, "memcastle_job_pause", {"job_id": slow["id"]})
        resumed = await call(client, "memcastle_job_resume", {"job_id": slow["id"]})
        cancelled = await call(client, "memcastle_job_cancel", {"job_id": slow["id"]})
        await wait_for_job(client, slow["id"], finished)
        force = await failure(client, "memcastle_job_force_cancel", {"job_id": slow["id"]})
        await wait_for_job(client, failing["id"], lambda job: job["status"] == "failed")
        retried = await call(client, "memcastle_job_retry", {"job_id": failing["id"]})
        listed = await call(client, "memcastle_job_list", {"kind": "demo", "limit": 0})
        unknown = await failure(client, "memcastle_job_get", {"job_id": str(uuid.uuid4())})
        malformed = await failure(client, "memcastle_job_cancel", {"job_id": "not-a-job"})
        bad_status = await failure(client, "memcastle_job_list", {"status": "sleeping"})
    assert twice.code == force.code == "memcastle::jobs::transition_invalid"
    assert resumed["status"] == "queued"
    assert cancelled["status"] == "cancelled" or cancelled["cancel_requested"] is True
    assert retried["status"] == "queued"
    assert listed["limit"] == 50 and {slow["id"], failing["id"]} <= {
        j["id"] for j in listed["jobs"]
    }
    assert unknown.code == "memcastle::jobs::not_found"
    assert malformed.code == "memcastle::jobs::id_invalid"
    assert bad_status.code == "memcastle::input::invalid" and "`status`" in bad_status.body["error"]
    await_rest = rest.post(f"/api/jobs/{slow['id']}/force-cancel")
    assert await_rest.json() == force.body


async def test_force_cancel_a_running_job(daemon: Daemon, rest: httpx.Client) -> None:
    job = rest.post("/api/jobs", json={"type": "demo", "steps": 50, "step_ms": 200}).json()
    async with connect(daemon.base_url) as client:
        await wait_for_job(client, job["id"], lambda found: found["status"] == "running")
        forced = await call(client, "memcastle_job_force_cancel", {"job_id": job["id"]})
    assert forced["status"] == "cancelled"


async def test_miners_and_triggers_are_read_only_and_empty(daemon: Daemon) -> None:
    async with connect(daemon.base_url) as client:
        miners = await call(client, "memcastle_miner_list")
        triggers = await call(client, "memcastle_trigger_list")
        miner = await failure(client, "memcastle_miner_get", {"name": "nightly"})
        trigger = await failure(client, "memcastle_trigger_get", {"name": "nightly"})
    assert miners == {"miners": []} and triggers == {"triggers": []}
    assert miner.code == "memcastle::miner::not_found"
    assert trigger.code == "memcastle::trigger::not_found"


async def test_fact_history(daemon: Daemon, rest: httpx.Client, wing_name: str) -> None:
    subject = f"parser-{uuid.uuid4().hex[:8]}"
    fact = {"op": "add", "subject": subject, "predicate": "uses", "object": "ruff"}
    async with connect(daemon.base_url) as client:
        job = await call(
            client,
            "memcastle_checkpoint",
            {"payload": {"items": [_item(f"{subject} uses ruff", wing=wing_name, fact=fact)]}},
        )
        assert (await wait_for_job(client, job["id"], finished))["status"] == "completed"
        entity = rest.get("/api/entities", params={"name": subject}).json()["entities"][0]
        relationships = rest.get(f"/api/entities/{entity['id']}/relationships").json()
        relationship_id = relationships["relationships"][0]["id"]
        history = await call(client, "memcastle_fact_history", {"relationship_id": relationship_id})
        unknown = await failure(
            client, "memcastle_fact_history", {"relationship_id": str(uuid.uuid4())}
        )
        bad_time = await failure(
            client,
            "memcastle_fact_history",
            {"relationship_id": relationship_id, "as_of": "yesterday"},
        )
    assert history == rest.get(f"/api/relationships/{relationship_id}/history").json()
    assert [a["id"] for a in history["assertions"]] == [relationship_id]
    assert unknown.code == "memcastle::graph::relationship_not_found"
    assert bad_time.code == "memcastle::input::invalid" and "`as_of`" in bad_time.body["error"]


async def test_calls_run_concurrently_in_one_session(daemon: Daemon) -> None:
    """Several calls in flight on one session all get their own answers."""
    answers: list[Any] = []
    async with connect(daemon.base_url) as client:

        async def status() -> None:
            answers.append(await call(client, "memcastle_status"))

        async with anyio.create_task_group() as group:
            for _ in range(8):
                group.start_soon(status)
    assert len(answers) == 8 and all(answer["mode"] == "full" for answer in answers)
