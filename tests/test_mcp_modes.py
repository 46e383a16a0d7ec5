"""Memory modes per MCP session, and /mcp on the listener: auth, Host, session end, shutdown."""

from __future__ import annotations

import signal
import uuid
from typing import Any

import httpx
import pytest
from mcp import Client

from tests.support.auth import SECRET, assert_unauthorized
from tests.support.daemon import Daemon
from tests.support.mcp_client import call, connect, failure, finished, wait_for_job

pytestmark = pytest.mark.anyio

FORBIDDEN = "memcastle::mode::forbidden"
MCP_HEADERS = {"accept": "application/json, text/event-stream"}


def _diary(wing: str) -> dict[str, Any]:
    return {"agent_identity": "mode-tester", "wing": wing, "content": f"entry {uuid.uuid4()}"}


async def test_two_sessions_keep_their_own_modes(daemon: Daemon, wing_name: str) -> None:
    async with connect(daemon.base_url) as reader, connect(daemon.base_url) as writer:
        assert await call(reader, "memcastle_set_mode", {"mode": "read_only"}) == {
            "mode": "read_only"
        }
        refused = await failure(reader, "memcastle_diary_write", _diary(wing_name))
        written = await call(writer, "memcastle_diary_write", _diary(wing_name))
        searched = await call(reader, "memcastle_search", {"query": "entry", "wing": wing_name})
        assert (await call(reader, "memcastle_status"))["mode"] == "read_only"
        assert (await call(writer, "memcastle_status"))["mode"] == "full"
    assert refused.code == FORBIDDEN
    assert "`diary_write` is not permitted in read_only mode" in refused.body["error"]
    assert written["provenance"]["requested_by"] == "mcp"
    assert [hit["id"] for hit in searched["results"]] == [written["id"]]


async def test_read_only_refuses_every_write_and_allows_the_rest(daemon: Daemon) -> None:
    async with connect(daemon.base_url) as client:
        await call(client, "memcastle_set_mode", {"mode": "read_only"})
        checkpoint = await failure(
            client,
            "memcastle_checkpoint",
            {"payload": {"items": [{"destination": "general", "content": "x", "tags": []}]}},
        )
        emergency = await failure(
            client,
            "memcastle_checkpoint",
            {
                "payload": {"items": [{"destination": "general", "content": "x", "tags": []}]},
                "emergency": True,
            },
        )
        mine = await failure(client, "memcastle_mine", {"path": "/tmp"})
        repair = await failure(client, "memcastle_repair", {"dry_run": False})
        # Never gated: audit, a dry-run repair, status.
        audit = await call(client, "memcastle_audit")
        dry_run = await call(client, "memcastle_repair")
        await wait_for_job(client, dry_run["id"], finished)
        await wait_for_job(client, audit["id"], finished)
    assert checkpoint.code == mine.code == repair.code == emergency.code == FORBIDDEN
    assert "`emergency_checkpoint`" in emergency.body["error"]


async def test_disabled_refuses_reads_but_not_status_or_job_control(
    daemon: Daemon, wing_name: str
) -> None:
    with daemon.client() as rest:
        job = rest.post("/api/jobs", json={"type": "demo", "steps": 40, "step_ms": 200}).json()
    async with connect(daemon.base_url) as client:
        await call(client, "memcastle_set_mode", {"mode": "disabled"})
        refusals = [
            await failure(client, "memcastle_search", {"query": "anything"}),
            await failure(client, "memcastle_recall", {"query": "anything"}),
            await failure(client, "memcastle_history", {"drawer_id": str(uuid.uuid4())}),
            await failure(client, "memcastle_wake_up", {"agent_identity": "a"}),
            await failure(client, "memcastle_diary_read", {"agent_identity": "a"}),
            await failure(client, "memcastle_job_list"),
            await failure(client, "memcastle_job_get", {"job_id": job["id"]}),
            await failure(client, "memcastle_miner_list"),
            await failure(client, "memcastle_trigger_get", {"name": "x"}),
            await failure(client, "memcastle_fact_history", {"relationship_id": str(uuid.uuid4())}),
        ]
        assert (await call(client, "memcastle_status"))["mode"] == "disabled"
        cancelled = await call(client, "memcastle_job_cancel", {"job_id": job["id"]})
    assert {refusal.code for refusal in refusals} == {FORBIDDEN}, [r.body for r in refusals]
    assert cancelled["id"] == job["id"]


async def test_an_unknown_mode_is_refused_and_changes_nothing(daemon: Daemon) -> None:
    async with connect(daemon.base_url) as client:
        await call(client, "memcastle_set_mode", {"mode": "read_only"})
        for bad in ({"mode": "read-only"}, {"mode": "off"}, {"mode": 1}, {}):
            refused = await failure(client, "memcastle_set_mode", bad)
            assert refused.code == "memcastle::input::invalid"
            assert "`mode`" in refused.body["error"]
        assert (await call(client, "memcastle_status"))["mode"] == "read_only"


async def test_a_new_session_starts_in_full_mode(daemon: Daemon) -> None:
    async with connect(daemon.base_url) as first:
        await call(first, "memcastle_set_mode", {"mode": "disabled"})
    async with connect(daemon.base_url) as second:
        assert (await call(second, "memcastle_status"))["mode"] == "full"


