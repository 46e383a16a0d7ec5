"""Token authentication end to end (dbadmin-web-auth.md section C) against real daemons."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import httpx
import pytest

from memcastle_project.auth import digest
from tests.support.auth import AUTH_ENV, SECRET, assert_unauthorized
from tests.support.daemon import Daemon

TOKEN_FORMAT = re.compile(r"^mc_[0-9a-f]{64}$")

# Everything but the health check is guarded, including routes that do not exist (a 401, not a
# 404) and the MCP endpoint. None of these changes anything, so they share one daemon.
GUARDED = [
    ("GET", "/api/status", None),
    ("GET", "/api/wings", None),
    ("POST", "/api/wings", {"name": "intruders"}),
    ("GET", "/api/wings/intruders", None),
    ("GET", "/api/nope", None),
    ("POST", "/api/nope", {}),
    ("GET", "/mcp", None),
    ("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def status_of(client: httpx.Client, token: str) -> int:
    return client.get("/api/status", headers=bearer(token)).status_code


def generate(client: httpx.Client, token: str | None = None) -> str:
    response = client.post("/api/auth/token", headers=bearer(token) if token else {})
    assert response.status_code == 201, response.text
    return response.json()["token"]


@pytest.fixture
def secured(fresh_daemon: Daemon) -> Daemon:
    """A daemon of this test's own with authentication on and a configured secret."""
    fresh_daemon.env.update(AUTH_ENV)
    return fresh_daemon.start()


def test_health_stays_open(shared_secured: Daemon) -> None:
    with shared_secured.client() as client:
        response = client.get("/api/health")
    assert response.status_code == 200, response.text
    assert response.json() == {"status": "ok"}


@pytest.mark.parametrize(
    ("method", "path", "body"), GUARDED, ids=[f"{m} {p}" for m, p, _ in GUARDED]
)
def test_requests_without_a_token_are_refused(
    shared_secured: Daemon, method: str, path: str, body: dict | None
) -> None:
    with shared_secured.client() as client:
        response = client.request(method, path, json=body)
    assert_unauthorized(response)


@pytest.mark.parametrize(
    "authorization",
    [
        f"Bearer {SECRET}x",
        f"Bearer {SECRET[:-1]}",
        "Bearer mc_" + "0" * 64,
        "Bearer",
        f"Basic {SECRET}",
        f"Token {SECRET}",
        SECRET,
    ],
    ids=["longer", "shorter", "made-up", "no-token", "basic", "token", "bare"],
)
def test_wrong_credentials_are_refused(shared_secured: Daemon, authorization: str) -> None:
    with shared_secured.client(Authorization=authorization) as client:
        assert_unauthorized(client.get("/api/status"))
        assert_unauthorized(client.post("/api/wings", json={"name": "intruders"}))


def test_refused_admin_requests_change_nothing(secured: Daemon) -> None:
    """The token routes and the shutdown route are guarded once auth is on: without a token they
    neither make a token, revoke one nor stop the daemon."""
    with secured.client() as client:
        token = generate(client, SECRET)
        assert_unauthorized(client.post("/api/auth/token"))
        assert_unauthorized(client.delete("/api/auth/token"))
        assert_unauthorized(client.post("/api/auth/token", headers=bearer("mc_" + "1" * 64)))
        assert_unauthorized(client.post("/api/shutdown"))
        assert status_of(client, token) == 200, (
            "the generated token was neither replaced nor revoked"
        )
        assert client.get("/api/health").status_code == 200
    assert secured.process is not None
    assert secured.process.poll() is None, "the daemon is still running"


def test_the_configured_secret_is_accepted(secured: Daemon) -> None:
    with secured.client(**bearer(SECRET)) as client:
        status = client.get("/api/status")
        created = client.post("/api/wings", json={"name": "guarded"})
        wings = client.get("/api/wings")
    assert status.status_code == 200, status.text
    assert status.json()["auth_enabled"] is True
    assert SECRET not in status.text
    assert created.status_code == 201, created.text
    assert [w["name"] for w in wings.json()["wings"]] == ["guarded"]


def test_token_generation_rotation_and_revocation(secured: Daemon) -> None:
    with secured.client() as client:
        response = client.post("/api/auth/token", headers=bearer(SECRET))
        assert response.status_code == 201, response.text
        assert response.headers.get("cache-control") == "no-store"
        answer = response.json()
        assert set(answer) == {"token", "algorithm", "version", "created_at"}
        assert TOKEN_FORMAT.match(answer["token"]), answer["token"]
        assert answer["algorithm"] == "sha256"
        assert answer["version"] == 1
        created_at = dt.datetime.fromisoformat(answer["created_at"].replace("Z", "+00:00"))
        assert abs(dt.datetime.now(dt.UTC) - created_at) < dt.timedelta(minutes=1)
        first = answer["token"]
        assert status_of(client, first) == 200

        status = client.get("/api/status", headers=bearer(first))
        assert first not in status.text and SECRET not in status.text

        # A second token replaces the first, at once; it can be asked for with the first.
        second = generate(client, first)
        assert second != first
        assert status_of(client, first) == 401
        assert status_of(client, second) == 200
        assert status_of(client, SECRET) == 200

        revoked = client.delete("/api/auth/token", headers=bearer(second))
        assert revoked.status_code == 200, revoked.text
        assert revoked.json() == {"revoked": True}
        assert status_of(client, second) == 401
        assert status_of(client, SECRET) == 200, "revoking never touches the configured secret"

    log = secured.log()
    for secret in (SECRET, first, second):
        assert secret not in log, "credentials never reach the log"


