"""The daemon's life cycle end to end: start, stop, refusals at start-up, restarts and crashes.

Every test runs `memcastle serve` in a subprocess on a palace of its own and talks to it over
real HTTP; nothing here sleeps on a guess.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kernel import __version__
from kernel.store import bundled_migrations
from tests.support.daemon import REPO, Daemon
from tests.support.waits import wait_for

EXIT_TIMEOUT = 10.0
DURABILITY_DRAWERS = 50


def registry_path(daemon: Daemon) -> Path:
    """Where the spec puts the registry: `<state>/memcastle/run/<sha256(palace)[:16]>`."""
    digest = hashlib.sha256(str(daemon.palace.resolve()).encode()).hexdigest()[:16]
    return daemon.state / "memcastle" / "run" / digest / "daemon.json"


def file_drawer(client: httpx.Client, wing: str, room: str, name: str, content: str) -> dict:
    """File one drawer and insist it was acknowledged as new (201)."""
    response = client.post(
        f"/api/wings/{wing}/rooms/{room}/drawers", json={"content": content, "name": name}
    )
    assert response.status_code == 201, response.text
    return response.json()


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A socket of the test's own, listening on 127.0.0.1 on a port the OS picked."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    yield sock
    sock.close()


@pytest.fixture
def make_daemon(tmp_path: Path) -> Iterator[Callable[..., Daemon]]:
    """Daemons in subdirectories of `tmp_path`; any still running at the end are killed."""
    made: list[Daemon] = []

    def make(name: str, **env: str) -> Daemon:
        root = tmp_path / name
        root.mkdir()
        made.append(Daemon(root, env=env))
        return made[-1]

    yield make
    for daemon in made:
        if daemon.process is not None and daemon.process.poll() is None:
            daemon.kill()


def spawn(daemon: Daemon) -> subprocess.Popen[bytes]:
    """Start `serve` without `Daemon.start`'s clean-up of the registry, as a user would."""
    with daemon.log_path.open("ab") as log:
        daemon.process = subprocess.Popen(
            daemon.command("serve"), env=daemon.env, cwd=REPO, stdout=log, stderr=log
        )
    return daemon.process


# Stopping ----------------------------------------------------------------------------------


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_stops_the_daemon_cleanly(fresh_daemon: Daemon, signum: int) -> None:
    fresh_daemon.start()
    registry = registry_path(fresh_daemon)
    assert registry.exists()

    # A client holding a keep-alive connection open does not hold the daemon up.
    with fresh_daemon.client() as client:
        assert client.get("/api/health").status_code == 200
        fresh_daemon.signal(signum)
        status = fresh_daemon.wait(timeout=EXIT_TIMEOUT)

    assert status == 0, fresh_daemon.log()
    assert not registry.exists(), "a clean stop removes the registry file"


def host_and_port(daemon: Daemon) -> tuple[str, int]:
    host, _, port = daemon.base_url.removeprefix("http://").rpartition(":")
    return host, int(port)