async def test_a_request_outside_a_session_runs_as_full(daemon: Daemon) -> None:
    """The sessionless 2026-07-28 revision, for a client pinned to it: no session, so no mode."""
    async with Client(f"{daemon.base_url}/mcp", mode="2026-07-28") as client:
        assert (await call(client, "memcastle_status"))["mode"] == "full"
        refused = await failure(client, "memcastle_set_mode", {"mode": "read_only"})
    assert refused.code == "memcastle::input::invalid"
    assert "session" in refused.body["error"]


def _initialize(http: httpx.Client) -> str:
    """A session opened by hand, returning its id."""
    response = http.post(
        "/mcp",
        headers=MCP_HEADERS,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"},
            },
        },
    )
    assert response.status_code == 200, response.text
    session = response.headers["mcp-session-id"]
    initialized = http.post(
        "/mcp",
        headers={**MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"},
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
    )
    assert initialized.status_code == 202, initialized.text
    return session


def _set_mode(http: httpx.Client, session: str, mode: str) -> httpx.Response:
    return http.post(
        "/mcp",
        headers={**MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"},
        json={
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "memcastle_set_mode", "arguments": {"mode": mode}},
        },
    )


def test_an_ended_session_and_its_mode_are_gone(daemon: Daemon) -> None:
    with daemon.client() as http:
        session = _initialize(http)
        assert _set_mode(http, session, "read_only").status_code == 200
        ended = http.delete("/mcp", headers={"mcp-session-id": session})
        assert ended.status_code == 200
        again = _set_mode(http, session, "full")
    assert again.status_code == 404, "a forgotten session must initialize again"


@pytest.mark.parametrize("host", ["evil.example", "localhost.evil.example", "10.0.0.1:8420"])
def test_a_host_that_is_not_loopback_is_refused(daemon: Daemon, host: str) -> None:
    with daemon.client() as http:
        response = http.post("/mcp", headers={**MCP_HEADERS, "host": host}, json={})
    assert response.status_code == 421
    assert response.json()["code"] == "memcastle::mcp::host_refused"
    assert set(response.json()) == {"error", "code", "help"}


def test_loopback_names_are_served(daemon: Daemon) -> None:
    port = daemon.base_url.rsplit(":", 1)[1]
    with daemon.client() as http:
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", "localhost"):
            http.headers["host"] = host
            assert _initialize(http)


def test_mcp_without_a_token_is_refused(shared_secured: Daemon) -> None:
    with shared_secured.client() as http:
        for method in ("POST", "GET", "DELETE"):
            assert_unauthorized(http.request(method, "/mcp", headers=MCP_HEADERS, json={}))
        assert_unauthorized(
            http.post("/mcp", headers={**MCP_HEADERS, "authorization": "Bearer wrong"}, json={})
        )


async def test_mcp_with_the_token(shared_secured: Daemon) -> None:
    async with connect(shared_secured.base_url, authorization=f"Bearer {SECRET}") as client:
        status = await call(client, "memcastle_status")
    assert status["auth_enabled"] is True and "token" not in str(status).lower().replace(
        "auth_enabled", ""
    )


def test_the_daemon_stops_cleanly_with_sessions_open(fresh_daemon: Daemon) -> None:
    fresh_daemon.start()
    with fresh_daemon.client() as http:
        session = _initialize(http)
        stream_headers = {"accept": "text/event-stream", "mcp-session-id": session}
        # The session's standing stream answers at once (its headers are not held back until
        # the first event), and stays open until the daemon stops.
        with http.stream("GET", "/mcp", headers=stream_headers, timeout=10) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            assert _set_mode(http, session, "read_only").status_code == 200
            fresh_daemon.signal(signal.SIGTERM)
            assert fresh_daemon.wait(timeout=15) == 0
            for _ in stream.iter_raw():
                pass
    log = fresh_daemon.log()
    assert "MCP sessions closed" in log
    assert "Traceback" not in log, log


def test_a_large_checkpoint_body_is_read_and_an_oversized_one_refused(daemon: Daemon) -> None:
    """Bodies up to 64 MiB are read (a 4 MB checkpoint reaches its checks); larger is a 413,
    on REST and MCP alike, never a server failure."""
    items = [{"destination": "general", "content": "x" * 400, "tags": []}] * 9_000
    items = [*items, {"destination": "general", "content": " ", "tags": []}]
    oversized = b"{" + b" " * (64 * 1024 * 1024) + b"}"
    with daemon.client() as http:
        large = http.post("/api/jobs", json={"type": "checkpoint", "payload": {"items": items}})
        rest = http.post(
            "/api/jobs", content=oversized, headers={"content-type": "application/json"}
        )
        mcp = http.post("/mcp", content=oversized, headers=MCP_HEADERS)
    assert large.status_code == 400 and "item 9000" in large.json()["error"], large.text
    for refused in (rest, mcp):
        assert refused.status_code == 413, refused.text
        assert refused.json()["code"] == "memcastle::input::too_large"


def test_a_plain_get_of_mcp_is_not_acceptable(daemon: Daemon) -> None:
    with daemon.client() as http:
        response = http.get("/mcp")
    assert response.status_code == 406
    assert response.json()["code"] == "memcastle::mcp::not_acceptable"
