"""Hostile input: every request below gets a clear refusal (never a server error) and changes
nothing, checked against a dump of the palace taken before and after them all.

Oversized bodies, deep JSON, invalid UTF-8, NUL characters, huge numbers, SurrealQL and path
fragments in names and ids, on REST and on MCP.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest

from kernel.errors import MAX_BODY_BYTES
from tests.support.daemon import Daemon
from tests.support.http import assert_error
from tests.support.mcp_client import ToolFailed, connect, failure

WING, ROOM = "hostile", "notes"
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    running = Daemon(tmp_path_factory.mktemp("hostile")).start()
    with running.client() as client:
        client.post("/api/wings", json={"name": WING})
        client.post(f"/api/wings/{WING}/rooms", json={"name": ROOM})
        filed = client.post(
            f"/api/wings/{WING}/rooms/{ROOM}/drawers", json={"content": "the one drawer"}
        )
        assert filed.status_code == 201, filed.text
    yield running
    running.stop()


def dump(client: httpx.Client) -> dict[str, Any]:
    """What the palace holds, as the API shows it: every wing, room and drawer, and the jobs."""
    palace: dict[str, Any] = {}
    for wing in client.get("/api/wings").json()["wings"]:
        rooms = client.get(f"/api/wings/{wing['name']}/rooms").json()["rooms"]
        palace[wing["name"]] = {
            room["name"]: sorted(
                (drawer["id"], drawer["valid_to"])
                for drawer in client.get(
                    f"/api/wings/{wing['name']}/rooms/{room['name']}/drawers",
                    params={"limit": 200},
                ).json()["drawers"]
            )
            for room in rooms
        }
    jobs = client.get("/api/jobs", params={"limit": 200}).json()["jobs"]
    return {"palace": palace, "jobs": sorted(job["id"] for job in jobs)}


DRAWERS = f"/api/wings/{WING}/rooms/{ROOM}/drawers"
# (what is sent, the status, the code, a word the error must hold: the field it names)
REST_CASES: list[tuple[str, str, str, dict[str, Any], int, str, str]] = [
    (
        "deep array",
        "POST",
        "/api/wings",
        {"content": b"[" * 100_000 + b"]" * 100_000},
        400,
        "memcastle::input::invalid",
        "`body`",
    ),
    (
        "deep object",
        "POST",
        DRAWERS,
        {"content": b'{"a":' * 50_000 + b"1" + b"}" * 50_000},
        400,
        "memcastle::input::invalid",
        "`body`",
    ),
    (
        "invalid UTF-8",
        "POST",
        "/api/wings",
        {"content": b'{"name": "\xff\xfe"}'},
        400,
        "memcastle::input::invalid",
        "`body`",
    ),
    (
        "NUL in a name",
        "POST",
        "/api/wings",
        {"json": {"name": "a\x00b"}},
        400,
        "memcastle::input::invalid",
        "`name`",
    ),
    (
        "NUL in a description",
        "POST",
        "/api/wings",
        {"json": {"name": "d", "description": "\x00"}},
        400,
        "memcastle::input::invalid",
        "`description`",
    ),
    (
        "NUL in content",
        "POST",
        DRAWERS,
        {"json": {"content": "before\x00after"}},
        400,
        "memcastle::input::invalid",
        "`content`",
    ),
    (
        "NUL in a tag",
        "POST",
        DRAWERS,
        {"json": {"content": "c", "tags": ["a\x00"]}},
        400,
        "memcastle::input::invalid",
        "`tags[0]`",
    ),
    (
        "NUL in a checkpoint item",
        "POST",
        "/api/jobs",
        {
            "json": {
                "type": "checkpoint",
                "payload": {"items": [{"destination": "general", "content": "x\x00", "tags": []}]},
            }
        },
        400,
        "memcastle::input::invalid",
        "`payload.items[0].content`",
    ),
    (
        "a lone surrogate in content",
        "POST",
        DRAWERS,
        {"content": b'{"content": "half of a pair: \\ud83d"}'},
        400,
        "memcastle::input::invalid",
        "`content`",
    ),
    (
        "a lone surrogate in a miner's option",
        "POST",
        "/api/miners",
        {"content": b'{"name": "m", "source": "directory", "scope": {"since": "\\udc00"}}'},
        400,
        "memcastle::input::invalid",
        "`scope.since`",
    ),
    (
        "a miner's credential whose type is a table",
        "POST",
        "/api/miners",
        {"json": {"name": "m", "source": "directory", "credential": {"type": {}}}},
        400,
        "memcastle::miner::invalid",
        "`credential`",
    ),
    (
        "NUL in a query parameter",
        "GET",
        "/api/search",
        {"params": {"q": "a\x00b"}},
        400,
        "memcastle::input::invalid",
        "`q`",
    ),
    (
        "a limit past floats",
        "GET",
        "/api/search",
        {"params": {"q": "x", "limit": "1e309"}},
        400,
        "memcastle::input::invalid",
        "`limit`",
    ),
    (
        "a path in a wing name",
        "POST",
        "/api/wings",
        {"json": {"name": "../etc"}},
        400,
        "memcastle::palace::path_invalid",
        "../etc",
    ),
    (
        "a slash in a room name",
        "POST",
        f"/api/wings/{WING}/rooms",
        {"json": {"name": "a/b"}},
        400,
        "memcastle::palace::path_invalid",
        "a/b",
    ),
    (
        "SurrealQL as a drawer id",
        "GET",
        "/api/drawers/1;REMOVE TABLE drawer",
        {},
        400,
        "memcastle::input::invalid",
        "`id`",
    ),
    (
        "a record id as a drawer id",
        "GET",
        "/api/drawers/drawer:1",
        {},
        400,
        "memcastle::input::invalid",
        "`id`",
    ),
    (
        "SurrealQL as a job id",
        "GET",
        "/api/jobs/x' OR 1=1",
        {},
        400,
        "memcastle::jobs::id_invalid",
        "`id`",
    ),
    (
        "a body of JSON null",
        "POST",
        "/api/wings",
        {"content": b"null"},
        400,
        "memcastle::input::invalid",
        "null",
    ),
    (
        "a null channel",
        "POST",
        "/api/wings",
        {"json": {"name": "null-channel", "requested_by": None}},
        400,
        "memcastle::input::invalid",
        "`requested_by`",
    ),
    (
        "SurrealQL as a supersede",
        "POST",
        "/api/drawers/x;DELETE drawer/supersede",
        {"json": {"content": "y"}},
        400,
        "memcastle::input::invalid",
        "`id`",
    ),
]


@pytest.fixture(scope="module")
def refused(daemon: Daemon) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """Send every hostile request once, with the palace dumped before and after."""
    with daemon.client() as client:
        before = dump(client)
        answers = {}
        for name, method, path, kwargs, *_ in REST_CASES:
            headers = JSON if "content" in kwargs else {}
            answers[name] = client.request(method, path, headers=headers, **kwargs)
        answers["a body over the limit"] = client.post(
            "/api/wings", content=b'{"name": "' + b"a" * MAX_BODY_BYTES + b'"}', headers=JSON
        )
        after = dump(client)
    yield {"before": before, "after": after}, answers


@pytest.mark.parametrize(
    ("name", "status", "code", "named"),
    [(case[0], case[4], case[5], case[6]) for case in REST_CASES],
    ids=[case[0] for case in REST_CASES],
)
def test_each_hostile_request_is_refused_naming_what_is_wrong(
    refused: tuple[dict[str, Any], dict[str, httpx.Response]],
    name: str,
    status: int,
    code: str,
    named: str,
) -> None:
    response = refused[1][name]

    assert_error(response, status, code)
    assert named in response.json()["error"], response.json()


def test_a_body_over_the_limit_is_refused(
    refused: tuple[dict[str, Any], dict[str, httpx.Response]],
) -> None:
    assert_error(refused[1]["a body over the limit"], 413, "memcastle::input::too_large")


def test_a_huge_limit_is_capped_as_documented(daemon: Daemon) -> None:
    """api.md: a limit above 200 is capped, not refused; 400 digits of it are no exception."""
    with daemon.client() as client:
        response = client.get("/api/search", params={"q": "drawer", "limit": "9" * 400})

    assert response.status_code == 200, response.text
    assert len(response.json()["results"]) <= 200


def test_a_huge_offset_reads_an_empty_page(daemon: Daemon) -> None:
    """An offset past any palace's end is an empty page, however many digits it has."""
    with daemon.client() as client:
        for path in ("/api/jobs", "/api/wings/hostile/rooms/notes/drawers"):
            response = client.get(path, params={"offset": "290316796195232858514124701696"})
            assert response.status_code == 200, response.text


