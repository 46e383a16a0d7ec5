"""The database console (`/api/db`): SurrealDB's own protocol onto the live embedded palace.

End to end on real daemons, with real clients: the `surrealdb` Python SDK and SurrealDB's
JavaScript SDK (npm `surrealdb`, installed by `npm ci` from the pinned lockfile in
`tests/fixtures/js-console`) over `ws://`, and raw WebSocket frames where a test checks the
protocol itself.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from surrealdb import Surreal
from surrealdb.data.cbor import decode, encode
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection
from websockets.sync.client import connect as ws_connect
from websockets.typing import Subprotocol

from kernel.config import load_config
from kernel.errors import MemCastleError
from kernel.store import Store
from mcp_bridge.tools import TOOLS
from memcastle_project.console import DatabaseConsole, from_this_machine
from tests.support.auth import AUTH_ENV, SECRET
from tests.support.daemon import Daemon
from tests.support.http import assert_error

JS_CLIENT = Path(__file__).parent / "fixtures" / "js-console"
ANSWER_FIELDS = {
    "running",
    "addr",
    "url",
    "namespace",
    "database",
    "user",
    "remote",
    "auth_required",
    "started_at",
    "already_running",
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    running = Daemon(tmp_path_factory.mktemp("console")).start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon with authentication on, and its console open on any free port."""
    running = Daemon(tmp_path_factory.mktemp("console-auth"), env=AUTH_ENV).start()
    with running.client(Authorization=f"Bearer {SECRET}") as client:
        assert client.post("/api/db", json={"port": 0}).status_code == 201
    yield running
    running.stop()


@pytest.fixture
def client(daemon: Daemon) -> Iterator[httpx.Client]:
    with daemon.client() as http:
        yield http
        http.delete("/api/db")


def console_url(client: httpx.Client) -> str:
    answer = client.get("/api/db").json()
    assert answer["running"], answer
    return str(answer["url"])


def open_console(client: httpx.Client, **body: Any) -> dict[str, Any]:
    response = client.post("/api/db", json={"port": 0, **body})
    assert response.status_code == 201, response.text
    answer: dict[str, Any] = response.json()
    return answer


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def rpc(ws: ClientConnection, method: str, *params: Any, **extra: Any) -> dict[str, Any]:
    """One CBOR request and its answer."""
    ws.send(encode({"id": uuid.uuid4().hex, "method": method, "params": list(params), **extra}))
    answer = decode(ws.recv(timeout=30))
    assert isinstance(answer, dict)
    return answer


def file_drawer(client: httpx.Client, wing: str, content: str) -> None:
    client.post("/api/wings", json={"name": wing})
    client.post(f"/api/wings/{wing}/rooms", json={"name": "notes"})
    filed = client.post(
        f"/api/wings/{wing}/rooms/notes/drawers",
        json={"content": content, "name": f"{uuid.uuid4().hex[:8]}.md"},
    )
    assert filed.status_code == 201, filed.text


def sdk(url: str, password: str = "anything") -> Surreal:
    db = Surreal(url)
    db.connect()
    db.signin({"username": "someone", "password": password})
    return db


# Opening, reporting, closing --------------------------------------------------------------------


def test_a_closed_console_is_reported_as_not_running(client: httpx.Client) -> None:
    response = client.get("/api/db")

    assert response.status_code == 200
    answer = response.json()
    assert set(answer) == ANSWER_FIELDS
    assert answer["running"] is False
    assert (answer["addr"], answer["url"], answer["started_at"]) == (None, None, None)
    assert (answer["namespace"], answer["database"], answer["user"]) == (
        "memcastle",
        "palace",
        "memcastle",
    )