def refuses_connections(address: tuple[str, int]) -> bool:
    try:
        socket.create_connection(address, timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def test_sigterm_drains_a_request_in_flight(fresh_daemon: Daemon) -> None:
    """Graceful drain (cli.md `serve`): once stopping, the daemon accepts no new connection but
    still answers the request it is in the middle of."""
    fresh_daemon.start()
    address = host_and_port(fresh_daemon)
    body = json.dumps({"content": "Filed while stopping.", "name": "late.md"}).encode()
    with socket.create_connection(address, timeout=10) as conn:
        # `Expect: 100-continue` makes the daemon confirm it has read the request's headers, so
        # the request is in flight before the signal is sent.
        conn.sendall(
            b"POST /api/wings/drain/rooms/r/drawers HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nExpect: 100-continue\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)
        )
        assert conn.recv(1024).startswith(b"HTTP/1.1 100 Continue")
        fresh_daemon.signal(signal.SIGTERM)
        wait_for(lambda: refuses_connections(address), timeout=10, what="the listener to close")

        conn.sendall(body)
        answer = conn.recv(65536)

    assert answer.startswith(b"HTTP/1.1 201"), answer
    assert fresh_daemon.wait(timeout=EXIT_TIMEOUT) == 0, fresh_daemon.log()


@pytest.mark.parametrize("mode", [None, "disabled", "nonsense"])
def test_shutdown_route_stops_the_daemon_cleanly(fresh_daemon: Daemon, mode: str | None) -> None:
    """Shutdown is never gated by the memory mode: the header is ignored, even a bad one."""
    fresh_daemon.start()
    registry = registry_path(fresh_daemon)
    headers = {"X-MemCastle-Mode": mode} if mode else {}
    with fresh_daemon.client() as client:
        response = client.post("/api/shutdown", headers=headers)
        status = fresh_daemon.wait(timeout=EXIT_TIMEOUT)

    assert response.status_code == 202, response.text
    assert response.json() == {"shutting_down": True}
    assert status == 0, fresh_daemon.log()
    assert not registry.exists(), "a clean stop removes the registry file"


def test_registry_file_describes_the_running_daemon(fresh_daemon: Daemon) -> None:
    before = dt.datetime.now(dt.UTC)
    fresh_daemon.start()
    assert fresh_daemon.process is not None
    registry = registry_path(fresh_daemon)

    record = json.loads(registry.read_text())

    assert set(record) == {"pid", "bind_addr", "started_at", "version"}
    assert record["pid"] == fresh_daemon.process.pid
    assert record["version"] == __version__
    host, _, port = record["bind_addr"].rpartition(":")
    assert host == "127.0.0.1"
    assert int(port) > 0, "port 0 is replaced by the port the OS picked"
    started_at = dt.datetime.fromisoformat(record["started_at"].replace("Z", "+00:00"))
    assert started_at.tzinfo is not None
    assert before - dt.timedelta(seconds=1) <= started_at <= dt.datetime.now(dt.UTC)
    with fresh_daemon.client() as client:
        status = client.get("/api/status").json()
    assert status["pid"] == record["pid"]
    assert status["bind_addr"] == record["bind_addr"]


@pytest.mark.slow
def test_a_stale_registry_file_is_overwritten(fresh_daemon: Daemon) -> None:
    """A crashed daemon leaves its registry file behind; the next one replaces it."""
    fresh_daemon.start()
    fresh_daemon.kill()
    registry = registry_path(fresh_daemon)
    stale = json.loads(registry.read_text())

    pid = spawn(fresh_daemon).pid

    def replaced() -> dict[str, Any] | None:
        assert fresh_daemon.process is not None
        assert fresh_daemon.process.poll() is None, fresh_daemon.log()
        return fresh_daemon.registry() if registry_pid(registry) == pid else None

    record = wait_for(replaced, timeout=30, what="the new daemon to replace the stale registry")
    assert record["pid"] != stale["pid"]
    fresh_daemon.base_url = f"http://{record['bind_addr']}"
    with fresh_daemon.client() as client:
        assert client.get("/api/status").json()["pid"] == pid


def registry_pid(path: Path) -> int | None:
    try:
        return json.loads(path.read_text())["pid"]
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        return None


def test_ipv6_loopback(make_daemon: Callable[..., Daemon]) -> None:
    if not ipv6_loopback_available():
        pytest.skip("no IPv6 loopback on this machine")
    daemon = make_daemon("v6", MEMCASTLE_BIND="::1").start()

    record = daemon.registry()
    assert record is not None
    assert record["bind_addr"].startswith("[::1]:")
    with daemon.client() as client:
        assert client.get("/api/health").json() == {"status": "ok"}
        assert client.get("/api/status").json()["bind_addr"] == record["bind_addr"]
    assert daemon.stop() == 0, daemon.log()


def ipv6_loopback_available() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.slow
def test_listening_beyond_loopback_without_auth_is_logged(
    make_daemon: Callable[..., Daemon],
) -> None:
    loopback = make_daemon("loopback")
    exposed = make_daemon("exposed", MEMCASTLE_BIND="0.0.0.0")
    for daemon in (loopback, exposed):
        daemon.start()
        assert daemon.stop() == 0, daemon.log()

    assert "without authentication" not in loopback.log()
    warning = [line for line in exposed.log().splitlines() if "without authentication" in line]
    assert warning, exposed.log()
    assert "WARN" in warning[0]
    assert "0.0.0.0:" in warning[0]


# Refusals at start-up ----------------------------------------------------------------------


def test_address_in_use_fails_before_touching_the_palace(
    make_daemon: Callable[..., Daemon], listener: socket.socket
) -> None:
    port = listener.getsockname()[1]
    daemon = make_daemon("busy", MEMCASTLE_PORT=str(port))

    log = daemon.start_refused()

    assert "memcastle::server::bind_failed" in log
    assert f"127.0.0.1:{port}" in log
    assert not (daemon.palace / "db").exists(), "the listener is bound before the store opens"


def test_migrate_refuses_a_palace_held_by_a_daemon(fresh_daemon: Daemon) -> None:
    fresh_daemon.start()

    result = fresh_daemon.run("migrate")

    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "memcastle::store::backend_failed" in output
    assert str(fresh_daemon.palace) in output
    assert "daemon probably holds it" in output
    with fresh_daemon.client() as client:
        assert client.get("/api/health").status_code == 200, "the daemon is unaffected"


@pytest.mark.slow
def test_second_daemon_refuses_a_palace_held_by_another(
    make_daemon: Callable[..., Daemon],
) -> None:
    first = make_daemon("first").start()
    registry = registry_path(first)
    advertised = registry.read_text()
    # Same palace and state directory (so the same registry file), another port and log.
    second = make_daemon(
        "second", MEMCASTLE_PALACE_PATH=str(first.palace), XDG_STATE_HOME=str(first.state)
    )

    status = spawn(second).wait(timeout=30)

    log = second.log()
    assert status != 0, log
    assert "memcastle::store::backend_failed" in log
    assert str(first.palace) in log
    assert "daemon probably holds it" in log
    assert registry.read_text() == advertised, "the first daemon's registry file is untouched"
    with first.client() as client:
        assert client.get("/api/health").status_code == 200, "the first daemon is unaffected"


# Data across restarts ----------------------------------------------------------------------


@pytest.mark.slow
def test_restart_keeps_the_palace(fresh_daemon: Daemon) -> None:
    fresh_daemon.start()
    with fresh_daemon.client() as client:
        wing = client.post("/api/wings", json={"name": "projects", "description": "work"})
        assert wing.status_code == 201, wing.text
        room = client.post("/api/wings/projects/rooms", json={"name": "castle"})
        assert room.status_code == 201, room.text
        drawer = file_drawer(client, "projects", "castle", "plan.md", "Moat first, towers later.")
        by_id = client.get(f"/api/drawers/{drawer['id']}").json()
        by_name = client.get("/api/wings/projects/rooms/castle/drawers/plan.md").json()
    assert fresh_daemon.stop() == 0, fresh_daemon.log()

    fresh_daemon.start()

    with fresh_daemon.client() as client:
        again_by_id = client.get(f"/api/drawers/{drawer['id']}")
        again_by_name = client.get("/api/wings/projects/rooms/castle/drawers/plan.md")
        wings = {w["name"]: w for w in client.get("/api/wings").json()["wings"]}
    assert again_by_id.status_code == 200, again_by_id.text
    assert again_by_id.json() == by_id
    assert again_by_name.status_code == 200, again_by_name.text
    assert again_by_name.json() == by_name
    assert again_by_id.json()["content"] == "Moat first, towers later."
    assert wings["projects"]["id"] == wing.json()["id"]
    assert wings["projects"]["description"] == "work"
    assert wings["projects"]["counts"] == {"rooms": 1, "drawers": 1}


@pytest.mark.slow
def test_acknowledged_writes_survive_kill_9(fresh_daemon: Daemon) -> None:
    """The durability proof: a 201 means the drawer is on disk (`sync=every`), so a SIGKILL
    straight after the last acknowledgement loses nothing."""
    fresh_daemon.start()
    with fresh_daemon.client() as client:
        filed = [
            file_drawer(client, "durable", "log", f"entry-{n:03d}", f"Entry number {n}.")
            for n in range(DURABILITY_DRAWERS)
        ]
        fresh_daemon.kill()
    assert fresh_daemon.process is not None
    assert fresh_daemon.process.returncode == -signal.SIGKILL

    fresh_daemon.start()

    with fresh_daemon.client() as client:
        for drawer in filed:
            response = client.get(f"/api/drawers/{drawer['id']}")
            assert response.status_code == 200, response.text
            assert response.json()["content"] == drawer["content"]
            assert response.json()["name"] == drawer["name"]
        room = client.get("/api/wings/durable/rooms/log").json()
        listing = client.get("/api/wings/durable/rooms/log/drawers", params={"limit": 200}).json()
    assert room["counts"] == {"drawers": DURABILITY_DRAWERS}
    assert listing["total"] == DURABILITY_DRAWERS
    assert {d["id"] for d in listing["drawers"]} == {d["id"] for d in filed}


# migrate without a daemon ------------------------------------------------------------------


def migrate_json(daemon: Daemon, *args: str) -> tuple[int, dict[str, Any]]:
    """Run `migrate` and parse the JSON it prints on stdout."""
    result = daemon.run("migrate", *args)
    assert result.stdout.strip(), result.stderr
    return result.returncode, json.loads(result.stdout)


@pytest.mark.slow
def test_migrate_status_and_check_on_a_new_palace(tmp_path: Path) -> None:
    daemon = Daemon(tmp_path)
    available = len(bundled_migrations())
    assert available > 0

    status, report = migrate_json(daemon, "--status")
    assert status == 0
    assert report == {"applied": 0, "available": available, "pending": available}

    status, report = migrate_json(daemon, "--check")
    assert status == 1, "--check fails while migrations pend"
    assert report["pending"] == available

    status, report = migrate_json(daemon)
    assert status == 0
    assert report == {"applied": available, "available": available, "pending": 0}

    status, report = migrate_json(daemon, "--check")
    assert status == 0
    assert report == {"applied": available, "available": available, "pending": 0}


@pytest.mark.slow
def test_migrate_status_after_the_daemon_stopped(fresh_daemon: Daemon) -> None:
    """A daemon applies every migration at start; once it is gone the palace can be inspected."""
    fresh_daemon.start()
    assert fresh_daemon.stop() == 0, fresh_daemon.log()
    available = len(bundled_migrations())

    status, report = migrate_json(fresh_daemon, "--status")
    assert status == 0
    assert report == {"applied": available, "available": available, "pending": 0}

    status, _ = migrate_json(fresh_daemon, "--check")
    assert status == 0


def test_the_memcastle_script_runs_the_same_commands(tmp_path: Path) -> None:
    """`memcastle <command>` and `python manage.py <command>` are one CLI."""
    daemon = Daemon(tmp_path)
    script = Path(sys.executable).parent / "memcastle"
    result = subprocess.run(
        [str(script), "migrate", "--status"],
        env=daemon.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == json.loads(daemon.run("migrate", "--status").stdout)