def test_names_that_look_like_surrealql_are_only_names(daemon: Daemon) -> None:
    """A name is a value, never a statement: stored and read back as sent, nothing else run."""
    with daemon.client() as client:
        drawers_before = client.get("/api/status").json()["drawers"]
        for name in ("x'; REMOVE TABLE drawer; --", "drawer:⟨1⟩", "$auth", "1 OR 1=1"):
            made = client.post("/api/wings", json={"name": name})
            assert made.status_code == 201, made.text
            assert client.get(f"/api/wings/{name}").json()["name"] == name
            assert client.delete(f"/api/wings/{name}").status_code == 200
        assert client.get("/api/status").json()["drawers"] == drawers_before


def test_nothing_changed_and_nothing_failed(
    daemon: Daemon, refused: tuple[dict[str, Any], dict[str, httpx.Response]]
) -> None:
    dumps, answers = refused
    assert dumps["after"] == dumps["before"]
    assert all(response.status_code < 500 for response in answers.values())
    assert "Traceback" not in daemon.log()


def test_mcp_refuses_deep_json_and_a_nul_naming_the_argument(daemon: Daemon) -> None:
    with daemon.client() as client:
        before = dump(client)
        deep = client.post(
            "/mcp",
            content=b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": '
            + b"[" * 100_000
            + b"]" * 100_000
            + b"}",
            headers={**JSON, "Accept": "application/json, text/event-stream"},
        )
        assert 400 <= deep.status_code < 500, deep.text

    async def write_with_a_nul() -> ToolFailed:
        async with connect(daemon.base_url) as mcp:
            return await failure(
                mcp,
                "memcastle_diary_write",
                {"agent_identity": "tester", "wing": WING, "content": "a\x00b"},
            )

    refused = anyio.run(write_with_a_nul)
    assert refused.code == "memcastle::input::invalid"
    assert "`content`" in refused.body["error"]
    with daemon.client() as client:
        assert dump(client) == before


