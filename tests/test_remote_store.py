"""The remote store: `store.mode = "remote"` against a SurrealDB server over `ws://`.

No server binary is available, so `tests.support.remote_surreal` serves one: the SDK's embedded
engine behind a loopback WebSocket listener, speaking the SurrealDB RPC protocol as a server does.
The store and the daemons reach it through the SDK's real `ws://` client, the path production
takes to a SurrealDB server or cluster.
"""

from __future__ import annotations

import socket
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from surrealdb.data.cbor import decode as cbor_decode
from surrealdb.data.cbor import encode as cbor_encode
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect as ws_connect
from websockets.typing import Subprotocol

from kernel.config import load_config
from kernel.errors import StoreFailed
from kernel.store import Store, bundled_migrations
from tests.support.daemon import Daemon
from tests.support.surreal_server import RemoteSurreal, remote_config, remote_daemon, remote_surreal

DAEMON_EXIT_TIMEOUT = 30.0
# A server started with credentials refuses anonymous queries, as `surreal start --user` does.
ROOT_USER = "root"
ROOT_PASSWORD = "correct-horse-battery"


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[RemoteSurreal]:
    """A fresh, empty SurrealDB server that lets anyone in (`--unauthenticated`)."""
    with remote_surreal(tmp_path / "surreal") as server:
        yield server


@pytest.fixture
def remote_with_auth(tmp_path: Path) -> Iterator[RemoteSurreal]:
    """A fresh SurrealDB server on which only the root user may do anything."""
    with remote_surreal(
        tmp_path / "surreal-auth", "--username", ROOT_USER, "--password", ROOT_PASSWORD
    ) as server:
        yield server


@pytest.fixture
def opened() -> Iterator[list[Store]]:
    """Stores a test opens, closed at teardown even when an assertion fails first."""
    stores: list[Store] = []
    yield stores
    for store in stores:
        store.close()


def open_store(stores: list[Store], url: str, **options: str) -> Store:
    store = Store(url, **options)
    store.open()
    stores.append(store)
    return store


@pytest.fixture
def daemons() -> Iterator[list[Daemon]]:
    """Daemons a test starts; any still running at teardown are killed by their pid."""
    started: list[Daemon] = []
    yield started
    for daemon in started:
        if daemon.process is not None and daemon.process.poll() is None:
            daemon.kill()


def start(daemons: list[Daemon], daemon: Daemon) -> Daemon:
    daemons.append(daemon)
    return daemon.start()


def file_drawer(client: httpx.Client, wing: str, content: str) -> dict[str, Any]:
    """Create `wing` (if needed) and its room `notes`, and file one drawer there."""
    assert client.post("/api/wings", json={"name": wing}).status_code in (200, 201)
    assert client.post(f"/api/wings/{wing}/rooms", json={"name": "notes"}).status_code in (
        200,
        201,
    )
    filed = client.post(
        f"/api/wings/{wing}/rooms/notes/drawers",
        json={"content": content, "name": f"{uuid.uuid4().hex[:8]}.md"},
    )
    assert filed.status_code == 201, filed.text
    drawer: dict[str, Any] = filed.json()
    return drawer


# The server itself ----------------------------------------------------------------------------


def test_the_server_answers_rpc_frames_as_surrealdb_does(remote: RemoteSurreal) -> None:
    """What the remote-store tests rely on: frames in and out as a server's, over `/rpc`.

    The per-connection session the wrapper adds never shows in an answer, and a frame that is
    not a request gets an error without an id, which is how the SDK recognises one.
    """
    with ws_connect(f"{remote.url}/rpc", subprotocols=[Subprotocol("cbor")]) as ws:
        ws.send(cbor_encode({"id": "v", "method": "version"}))
        version = cbor_decode(ws.recv())
        assert set(version) == {"id", "result"}
        assert version["result"].startswith("surrealdb-3.")

        ws.send(cbor_encode({"id": "u", "method": "use", "params": ["ns", "db"]}))
        assert cbor_decode(ws.recv()) == {
            "id": "u",
            "result": {"namespace": "ns", "database": "db"},
        }

        ws.send(cbor_encode({"id": "q", "method": "query", "params": ["RETURN session::db()", {}]}))
        answer = cbor_decode(ws.recv())
        assert set(answer) == {"id", "result"}
        assert answer["result"][0]["result"] == "db"

        ws.send(b"\xff")
        rejected = cbor_decode(ws.recv())
        assert set(rejected) == {"error"}
        assert rejected["error"]["code"] == -32700

    with pytest.raises(InvalidStatus) as refused:
        ws_connect(f"{remote.url}/elsewhere", subprotocols=[Subprotocol("cbor")])
    assert refused.value.response.status_code == 404


# The store on its own --------------------------------------------------------------------------


