"""Signing a source in, end to end: a real daemon, a real component (the probe source with a
`[permissions.oauth]` declaration) and a local OAuth provider (`tests.support.oauth_provider`).

The module is one story, in order: a source that is not signed in shows so and is not mined; the
device flow signs it in through `/api/source-packages/probe/auth`; the component receives its
access token, renewed and rotated; a changed manifest reads as signed out and the browser flow
signs it in again; a revoked grant removes the credential; an unreachable provider keeps it;
removing the source deletes it. No token may appear in any answer, in the daemon's log or in any
file but the credential store.
"""

from __future__ import annotations

import hashlib
import json
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from sources.manifest import consent_digest, parse_manifest
from tests.support.cli import cli
from tests.support.components import package
from tests.support.daemon import Daemon
from tests.support.http import assert_error, drawer, room_drawers, wait_job
from tests.support.oauth_provider import OAuthProvider, oauth_manifest
from tests.support.waits import wait_for

GZIP = {"Content-Type": "application/gzip"}
AUTH = "/api/source-packages/probe/auth"
# Under the 60 s margin: every access token handed out is renewed before the next use.
EXPIRES_IN = 30

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def provider() -> Iterator[OAuthProvider]:
    running = OAuthProvider(expires_in=EXPIRES_IN, interval=0.05).start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    package("probe")  # built before the daemon starts
    # The file store, whatever keyring the machine running the tests has.
    env = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
    running = Daemon(tmp_path_factory.mktemp("oauth"), env=env).start()
    yield running
    running.stop()