def test_open_status_repeat_and_close(client: httpx.Client) -> None:
    opened = open_console(client)

    assert set(opened) == ANSWER_FIELDS
    assert opened["running"] is True and opened["already_running"] is False
    assert opened["remote"] is False and opened["auth_required"] is False
    host, port = opened["addr"].rsplit(":", 1)
    assert host == "127.0.0.1" and int(port) > 0
    assert opened["url"] == f"ws://{opened['addr']}"
    assert client.get("/api/db").json() == opened

    for compatible in ({"port": 0}, {"port": int(port)}, {"bind": "127.0.0.1"}):
        repeat = client.post("/api/db", json=compatible)
        assert repeat.status_code == 200, repeat.text
        assert repeat.json() == {**opened, "already_running": True}

    assert httpx.get(f"http://{opened['addr']}/health").status_code == 200
    closed = client.delete("/api/db")
    assert closed.status_code == 200
    assert closed.json()["running"] is False
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://{opened['addr']}/health")
    assert client.delete("/api/db").json()["running"] is False, "closing a closed one succeeds"


@pytest.mark.parametrize(
    "different",
    [{"port": "other"}, {"allowed_origins": ["http://studio.example:8080"]}, {"bind": "::1"}],
)
def test_a_repeat_asking_for_something_else_is_a_conflict(
    client: httpx.Client, different: dict[str, Any]
) -> None:
    opened = open_console(client)
    if different.get("port") == "other":
        different = {"port": free_port()}

    response = client.post("/api/db", json=different)

    assert_error(response, 409, "memcastle::db::already_running")
    assert opened["addr"] in response.json()["error"]
    assert client.get("/api/db").json() == opened, "the open console is untouched"


def test_a_taken_port_is_a_conflict_and_nothing_opens(client: httpx.Client) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        response = client.post("/api/db", json={"port": port})

    assert_error(response, 409, "memcastle::db::bind_failed")
    assert str(port) in response.json()["error"]
    assert client.get("/api/db").json()["running"] is False


