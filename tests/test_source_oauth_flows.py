"""The two sign-in flows against a local provider, in this process: the device flow to its end,
declined and slowed down; the browser flow with PKCE, whose one-shot loopback listener refuses a
wrong `state` and keeps waiting, and after the one answer it takes is gone."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from kernel.errors import MemCastleError
from sources.manifest import OAuth
from sources.oauth_flows import BrowserFlow, DeviceFlow
from tests.support.oauth_provider import OAuthProvider


@pytest.fixture
def provider() -> Iterator[OAuthProvider]:
    provider = OAuthProvider(interval=0.05).start()
    try:
        yield provider
    finally:
        provider.stop()


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5) as client:
        yield client


def _device(provider: OAuthProvider) -> OAuth:
    return OAuth(
        client_id="probe",
        token_url=provider.token_url,
        device_authorization_url=provider.device_url,
        scopes=("read", "write"),
    )


def _browser(provider: OAuthProvider) -> OAuth:
    return OAuth(
        client_id="probe",
        token_url=provider.token_url,
        authorize_url=provider.authorize_url,
        scopes=("read",),
        callback_path="/done",
    )


class _Finishing:
    """`finish` of a flow on a thread, as the daemon runs it."""

    def __init__(self, flow: DeviceFlow | BrowserFlow) -> None:
        self.outcome: dict[str, Any] | None = None
        self.error: MemCastleError | None = None
        self._thread = threading.Thread(target=self._run, args=(flow,))
        self._thread.start()

    def _run(self, flow: DeviceFlow | BrowserFlow) -> None:
        try:
            self.outcome = flow.finish()
        except MemCastleError as error:
            self.error = error

    def join(self) -> _Finishing:
        self._thread.join(timeout=30)
        assert not self._thread.is_alive()
        return self


def test_the_device_flow_polls_until_the_user_agrees(
    provider: OAuthProvider, client: httpx.Client
) -> None:
    flow = DeviceFlow(_device(provider), client)
    started = flow.started
    assert started.kind == "device" and started.user_code
    assert started.verification_uri == f"{provider.base_url}/activate"
    assert started.url.endswith(f"user_code={started.user_code}")
    finishing = _Finishing(flow)
    provider.approve(started.user_code)
    finishing.join()
    assert finishing.outcome is not None
    assert finishing.outcome["access_token"] == provider.access_tokens[-1]
    assert finishing.outcome["scope"] == "read write"


def test_a_declined_device_sign_in_fails(provider: OAuthProvider, client: httpx.Client) -> None:
    flow = DeviceFlow(_device(provider), client)
    finishing = _Finishing(flow)
    assert flow.started.user_code is not None
    provider.approve(flow.started.user_code, agree=False)
    assert finishing.join().error is not None
    assert finishing.error.code == "memcastle::credential::flow_failed"
    assert "declined" in finishing.error.message


@pytest.mark.slow
def test_slow_down_adds_five_seconds_to_the_interval(
    provider: OAuthProvider, client: httpx.Client
) -> None:
    provider.slow_down_once = True
    flow = DeviceFlow(_device(provider), client)
    assert flow.started.user_code is not None
    provider.approve(flow.started.user_code)
    finishing = _Finishing(flow)
    finishing.join()
    assert finishing.outcome is not None
    assert flow.interval == pytest.approx(5.05)


def test_the_browser_flow_takes_one_answer_with_its_state(
    provider: OAuthProvider, client: httpx.Client
) -> None:
    flow = BrowserFlow(_browser(provider), client)
    started = flow.started
    assert started.kind == "browser" and started.user_code is None
    query = {key: values[0] for key, values in parse_qs(urlsplit(started.url).query).items()}
    assert query["code_challenge_method"] == "S256" and query["state"] == flow.state
    assert query["redirect_uri"].startswith("http://127.0.0.1:")
    assert urlsplit(query["redirect_uri"]).path == "/done"
    finishing = _Finishing(flow)
    listener = query["redirect_uri"]
    # Another page cannot end the sign-in: a wrong state is refused, and the listener waits on.
    wrong = client.get(listener, params={"code": "forged", "state": "not-the-state"})
    assert wrong.status_code == 400
    elsewhere = client.get(listener.replace("/done", "/other"), params={"state": flow.state})
    assert elsewhere.status_code == 404
    # The user agrees: the provider redirects to the listener with the code and the state.
    landed = client.get(started.url, follow_redirects=True)
    assert landed.status_code == 200 and landed.headers["cache-control"] == "no-store"
    finishing.join()
    assert finishing.outcome is not None
    assert finishing.outcome["access_token"] == provider.access_tokens[-1]
    # The one shot is spent: nothing listens any more.
    with pytest.raises(httpx.ConnectError):
        client.get(listener, params={"code": "again", "state": flow.state})


def test_a_browser_sign_in_refused_at_the_provider_fails(
    provider: OAuthProvider, client: httpx.Client
) -> None:
    flow = BrowserFlow(_browser(provider), client)
    finishing = _Finishing(flow)
    redirect = flow.redirect_uri
    refused = client.get(redirect, params={"error": "access_denied", "state": flow.state})
    assert refused.status_code == 200
    assert finishing.join().error is not None
    assert finishing.error.code == "memcastle::credential::flow_failed"
    assert "access_denied" in finishing.error.message


def test_a_cancelled_flow_stops_waiting(provider: OAuthProvider, client: httpx.Client) -> None:
    for flow in (BrowserFlow(_browser(provider), client), DeviceFlow(_device(provider), client)):
        finishing = _Finishing(flow)
        flow.cancel()
        assert finishing.join().error is not None
        assert "replaced" in finishing.error.message