def test_token_routes_are_outside_the_mode_system(fresh_daemon: Daemon) -> None:
    """Token generate/revoke are administrative: a memory mode never refuses them."""
    fresh_daemon.start()
    with fresh_daemon.client() as client:
        for mode in ("disabled", "read_only", "full"):
            headers = {"X-MemCastle-Mode": mode}
            made = client.post("/api/auth/token", headers=headers)
            assert made.status_code == 201, (mode, made.text)
            revoked = client.delete("/api/auth/token", headers=headers)
            assert revoked.status_code == 200, (mode, revoked.text)


def test_token_routes_ignore_an_unknown_mode(fresh_daemon: Daemon) -> None:
    """memory-modes.md §3: administrative routes accept the mode header and ignore it, like
    /api/shutdown does (an unknown value is a 400 only on routes that read or write memory)."""
    fresh_daemon.start()
    headers = {"X-MemCastle-Mode": "nonsense"}
    with fresh_daemon.client() as client:
        made = client.post("/api/auth/token", headers=headers)
        revoked = client.delete("/api/auth/token", headers=headers)
    assert made.status_code == 201, made.text
    assert revoked.status_code == 200, revoked.text


def test_status_reports_auth_disabled(daemon: Daemon) -> None:
    with daemon.client() as client:
        response = client.get("/api/status")
    assert response.status_code == 200, response.text
    assert response.json()["auth_enabled"] is False


@pytest.mark.slow
def test_token_made_while_auth_is_off_opens_an_enabled_daemon(fresh_daemon: Daemon) -> None:
    """Bootstrap: the token routes are open while auth is off; the stored digest is then the
    only credential of a daemon restarted with auth on and no secret."""
    fresh_daemon.start()
    with fresh_daemon.client() as client:
        token = generate(client)
        assert TOKEN_FORMAT.match(token)
        # A stored digest never turns authentication on by itself.
        status = client.get("/api/status")
        assert status.status_code == 200
        assert status.json()["auth_enabled"] is False
    assert fresh_daemon.stop() == 0, fresh_daemon.log()
    assert_only_the_digest_is_stored(fresh_daemon.palace, token)

    fresh_daemon.env["MEMCASTLE_AUTH_ENABLED"] = "true"
    fresh_daemon.start()

    with fresh_daemon.client() as client:
        assert client.get("/api/health").status_code == 200
        assert_unauthorized(client.get("/api/status"))
        status = client.get("/api/status", headers=bearer(token))
        assert status.status_code == 200, status.text
        assert status.json()["auth_enabled"] is True
        assert token not in status.text
    assert token not in fresh_daemon.log()


def assert_only_the_digest_is_stored(palace: Path, token: str) -> None:
    """The palace's files hold the token's SHA-256 digest and never the token itself.

    Finding the digest shows the engine writes strings as they are, so not finding the token
    means it was never written.
    """
    stored = b"".join(path.read_bytes() for path in palace.rglob("*") if path.is_file())
    assert digest(token).encode() in stored
    assert token.encode() not in stored
    assert token[3:].encode() not in stored


@pytest.mark.slow
def test_revoking_while_auth_is_off_leaves_no_credential(fresh_daemon: Daemon) -> None:
    """DELETE is open while auth is off too, and removes the stored digest: an enabled daemon
    with no secret then has nothing to check tokens against and refuses to start."""
    fresh_daemon.start()
    with fresh_daemon.client() as client:
        generate(client)
        revoked = client.delete("/api/auth/token")
        assert revoked.status_code == 200, revoked.text
        assert revoked.json() == {"revoked": True}
    assert fresh_daemon.stop() == 0, fresh_daemon.log()

    fresh_daemon.env["MEMCASTLE_AUTH_ENABLED"] = "true"
    assert_start_fails_not_configured(fresh_daemon)


def test_auth_enabled_without_any_credential_refuses_to_start(fresh_daemon: Daemon) -> None:
    fresh_daemon.env["MEMCASTLE_AUTH_ENABLED"] = "true"
    assert_start_fails_not_configured(fresh_daemon)


def assert_start_fails_not_configured(daemon: Daemon) -> None:
    assert "memcastle::auth::not_configured" in daemon.start_refused()