class Answers:
    """Every answer the tests received, headers and bodies, to look for tokens in."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def record(self, response: httpx.Response) -> None:
        response.read()
        self.seen.append(json.dumps(dict(response.headers)) + "\n" + response.text)


@pytest.fixture(scope="module")
def answers() -> Answers:
    return Answers()


@pytest.fixture
def client(daemon: Daemon, answers: Answers) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=daemon.base_url, timeout=60, event_hooks={"response": [answers.record]}
    ) as client:
        yield client


def install(client: httpx.Client, text: str) -> dict[str, Any]:
    digest = consent_digest("probe", parse_manifest(text).permissions)
    response = client.post(
        "/api/source-packages",
        content=package("probe", text),
        headers=GZIP,
        params={"consent": digest, "enable": "true"},
    )
    assert response.status_code == 200, response.text
    source: dict[str, Any] = response.json()["source"]
    return source


def credential_file(daemon: Daemon) -> Path:
    return daemon.state / "memcastle" / "credentials" / "probe.json"


def place(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "note.txt").write_text("a note about the tide tables\n")
    return root


def mine(client: httpx.Client, locator: Path, wing: str) -> httpx.Response:
    body = {"type": "mine", "source": "probe", "locator": str(locator), "wing": wing}
    return client.post("/api/jobs", json={**body, "options": {"mode": "token"}})


def outcome(client: httpx.Client, flow: str) -> httpx.Response:
    """The outcome of the flow, waiting through `pending` answers."""

    def told() -> httpx.Response | None:
        answer = client.post(f"{AUTH}/{flow}/wait", params={"timeout": "2"})
        pending = answer.status_code == 200 and answer.json()["status"] == "pending"
        return None if pending else answer

    result: httpx.Response = wait_for(told, timeout=60, what="the sign-in to end")
    return result


def sign_in_with_device(client: httpx.Client, provider: OAuthProvider) -> dict[str, Any]:
    started = client.post(AUTH)
    assert started.status_code == 200, started.text
    assert started.headers["cache-control"] == "no-store"
    body = started.json()
    assert body["kind"] == "device" and body["verification_uri"].endswith("/activate")
    assert body["url"].endswith(f"user_code={body['user_code']}")
    pending = client.post(f"{AUTH}/{body['flow']}/wait", params={"timeout": "0"})
    assert pending.json() == {"source": "probe", "flow": body["flow"], "status": "pending"}
    provider.approve(body["user_code"])
    done = outcome(client, body["flow"])
    assert done.status_code == 200, done.text
    assert done.headers["cache-control"] == "no-store"
    told: dict[str, Any] = done.json()
    # Told once: the flow is forgotten.
    again = client.post(f"{AUTH}/{body['flow']}/wait", params={"timeout": "0"})
    assert_error(again, 502, "memcastle::credential::flow_failed")
    assert again.headers["cache-control"] == "no-store"
    return told


def test_a_source_not_signed_in_shows_so_and_is_not_mined(
    daemon: Daemon, provider: OAuthProvider, client: httpx.Client, tmp_path: Path
) -> None:
    installed = install(client, oauth_manifest(provider, flow="device"))
    assert installed["auth"] == {
        "signed_in": False,
        "scopes": ["read"],
        "provider": "127.0.0.1",
        "flows": ["device"],
    }
    listed = client.get("/api/sources").json()
    (probe,) = [entry for entry in listed["adapters"] if entry["name"] == "probe"]
    assert probe["auth"]["signed_in"] is False
    assert "auth" not in next(e for e in listed["adapters"] if e["name"] == "directory")
    refused = mine(client, place(tmp_path / "notes"), "oauth-refused")
    assert_error(refused, 409, "memcastle::credential::required")
    # Nothing of the place was recorded: no cursor, no drawer.
    assert client.get("/api/sources").json()["sources"] == []
    assert client.get("/api/wings/oauth-refused").status_code == 404


def test_sign_in_routes_refuse_what_does_not_sign_in(client: httpx.Client) -> None:
    builtin = client.post("/api/source-packages/directory/auth")
    assert_error(builtin, 400, "memcastle::credential::oauth_unsupported")
    assert builtin.headers["cache-control"] == "no-store"
    unknown = client.post("/api/source-packages/nowhere/auth")
    assert_error(unknown, 404, "memcastle::source::not_found")
    never = client.post(f"{AUTH}/no-such-flow/wait", params={"timeout": "0"})
    assert_error(never, 502, "memcastle::credential::flow_failed")
    bad = client.post(f"{AUTH}/no-such-flow/wait", params={"timeout": "3600"})
    assert_error(bad, 400, "memcastle::input::invalid")


def test_the_device_flow_signs_the_source_in(
    daemon: Daemon, provider: OAuthProvider, client: httpx.Client
) -> None:
    told = sign_in_with_device(client, provider)
    assert told["status"] == "signed_in" and told["signed_in"] is True
    assert told["source"] == "probe" and told["scopes"] == ["read"]
    assert told["stored_in"] == "file" and told["expires_at"]
    path = credential_file(daemon)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [entry.name for entry in path.parent.iterdir()] == ["probe.json"]
    stored = json.loads(path.read_text())
    assert stored["refresh_token"] == provider.issued[-1] and stored["access_token"] is None
    shown = client.get("/api/source-packages/probe").json()["auth"]
    assert shown["signed_in"] is True and shown["expires_at"]
    miner = {"name": "oauth", "source": "probe", "locator": str(daemon.root), "wing": "oauth"}
    created = client.post("/api/miners", json={**miner, "credential": {"type": "oauth"}})
    assert created.status_code == 201, created.text
    assert created.json()["credential"] == {"kind": "oauth", "available": True}


def test_the_component_receives_a_renewed_token_and_rotation_is_written_back(
    daemon: Daemon, provider: OAuthProvider, client: httpx.Client, tmp_path: Path
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    renewals = provider.renewals
    for round in range(2):
        # A new file each round, after the cursor, so each run reads one and asks for a token.
        (notes / f"n{round}.txt").write_text(f"round {round}\n")
        response = mine(client, notes, "oauth-token")
        assert response.status_code == 201, response.text
        wait_job(client, response.json()["id"])
        # Each token expires within 60 s, so each run renews it once, with the rotated token.
        assert provider.renewals == renewals + round + 1
        stored = json.loads(credential_file(daemon).read_text())
        assert stored["refresh_token"] == provider.issued[-1]
    filed = {
        drawer(client, d["id"])["content"] for d in room_drawers(client, "oauth-token", "notes")
    }
    assert hashlib.sha256(provider.access_tokens[-1].encode()).hexdigest() in "\n".join(filed)


def test_a_changed_manifest_signs_out_and_the_browser_flow_signs_in(
    daemon: Daemon, provider: OAuthProvider, client: httpx.Client
) -> None:
    installed = install(client, oauth_manifest(provider, flow="browser"))
    assert installed["auth"]["signed_in"] is False and installed["auth"]["flows"] == ["browser"]
    started = client.post(AUTH).json()
    assert started["kind"] == "browser" and "user_code" not in started
    query = {key: values[0] for key, values in parse_qs(urlsplit(started["url"]).query).items()}
    listener = query["redirect_uri"]
    assert listener.startswith("http://127.0.0.1:") and listener.endswith("/signed-in")
    with httpx.Client(timeout=10) as browser:
        forged = browser.get(listener, params={"code": "forged", "state": "not-the-state"})
        assert forged.status_code == 400
        landed = browser.get(started["url"], follow_redirects=True)
        assert landed.status_code == 200
        done = outcome(client, started["flow"])
        assert done.status_code == 200, done.text
        assert done.json()["signed_in"] is True
        with pytest.raises(httpx.ConnectError):
            browser.get(listener, params={"code": "again", "state": query["state"]})
    assert client.get("/api/source-packages/probe").json()["auth"]["signed_in"] is True


def test_a_new_flow_replaces_the_one_before(provider: OAuthProvider, client: httpx.Client) -> None:
    first = client.post(AUTH).json()
    second = client.post(AUTH).json()
    replaced = client.post(f"{AUTH}/{first['flow']}/wait", params={"timeout": "0"})
    assert_error(replaced, 502, "memcastle::credential::flow_failed")
    with httpx.Client(timeout=10) as browser:
        assert browser.get(second["url"], follow_redirects=True).status_code == 200
    assert outcome(client, second["flow"]).json()["signed_in"] is True


def test_the_cli_signs_in_and_opens_the_browser(
    daemon: Daemon, answers: Answers, tmp_path: Path
) -> None:
    # The "browser": a program that follows the page's redirect to the daemon's listener.
    browser = tmp_path / "browser"
    browser.write_text(
        f"#!{sys.executable}\nimport sys, httpx\n"
        "sys.exit(httpx.get(sys.argv[1], follow_redirects=True).status_code != 200)\n"
    )
    browser.chmod(0o700)
    result = cli(daemon, "source", "auth", "probe", env={"BROWSER": f"{browser} %s"})
    assert result.returncode == 0, result.stderr
    answers.seen.append(result.stdout + result.stderr)
    told = json.loads(result.stdout)
    assert told["signed_in"] is True and told["stored_in"] == "file"
    assert "open this page in a browser" in result.stderr


def test_a_revoked_grant_removes_the_credential(
    daemon: Daemon, provider: OAuthProvider, client: httpx.Client, tmp_path: Path
) -> None:
    provider.revoke()
    response = mine(client, place(tmp_path / "notes"), "oauth-revoked")
    failed = wait_job(client, response.json()["id"], "failed")
    assert failed["error_code"] == "memcastle::credential::required", failed
    assert "sign in again" in failed["error"]
    assert not credential_file(daemon).exists()
    assert client.get("/api/source-packages/probe").json()["auth"]["signed_in"] is False
    refused = mine(client, place(tmp_path / "notes"), "oauth-revoked")
    assert_error(refused, 409, "memcastle::credential::required")
    miner = client.get("/api/miners/oauth").json()
    assert miner["credential"] == {"kind": "oauth", "available": False}
    run = client.post("/api/miners/oauth/run")
    assert_error(run, 409, "memcastle::credential::required")


def test_an_unreachable_provider_keeps_the_credential(
    daemon: Daemon, provider: OAuthProvider, client: httpx.Client, tmp_path: Path
) -> None:
    with httpx.Client(timeout=10) as browser:
        started = client.post(AUTH).json()
        assert browser.get(started["url"], follow_redirects=True).status_code == 200
    assert outcome(client, started["flow"]).json()["signed_in"] is True
    kept = credential_file(daemon).read_text()
    provider.stop()
    response = mine(client, place(tmp_path / "notes"), "oauth-unreachable")
    failed = wait_job(client, response.json()["id"], "failed")
    assert failed["error_code"] == "memcastle::credential::refresh_failed", failed
    assert "cannot be reached" in failed["error"]
    assert credential_file(daemon).read_text() == kept
    assert client.get("/api/source-packages/probe").json()["auth"]["signed_in"] is True


def test_removing_the_source_deletes_its_credential(daemon: Daemon, client: httpx.Client) -> None:
    assert client.delete("/api/source-packages/probe").status_code == 200
    assert not credential_file(daemon).exists()


def test_no_token_is_in_any_answer_log_or_file(
    daemon: Daemon, provider: OAuthProvider, answers: Answers
) -> None:
    tokens = [*provider.issued, *provider.access_tokens]
    assert len(provider.access_tokens) >= 4
    seen = "\n".join(answers.seen)
    assert not [token for token in tokens if token in seen]
    assert not [token for token in tokens if token in daemon.log()]
    store = daemon.state / "memcastle" / "credentials"
    for path in daemon.root.rglob("*"):
        if path.is_file() and store not in path.parents:
            data = path.read_bytes()
            assert not [token for token in tokens if token.encode() in data], path