def test_a_remote_store_opens_migrates_and_reads_back(
    remote: RemoteSurreal, opened: list[Store]
) -> None:
    store = open_store(opened, remote.url)

    assert store.mode == "remote"
    assert store.migration_state().pending == len(bundled_migrations())
    state = store.migrate()
    assert (state.applied, state.pending) == (len(bundled_migrations()), 0)
    assert store.healthy() == (True, None)

    store.query("CREATE wing:kept SET name = $name", {"name": "kept"})
    assert store.one("SELECT VALUE name FROM wing") == ["kept"]
    names = store.transaction(
        "CREATE wing:two SET name = 'two'; SELECT VALUE name FROM wing ORDER BY name;"
    )
    assert names == ["kept", "two"]
    with pytest.raises(StoreFailed):
        store.transaction("CREATE wing:three SET name = 'three'; THROW 'abandoned';")
    assert store.one("SELECT VALUE name FROM wing ORDER BY name") == ["kept", "two"]


def test_two_writers_of_one_record_both_commit(remote: RemoteSurreal, opened: list[Store]) -> None:
    """Two processes of one palace updating one record (a deduplication key both rooms' items
    share, a job both claim) conflict; the engine refuses the later commit and says it can be
    retried, and the store does. Before, one of the two failed with `StoreFailed`."""
    writers = [open_store(opened, remote.url) for _ in range(2)]
    writers[0].query("CREATE counter:shared SET n = 0")
    rounds = 150
    failures: list[BaseException] = []

    def write(store: Store, writer: int) -> None:
        for number in range(rounds):
            try:
                store.transaction(
                    "UPDATE counter:shared SET n += 1;"
                    "CREATE type::record('entry', [$writer, $number]) RETURN NONE;",
                    {"writer": writer, "number": number},
                )
                store.query("UPDATE counter:shared SET n += 1")
            except BaseException as error:
                failures.append(error)

    threads = [threading.Thread(target=write, args=(store, n)) for n, store in enumerate(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    # Not the counter's value: the test server's engine (3.2.4, in memory) now and then lets two
    # concurrent increments of one record both commit from the same value (598 of 600 once).
    assert writers[1].one("SELECT count() FROM entry GROUP ALL") == [{"count": 2 * rounds}]


def test_connections_to_one_server_share_its_data_not_their_sessions(
    remote: RemoteSurreal, opened: list[Store]
) -> None:
    """Two stores are two sessions on one datastore, as two daemons on one server would be."""
    first = open_store(opened, remote.url)
    first.migrate()
    first.query("CREATE wing:shared SET name = 'shared'")

    second = open_store(opened, remote.url)
    assert second.migration_state().pending == 0
    assert second.one("SELECT VALUE name FROM wing") == ["shared"]
    assert first.one("RETURN session::id()") != second.one("RETURN session::id()")

    other = open_store(opened, remote.url, namespace="elsewhere")
    assert other.migration_state().pending == len(bundled_migrations())
    assert first.one("RETURN session::ns()") == "memcastle", "`use` stays on its connection"


def test_a_store_signs_in_with_its_credentials(
    remote_with_auth: RemoteSurreal, opened: list[Store], tmp_path: Path
) -> None:
    config = load_config(
        config_file=str(
            remote_config(
                tmp_path / "config",
                remote_with_auth.url,
                username=ROOT_USER,
                password=ROOT_PASSWORD,
            )
        ),
        env={},
    )
    store = Store.from_config(config)
    store.open()
    opened.append(store)

    assert store.mode == "remote"
    assert store.migrate().pending == 0
    assert store.healthy() == (True, None)


def test_a_wrong_password_is_refused_at_open(remote_with_auth: RemoteSurreal) -> None:
    store = Store(remote_with_auth.url, username=ROOT_USER, password="not-the-password")
    with pytest.raises(StoreFailed) as caught:
        store.open()
    assert caught.value.code == "memcastle::store::backend_failed"
    assert remote_with_auth.url in caught.value.message
    assert "not-the-password" not in caught.value.message


def test_without_credentials_a_guarded_server_is_refused_at_open(
    remote_with_auth: RemoteSurreal,
) -> None:
    """Opening asks the server a question, so a refusal names its cause at once."""
    with pytest.raises(StoreFailed) as caught:
        Store(remote_with_auth.url).open()
    assert caught.value.code == "memcastle::store::backend_failed"
    assert "anonymous" in caught.value.message.lower()


def test_a_url_nobody_listens_on_fails_to_open() -> None:
    with socket.socket() as held:
        # Bound but not listening: connections are refused, and no one else can take the port.
        held.bind(("127.0.0.1", 0))
        url = f"ws://127.0.0.1:{held.getsockname()[1]}"
        with pytest.raises(StoreFailed) as caught:
            Store(url).open()
    assert caught.value.code == "memcastle::store::backend_failed"
    assert url in caught.value.message


# Daemons on a remote store ---------------------------------------------------------------------


def test_a_daemon_serves_the_api_from_a_remote_store(
    remote: RemoteSurreal, daemons: list[Daemon], opened: list[Store], tmp_path: Path
) -> None:
    daemon = start(daemons, remote_daemon(tmp_path / "daemon", remote.url))

    with daemon.client() as client:
        status = client.get("/api/status").json()
        assert status["store"] == {"mode": "remote"}
        assert status["datastore"] == {"healthy": True}
        assert status["migrations"]["pending"] == 0

        drawer = file_drawer(client, "remote-wing", "Stored on the server.")
        read = client.get(f"/api/drawers/{drawer['id']}")
        assert read.status_code == 200, read.text
        assert read.json()["content"] == "Stored on the server."
        assert client.get("/api/status").json()["drawers"] == 1

    # The drawer is on the server, not in an embedded palace next to the daemon.
    assert not (daemon.palace / "db").exists()
    store = open_store(opened, remote.url)
    content = store.one(
        "SELECT VALUE content FROM ONLY type::record('drawer', $id)", {"id": drawer["id"]}
    )
    assert content == "Stored on the server."

    assert daemon.stop() == 0, daemon.log()


def test_a_daemon_signs_in_with_credentials_from_its_config(
    remote_with_auth: RemoteSurreal, daemons: list[Daemon], tmp_path: Path
) -> None:
    daemon = start(
        daemons,
        remote_daemon(
            tmp_path / "daemon",
            remote_with_auth.url,
            username=ROOT_USER,
            password=ROOT_PASSWORD,
        ),
    )

    with daemon.client() as client:
        status = client.get("/api/status").json()
        assert status["store"] == {"mode": "remote"}
        assert status["datastore"] == {"healthy": True}
        drawer = file_drawer(client, "guarded", "Behind a password.")
        assert client.get(f"/api/drawers/{drawer['id']}").json()["content"] == (
            "Behind a password."
        )
    assert daemon.stop() == 0
    assert ROOT_PASSWORD not in daemon.log()


@pytest.mark.slow
def test_two_daemons_on_one_remote_store_see_each_others_writes(
    remote: RemoteSurreal, daemons: list[Daemon], tmp_path: Path
) -> None:
    first = start(daemons, remote_daemon(tmp_path / "first", remote.url))
    second = start(daemons, remote_daemon(tmp_path / "second", remote.url))
    assert first.palace != second.palace
    assert first.base_url != second.base_url

    with first.client() as one, second.client() as two:
        from_first = file_drawer(one, "shared", "Filed through the first daemon.")
        seen = two.get(f"/api/drawers/{from_first['id']}")
        assert seen.status_code == 200, seen.text
        assert seen.json()["content"] == "Filed through the first daemon."

        from_second = file_drawer(two, "shared", "Filed through the second daemon.")
        seen = one.get(f"/api/drawers/{from_second['id']}")
        assert seen.status_code == 200, seen.text
        assert seen.json()["content"] == "Filed through the second daemon."

        for client in (one, two):
            listing = client.get("/api/wings/shared/rooms/notes/drawers").json()
            assert listing["total"] == 2
            assert client.get("/api/status").json()["drawers"] == 2

    assert first.stop() == 0, first.log()
    assert second.stop() == 0, second.log()


@pytest.mark.slow
def test_the_remote_store_outlives_the_daemon_that_wrote_to_it(
    remote: RemoteSurreal, daemons: list[Daemon], tmp_path: Path
) -> None:
    """Stopping one daemon closes only its own connection: the server and its data remain."""
    first = start(daemons, remote_daemon(tmp_path / "first", remote.url))
    with first.client() as client:
        drawer = file_drawer(client, "lasting", "Outlives the daemon that filed it.")
    assert first.stop() == 0, first.log()

    second = start(daemons, remote_daemon(tmp_path / "second", remote.url))
    with second.client() as client:
        assert client.get(f"/api/drawers/{drawer['id']}").json()["content"] == (
            "Outlives the daemon that filed it."
        )
        assert client.get("/api/status").json()["migrations"]["pending"] == 0


def test_serve_exits_when_the_remote_store_is_unreachable(
    daemons: list[Daemon], tmp_path: Path
) -> None:
    with socket.socket() as held:
        # Bound but not listening: connections are refused, and no one else can take the port.
        held.bind(("127.0.0.1", 0))
        url = f"ws://127.0.0.1:{held.getsockname()[1]}"
        daemon = remote_daemon(tmp_path / "daemon", url)
        daemons.append(daemon)
        log = daemon.start_refused(timeout=DAEMON_EXIT_TIMEOUT)

    assert "memcastle::store::backend_failed" in log
    assert url in log
    assert not (daemon.palace / "db").exists(), "no embedded palace as a fallback"
