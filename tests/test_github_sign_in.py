"""The bundled `github` source through a real daemon: signed in with the device flow at a local
OAuth provider, then mined from a local stand-in of GitHub's REST API that honours only the
tokens that provider handed out (`tests.support.oauth_provider`, `tests.support.github_server`).

`[mining.oauth.github]` points the source's sign-in at the provider, as a daemon owner points it
at their own OAuth app or a GitHub Enterprise server. The module is one story, in order.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.daemon import Daemon
from tests.support.github_server import State, serving
from tests.support.http import assert_error, room_drawers, wait_job
from tests.support.oauth_provider import OAuthProvider
from tests.support.waits import wait_for

REPO = "octo/tides"
ROOM = "octo.tides"
AUTH = "/api/source-packages/github/auth"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def provider() -> Iterator[OAuthProvider]:
    running = OAuthProvider(expires_in=3600, interval=0.05).start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def github(provider: OAuthProvider) -> Iterator[State]:
    with serving() as state:
        state.tokens = lambda: provider.access_tokens
        yield state


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, provider: OAuthProvider) -> Iterator[Daemon]:
    root = tmp_path_factory.mktemp("github")
    config = root / "memcastle.toml"
    config.write_text(
        "[mining.oauth.github]\n"
        'client_id = "memcastle-tests"\n'
        f'token_url = "{provider.token_url}"\n'
        f'device_authorization_url = "{provider.device_url}"\n'
    )
    env = {
        "MEMCASTLE_CONFIG": str(config),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
    }
    running = Daemon(root, env=env).start()
    yield running
    running.stop()


@pytest.fixture
def client(daemon: Daemon) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=daemon.base_url, timeout=60) as client:
        yield client


def mine(client: httpx.Client, github: State) -> httpx.Response:
    options = {"repos": REPO, "api_url": github.base}
    return client.post("/api/jobs", json={"type": "mine", "source": "github", "options": options})


def github_source(client: httpx.Client) -> dict[str, Any]:
    sources = client.get("/api/sources").json()["adapters"]
    found: dict[str, Any] = next(source for source in sources if source["name"] == "github")
    return found


def test_the_source_signs_in_where_the_configuration_says(
    client: httpx.Client, provider: OAuthProvider
) -> None:
    assert client.post("/api/source-packages/github/enable").status_code == 200
    auth = github_source(client)["auth"]
    assert auth == {
        "signed_in": False,
        "scopes": ["repo"],
        "provider": "127.0.0.1",
        "flows": ["device"],
    }


def test_a_mine_before_signing_in_is_refused(client: httpx.Client, github: State) -> None:
    assert_error(mine(client, github), 409, "memcastle::credential::required")
    assert github.seen == []


def test_the_device_flow_signs_it_in(client: httpx.Client, provider: OAuthProvider) -> None:
    started = client.post(AUTH)
    assert started.status_code == 200, started.text
    assert started.headers["Cache-Control"] == "no-store"
    instructions = started.json()
    assert instructions["kind"] == "device"
    provider.approve(instructions["user_code"])

    def told() -> httpx.Response | None:
        answer = client.post(f"{AUTH}/{instructions['flow']}/wait", params={"timeout": "2"})
        return None if answer.json().get("status") == "pending" else answer

    outcome = wait_for(told, timeout=60, what="the sign-in to end")
    assert outcome.status_code == 200, outcome.text
    assert outcome.json()["signed_in"] is True
    assert github_source(client)["auth"]["signed_in"] is True


def test_issues_and_pull_requests_are_mined_with_the_token_it_got(
    client: httpx.Client, github: State, provider: OAuthProvider
) -> None:
    github.add(REPO, 1, "2026-11-01T09:00:00Z", title="The tide table is a day late")
    github.add(
        REPO,
        2,
        "2026-11-02T09:00:00Z",
        title="Read tides from the harbour feed",
        pull=True,
        comments=("The feed answers in UTC, so convert before filing.",),
    )
    job = mine(client, github)
    assert job.status_code == 201, job.text
    wait_job(client, job.json()["id"])

    drawers = room_drawers(client, "github", ROOM)
    assert sorted(drawer["name"] for drawer in drawers) == ["issue-1", "pull-2"]
    sent = {seen.authorization for seen in github.seen}
    assert sent == {f"Bearer {token}" for token in provider.access_tokens}
    found = client.get("/api/search", params={"q": "harbour feed UTC", "wing": "github"}).json()
    assert found["results"][0]["id"] == next(d["id"] for d in drawers if d["name"] == "pull-2")


def test_a_revoked_token_fails_the_run_saying_to_sign_in_again(
    client: httpx.Client, github: State
) -> None:
    github.revoked = True
    github.add(REPO, 3, "2026-11-03T09:00:00Z", title="Neap tides missing")
    job = mine(client, github)
    assert job.status_code == 201, job.text
    failed = wait_job(client, job.json()["id"], "failed")
    assert "memcastle source auth github" in failed["error"]
    assert len(room_drawers(client, "github", ROOM)) == 2


def test_a_waiting_sign_in_holds_no_other_request(client: httpx.Client) -> None:
    """Views share one thread; a long poll that held it would stall the daemon while it waits:
    health checks sent one after another all through a 6 s wait never stop answering."""
    flow = client.post(AUTH).json()["flow"]
    answered = [time.monotonic()]
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(client.post, f"{AUTH}/{flow}/wait", params={"timeout": "6"})
        while not waiting.done():
            assert client.get("/api/health").status_code == 200
            answered.append(time.monotonic())
        assert waiting.result().json()["status"] == "pending"
    gaps = [later - earlier for earlier, later in itertools.pairwise(answered)]
    assert max(gaps) < 3, f"a health check waited {max(gaps):.1f} s behind the long poll"


def test_no_token_is_in_the_daemon_log(daemon: Daemon, provider: OAuthProvider) -> None:
    log = Path(daemon.log_path).read_text()
    assert provider.issued, "the provider handed out tokens"
    assert not [token for token in provider.issued if token in log]