@pytest.mark.parametrize("body", [{"bind": "0.0.0.0"}, {"bind": "0.0.0.0", "allow_remote": True}])
def test_a_remote_bind_needs_allow_remote_and_authentication(
    client: httpx.Client, body: dict[str, Any]
) -> None:
    response = client.post("/api/db", json={"port": 0, **body})

    assert_error(response, 400, "memcastle::db::unsafe_bind")
    assert client.get("/api/db").json()["running"] is False


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"port": "8000"}, "port"),
        ({"port": 70000}, "port"),
        ({"bind": "localhost"}, "bind"),
        ({"allow_remote": "yes"}, "allow_remote"),
        ({"allowed_origins": "http://a.example"}, "allowed_origins"),
        ({"allowed_origins": ["http://a.example/path"]}, "allowed_origins"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_bad_input_names_the_field_and_opens_nothing(
    client: httpx.Client, body: dict[str, Any], field: str
) -> None:
    response = client.post("/api/db", json=body)

    assert_error(response, 400, "memcastle::input::invalid")
    assert f"`{field}`" in response.json()["error"]
    assert client.get("/api/db").json()["running"] is False


def test_the_daemons_own_port_is_refused(daemon: Daemon, client: httpx.Client) -> None:
    own = int(daemon.base_url.rsplit(":", 1)[1])

    response = client.post("/api/db", json={"port": own})

    assert_error(response, 400, "memcastle::input::invalid")
    assert "`port`" in response.json()["error"]


def test_a_remote_palace_has_no_console_to_open() -> None:
    config = load_config(env={"MEMCASTLE_PALACE_PATH": "/nonexistent"})
    store = Store("ws://127.0.0.1:1")
    console = DatabaseConsole(config, store, tokens=None, daemon_port=8420)  # type: ignore[arg-type]

    with pytest.raises(MemCastleError) as refused:
        console.open(None, {"port": 0})  # type: ignore[arg-type]

    assert refused.value.code == "memcastle::db::unavailable"
    assert refused.value.status == 409


def test_the_cli_opens_reports_and_closes_it(daemon: Daemon, client: httpx.Client) -> None:
    started = daemon.run("db", "start", "--port", "0", "--json")
    assert started.returncode == 0, started.stderr
    answer = json.loads(started.stdout)
    assert answer["running"] is True

    again = daemon.run("db", "start", "--port", "0", "--json")
    assert again.returncode == 0, again.stderr
    assert f"already running on {answer['url']}" in again.stderr

    status = daemon.run("db", "status", "--json")
    assert json.loads(status.stdout) == answer
    stopped = daemon.run("db", "stop", "--json")
    assert json.loads(stopped.stdout)["running"] is False

    refused = daemon.run("db", "start", "--bind", "0.0.0.0", "--port", "0")
    assert refused.returncode == 1
    assert "memcastle::db::unsafe_bind" in refused.stderr


# The protocol -----------------------------------------------------------------------------------


CONTENT = "the console reads this drawer"


def test_the_python_sdk_reads_the_live_palace_and_writes_what_rest_sees(
    client: httpx.Client,
) -> None:
    file_drawer(client, "console-read", CONTENT)
    url = open_console(client)["url"]
    db = sdk(url)
    try:
        db.use("memcastle", "palace")
        (rows,) = db.query(
            "SELECT content FROM drawer WHERE content = $c", {"c": CONTENT}
        ).execute()
        assert [row["content"] for row in rows] == [CONTENT]
        tables = db.query("INFO FOR DB").execute()[0]["tables"]
        assert {"drawer", "wing", "room", "job"} <= set(tables)

        db.query(
            "UPDATE wing SET description = 'described from the console' WHERE name = 'console-read'"
        ).execute()
    finally:
        db.close()

    wing = client.get("/api/wings/console-read").json()
    assert wing["description"] == "described from the console"


def test_each_connection_is_its_own_session(client: httpx.Client) -> None:
    url = open_console(client)["url"]
    with (
        ws_connect(f"{url}/rpc", subprotocols=[Subprotocol("cbor")]) as first,
        ws_connect(f"{url}/rpc", subprotocols=[Subprotocol("cbor")]) as second,
    ):
        assert rpc(first, "signin", {"user": "a", "pass": "b"})["result"]
        assert rpc(second, "signin", {"user": "a", "pass": "b"})["result"]
        assert "error" not in rpc(first, "let", "marker", "first")
        assert rpc(first, "use", "elsewhere", "other")["result"]["namespace"] == "elsewhere"
        probe = "RETURN [$marker OR 'unset', session::ns()]"
        assert rpc(first, "query", probe)["result"][0]["result"] == ["first", "elsewhere"]
        assert rpc(second, "query", probe)["result"][0]["result"] == ["unset", "memcastle"]
        first_sessions = rpc(first, "sessions")["result"]
        assert len(first_sessions) == 1, "a connection sees only its own sessions"
    assert client.get("/api/wings").status_code == 200, "the daemon's session is untouched"


def test_refused_methods_say_what_to_do_instead(client: httpx.Client) -> None:
    url = open_console(client)["url"]
    with ws_connect(f"{url}/rpc", subprotocols=[Subprotocol("cbor")]) as ws:
        rpc(ws, "signin", {"user": "a", "pass": "b"})
        for method, hint in (
            ("select", "query"),
            ("create", "query"),
            ("live", "/api/events"),
            ("kill", "/api/events"),
            ("begin", "BEGIN;"),
            ("commit", "BEGIN;"),
            ("signup", "sign in"),
            ("graphql", "query"),
        ):
            answer = rpc(ws, method, "drawer")
            assert answer["error"]["code"] == -32601, (method, answer)
            assert hint in answer["error"]["message"], (method, answer)
        transaction = rpc(ws, "query", "BEGIN; CREATE probe:1; COMMIT; SELECT * FROM probe;")
        assert transaction["result"][-1]["result"][0]["id"].table_name == "probe"
        rpc(ws, "query", "REMOVE TABLE probe")


def test_a_session_of_another_connection_cannot_be_named(client: httpx.Client) -> None:
    url = open_console(client)["url"]
    with (
        ws_connect(f"{url}/rpc", subprotocols=[Subprotocol("cbor")]) as first,
        ws_connect(f"{url}/rpc", subprotocols=[Subprotocol("cbor")]) as second,
    ):
        extra = str(uuid.uuid4())
        assert rpc(first, "attach", session=extra).get("error") is None
        assert rpc(first, "query", "RETURN 1", session=extra)["result"][0]["result"] == 1
        assert set(map(str, rpc(first, "sessions")["result"])) >= {extra}

        refused = rpc(second, "query", "RETURN 1", session=extra)
        assert "not one this connection attached" in refused["error"]["message"]


def test_the_json_encoding_is_spoken_too(client: httpx.Client) -> None:
    file_drawer(client, "console-json", "read as json")
    url = open_console(client)["url"]
    with ws_connect(f"{url}/rpc", subprotocols=[Subprotocol("json")]) as ws:
        assert ws.subprotocol == "json"
        ws.send(json.dumps({"id": 1, "method": "signin", "params": [{"user": "a", "pass": "b"}]}))
        assert "result" in json.loads(ws.recv(timeout=30))
        ws.send(
            json.dumps(
                {
                    "id": 2,
                    "method": "query",
                    "params": [
                        "SELECT id, content FROM drawer WHERE content = $c",
                        {"c": "read as json"},
                    ],
                }
            )
        )
        answer = json.loads(ws.recv(timeout=30))
    assert answer["id"] == 2
    (row,) = answer["result"][0]["result"]
    assert row["content"] == "read as json"
    assert row["id"].startswith("drawer:")


def test_health_version_and_what_is_not_served(client: httpx.Client) -> None:
    addr = open_console(client)["addr"]

    assert httpx.get(f"http://{addr}/health").status_code == 200
    version = httpx.get(f"http://{addr}/version")
    assert version.status_code == 200 and version.text.startswith("surrealdb-3.")
    for path in ("/sql", "/export", "/import", "/signup"):
        refused = httpx.get(f"http://{addr}{path}")
        assert refused.status_code == 404
        assert "/rpc" in refused.text and "query" in refused.text


@pytest.fixture(scope="module")
def js_client(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SurrealDB's JavaScript SDK, installed from the pinned lockfile (integrity-checked)."""
    npm = shutil.which("npm")
    assert npm is not None and shutil.which("node"), "Node.js and npm are needed for this test"
    target = tmp_path_factory.mktemp("js-console")
    for name in ("package.json", "package-lock.json", "studio.mjs"):
        shutil.copy(JS_CLIENT / name, target / name)
    installed = subprocess.run(
        [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
        cwd=target,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr
    return target


def run_studio(js_client: Path, url: str, password: str) -> dict[str, Any]:
    ran = subprocess.run(
        ["node", "--experimental-websocket", "studio.mjs", url, password],
        cwd=js_client,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    result: dict[str, Any] = json.loads(ran.stdout.strip().splitlines()[-1])
    return result


def test_the_javascript_sdk_connects_as_surrealdb_studio_would(
    js_client: Path, client: httpx.Client
) -> None:
    file_drawer(client, "console-js", "seen by the javascript sdk")
    url = open_console(client)["url"]

    seen = run_studio(js_client, url, "anything")

    assert seen["version"]["version"].startswith("surrealdb-3.")
    assert "seen by the javascript sdk" in seen["contents"]
    assert {"drawer", "wing", "room", "job"} <= set(seen["tables"])
    assert seen["own"] == "from-the-first-connection"
    assert seen["other"] is None, "a LET stays on its connection"


# Security ---------------------------------------------------------------------------------------


def guarded_url(guarded: Daemon) -> str:
    with guarded.client(Authorization=f"Bearer {SECRET}") as http:
        return console_url(http)


def test_the_routes_are_guarded_like_every_other(guarded: Daemon) -> None:
    with guarded.client() as anonymous:
        for method in ("GET", "POST", "DELETE"):
            response = anonymous.request(method, "/api/db")
            assert_error(response, 401, "memcastle::auth::unauthorized")
    with guarded.client(Authorization=f"Bearer {SECRET}") as http:
        assert http.get("/api/db").json()["auth_required"] is True


def test_nothing_but_the_handshake_answers_before_sign_in(guarded: Daemon) -> None:
    url = guarded_url(guarded)
    with ws_connect(f"{url}/rpc", subprotocols=[Subprotocol("cbor")]) as ws:
        for method, params in (
            ("query", ["SELECT * FROM drawer"]),
            ("info", []),
            ("let", ["a", 1]),
            ("unset", ["a"]),
            ("attach", []),
            ("sessions", []),
        ):
            extra = {"session": str(uuid.uuid4())} if method == "attach" else {}
            answer = rpc(ws, method, *params, **extra)
            assert answer["error"]["code"] == -32002, (method, answer)
            assert "sign in" in answer["error"]["message"]
        assert rpc(ws, "version")["result"].startswith("surrealdb-3.")
        assert rpc(ws, "ping").get("error") is None

        assert rpc(ws, "signin", {"user": "anyone", "pass": SECRET}).get("error") is None
        assert rpc(ws, "query", "RETURN session::db()")["result"][0]["result"] == "palace"


def test_sign_in_with_the_python_sdk_and_the_token(guarded: Daemon) -> None:
    db = sdk(guarded_url(guarded), password=SECRET)
    try:
        assert db.query("RETURN 1").execute() == [1]
    finally:
        db.close()


def test_a_bearer_header_on_the_upgrade_signs_the_connection_in(guarded: Daemon) -> None:
    url = guarded_url(guarded)
    with ws_connect(
        f"{url}/rpc",
        subprotocols=[Subprotocol("cbor")],
        additional_headers={"Authorization": f"Bearer {SECRET}"},
    ) as ws:
        assert rpc(ws, "query", "RETURN 2")["result"][0]["result"] == 2
    with ws_connect(
        f"{url}/rpc",
        subprotocols=[Subprotocol("cbor")],
        additional_headers={"Authorization": "Bearer wrong-token-0123456789"},
    ) as ws:
        assert rpc(ws, "query", "RETURN 2")["error"]["code"] == -32002


def test_authenticate_takes_the_token_too(guarded: Daemon) -> None:
    url = guarded_url(guarded)
    with ws_connect(f"{url}/rpc", subprotocols=[Subprotocol("cbor")]) as ws:
        assert rpc(ws, "authenticate", "not-the-token")["error"]["code"] == -32002
        assert rpc(ws, "authenticate", SECRET).get("error") is None
        assert rpc(ws, "query", "RETURN 3")["result"][0]["result"] == 3
        rpc(ws, "invalidate")
        assert rpc(ws, "query", "RETURN 3")["error"]["code"] == -32002, "signed out again"


def test_five_refused_sign_ins_close_the_connection(guarded: Daemon) -> None:
    url = guarded_url(guarded)
    with ws_connect(f"{url}/rpc", subprotocols=[Subprotocol("cbor")]) as ws:
        for attempt in range(5):
            refused = rpc(ws, "signin", {"user": "root", "pass": f"guess-{attempt}"})
            assert refused["error"]["code"] == -32002
        with pytest.raises(ConnectionClosed):
            rpc(ws, "signin", {"user": "root", "pass": SECRET})
        assert ws.close_code == 1008


def test_the_javascript_sdk_signs_in_with_the_token(js_client: Path, guarded: Daemon) -> None:
    seen = run_studio(js_client, guarded_url(guarded), SECRET)

    assert "drawer" in seen["tables"]
    with pytest.raises(AssertionError):
        run_studio(js_client, guarded_url(guarded), "not-the-token")


@pytest.mark.parametrize("path", ["/rpc", "/health", "/version", "/sql"])
def test_a_foreign_origin_is_refused_on_every_route(guarded: Daemon, path: str) -> None:
    url = guarded_url(guarded)
    addr = url.removeprefix("ws://")

    plain = httpx.get(f"http://{addr}{path}", headers={"Origin": "https://app.surrealdb.com"})
    assert plain.status_code == 403
    with pytest.raises(InvalidStatus) as refused:
        ws_connect(f"{url}{path}", origin="https://evil.example")  # type: ignore[arg-type]
    assert refused.value.response.status_code == 403
    assert "disallowed origin" in guarded.log()


def test_a_page_of_this_machine_or_a_listed_origin_is_allowed(client: httpx.Client) -> None:
    url = open_console(client, allowed_origins=["https://studio.example.org"])["url"]

    for origin in ("http://localhost:5173", "http://127.0.0.1:8080", "https://studio.example.org"):
        with ws_connect(f"{url}/rpc", origin=origin) as ws:  # type: ignore[arg-type]
            ws.send(json.dumps({"id": 1, "method": "version"}))
            assert "surrealdb-3." in ws.recv(timeout=30)
    with pytest.raises(InvalidStatus):
        ws_connect(f"{url}/rpc", origin="https://studio.example.org.evil")  # type: ignore[arg-type]


def test_from_this_machine() -> None:
    assert from_this_machine("http://localhost:3000")
    assert from_this_machine("https://127.0.0.1")
    assert from_this_machine("http://[::1]:8080")
    assert not from_this_machine("https://app.surrealdb.com")
    assert not from_this_machine("http://localhost.evil.example")
    assert not from_this_machine("file://localhost")


def test_the_token_never_reaches_the_log(guarded: Daemon) -> None:
    url = guarded_url(guarded)
    with ws_connect(f"{url}/rpc", subprotocols=[Subprotocol("cbor")]) as ws:
        rpc(ws, "signin", {"user": "x", "pass": SECRET})
        rpc(ws, "signin", {"user": "x", "pass": SECRET + "-wrong"})

    assert SECRET not in guarded.log()


def test_a_remote_bind_with_authentication_is_allowed_and_warned(guarded: Daemon) -> None:
    with guarded.client(Authorization=f"Bearer {SECRET}") as http:
        before = http.get("/api/db").json()
        http.delete("/api/db")
        try:
            opened = http.post("/api/db", json={"bind": "0.0.0.0", "port": 0, "allow_remote": True})
            assert opened.status_code == 201, opened.text
            assert opened.json()["remote"] is True
            assert "reachable from other machines" in guarded.log()
        finally:
            http.delete("/api/db")
            port = int(before["addr"].rsplit(":", 1)[1])
            assert http.post("/api/db", json={"port": port}).status_code == 201


# Shutdown ---------------------------------------------------------------------------------------


def test_daemon_shutdown_closes_the_console_and_its_connections(tmp_path: Path) -> None:
    daemon = Daemon(tmp_path).start()
    try:
        with daemon.client() as http:
            answer = open_console(http)
        with ws_connect(f"{answer['url']}/rpc", subprotocols=[Subprotocol("cbor")]) as ws:
            rpc(ws, "signin", {"user": "a", "pass": "b"})
            assert daemon.stop() == 0
            with pytest.raises(ConnectionClosed):
                rpc(ws, "ping")
            assert ws.close_code == 1001, "closed by the daemon (going away), not by its exit"
    finally:
        daemon.stop()
    assert f"database console on {answer['url']} closed" in daemon.log()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://{answer['addr']}/health")


def test_no_mcp_tool_reaches_the_database_console() -> None:
    for tool in TOOLS:
        assert not any(word in tool.name for word in ("db", "database", "console", "surreal"))