def test_a_validity_outside_what_the_indexes_hold_breaks_no_search(daemon: Daemon) -> None:
    """A drawer valid from the year 1358 or 2500 (beyond 64-bit nanoseconds) is filed, found,
    and the search indexes keep following the store afterwards (they stopped, and every search
    failed, before)."""
    with daemon.client() as client:
        client.post(f"/api/wings/{WING}/rooms", json={"name": "ages"})
        path = f"/api/wings/{WING}/rooms/ages/drawers"
        for year in ("1358", "2500"):
            filed = client.post(
                path, json={"content": f"chronicle of {year}", "valid_from": f"{year}-01-01"}
            )
            assert filed.status_code == 201, filed.text
        later = client.post(path, json={"content": "a chronicle filed afterwards"}).json()

        def found(text: str, temporal: object = "current") -> list[str]:
            body = {
                "text": text,
                "ranking": "lexical",
                "filter": {"wing": WING, "temporal": temporal},
            }
            response = client.post("/api/search", json=body)
            assert response.status_code == 200, response.text
            return [hit["id"] for hit in response.json()["results"]]

        assert later["id"] in found("afterwards")
        assert len(found("chronicle", "all")) == 3
        assert len(found("chronicle", {"as_of": "1900-01-01"})) == 1, "the one of 1358"
        assert "Traceback" not in daemon.log()
