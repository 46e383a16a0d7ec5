"""The two ways a source signs in (sources.md 7): the device flow (RFC 8628) and authorization
code with PKCE (RFC 7636) through a one-shot listener on the loopback address.

A flow is started on the request that asks for it, so the answer can say what the user must do,
and finished on a thread of its own (`finish` blocks until the provider grants, refuses or the
time runs out). Neither ever puts a token in a log line or an error message.

The loopback listener answers only on `127.0.0.1`, at the manifest's callback path, and takes
exactly one request carrying the `state` it handed out: a request with another state is refused
with 400 and the listener keeps waiting (someone else's page must not be able to end the
sign-in), and after the one it takes it closes, so any later request finds no one listening.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

from sources.access_tokens import post_token
from sources.credentials import FlowFailed
from sources.manifest import OAuth

# The longest a flow waits for the user (a device code's own lifetime, when shorter).
MAX_WAIT_SECONDS = 600.0
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
# RFC 8628 3.5: the default polling interval, and what `slow_down` adds to it.
DEFAULT_INTERVAL = 5.0
SLOW_DOWN_SECONDS = 5.0
# How often the loopback listener looks whether the flow was cancelled or timed out.
LISTEN_TICK = 0.25


@dataclass(frozen=True)
class Started:
    """What the user must do: type `user_code` at `verification_uri` (device), or open `url`."""

    kind: str
    url: str
    expires_at: float
    user_code: str | None = None
    verification_uri: str | None = None


class DeviceFlow:
    """RFC 8628: ask for a device code, then poll the token endpoint until the user agrees."""

    def __init__(
        self, oauth: OAuth, client: httpx.Client, clock: Callable[[], float] = time.time
    ) -> None:
        self._oauth = oauth
        self._client = client
        self._clock = clock
        self._cancelled = threading.Event()
        form = {"client_id": oauth.client_id, "scope": " ".join(oauth.scopes)}
        body = _answer(client, str(oauth.device_authorization_url), form, "device authorization")
        try:
            self._device_code = str(body["device_code"])
            user_code, uri = str(body["user_code"]), str(body["verification_uri"])
            lifetime = min(float(body.get("expires_in", MAX_WAIT_SECONDS)), MAX_WAIT_SECONDS)
            self.interval = float(body.get("interval", DEFAULT_INTERVAL))
        except (KeyError, TypeError, ValueError):
            raise FlowFailed(
                "the provider's device authorization answer lacks device_code, user_code or "
                "verification_uri"
            ) from None
        complete = body.get("verification_uri_complete")
        self.started = Started(
            kind="device",
            url=str(complete) if isinstance(complete, str) else uri,
            expires_at=clock() + lifetime,
            user_code=user_code,
            verification_uri=uri,
        )

    def cancel(self) -> None:
        self._cancelled.set()

    def finish(self) -> dict[str, Any]:
        """Poll until the provider grants a token (its answer), or raise `FlowFailed`."""
        form = {
            "grant_type": DEVICE_GRANT,
            "device_code": self._device_code,
            "client_id": self._oauth.client_id,
        }
        while self._clock() < self.started.expires_at:
            if self._cancelled.wait(self.interval):
                raise FlowFailed("the sign-in was replaced by another")
            status, body = _post(self._client, self._oauth.token_url, form)
            error = body.get("error")
            if error == "authorization_pending":
                continue
            if error == "slow_down":
                self.interval += SLOW_DOWN_SECONDS
                continue
            if isinstance(body.get("access_token"), str):
                return body
            if error == "access_denied":
                raise FlowFailed("the sign-in was declined")
            if error == "expired_token":
                raise FlowFailed("the device code expired before the sign-in was finished")
            raise FlowFailed(f"the provider refused the sign-in ({error or status})")
        raise FlowFailed("the device code expired before the sign-in was finished")


class BrowserFlow:
    """RFC 7636 authorization code with PKCE (S256), the code coming back to a one-shot listener
    on 127.0.0.1 at the manifest's callback path."""

    def __init__(
        self, oauth: OAuth, client: httpx.Client, clock: Callable[[], float] = time.time
    ) -> None:
        self._oauth = oauth
        self._client = client
        self._clock = clock
        self._cancelled = threading.Event()
        self._verifier = secrets.token_urlsafe(64)
        self.state = secrets.token_urlsafe(32)
        self.outcome: dict[str, str] | None = None
        self._server = HTTPServer(("127.0.0.1", 0), _callback_handler(self))
        self._server.timeout = LISTEN_TICK
        self.redirect_uri = f"http://127.0.0.1:{self._server.server_port}{oauth.callback_path}"
        challenge = base64.urlsafe_b64encode(hashlib.sha256(self._verifier.encode()).digest())
        query = {
            "response_type": "code",
            "client_id": oauth.client_id,
            "redirect_uri": self.redirect_uri,
            "scope": " ".join(oauth.scopes),
            "state": self.state,
            "code_challenge": challenge.decode().rstrip("="),
            "code_challenge_method": "S256",
        }
        base = str(oauth.authorize_url)
        self.started = Started(
            kind="browser",
            url=f"{base}{'&' if urlsplit(base).query else '?'}{urlencode(query)}",
            expires_at=clock() + MAX_WAIT_SECONDS,
        )

    @property
    def callback_path(self) -> str:
        return self._oauth.callback_path

    def cancel(self) -> None:
        self._cancelled.set()

    def finish(self) -> dict[str, Any]:
        """Wait for the one redirect, then trade its code for a token (the provider's answer)."""
        try:
            while self.outcome is None:
                if self._cancelled.is_set():
                    raise FlowFailed("the sign-in was replaced by another")
                if self._clock() >= self.started.expires_at:
                    raise FlowFailed("the sign-in expired: no browser came back in time")
                self._server.handle_request()
        finally:
            self._server.server_close()
        if "code" not in self.outcome:
            raise FlowFailed(f"the sign-in was refused ({self.outcome.get('error', 'no code')})")
        form = {
            "grant_type": "authorization_code",
            "code": self.outcome["code"],
            "redirect_uri": self.redirect_uri,
            "client_id": self._oauth.client_id,
            "code_verifier": self._verifier,
        }
        status, body = _post(self._client, self._oauth.token_url, form)
        if isinstance(body.get("access_token"), str):
            return body
        raise FlowFailed(f"the provider refused the code ({body.get('error') or status})")


def _callback_handler(flow: BrowserFlow) -> type[BaseHTTPRequestHandler]:
    class _Callback(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = {key: values[0] for key, values in parse_qs(parts.query).items()}
            if parts.path != flow.callback_path:
                self._page(404, "This is not the sign-in's address.")
            elif flow.outcome is not None or query.get("state") != flow.state:
                self._page(400, "This sign-in answer is not the one MemCastle is waiting for.")
            else:
                flow.outcome = {key: query[key] for key in ("code", "error") if key in query}
                self._page(200, "MemCastle got the answer: you can close this page.")

        def _page(self, status: int, text: str) -> None:
            data = f"<!doctype html><title>MemCastle</title><p>{text}</p>\n".encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            """Not logged: the request line carries the authorization code."""

    return _Callback


def _post(client: httpx.Client, url: str, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
    try:
        return post_token(client, url, form)
    except httpx.HTTPError as error:
        raise FlowFailed(
            f"the provider at {url} cannot be reached ({type(error).__name__})"
        ) from None


def _answer(client: httpx.Client, url: str, form: dict[str, str], what: str) -> dict[str, Any]:
    status, body = _post(client, url, form)
    # Some providers (GitHub) answer a refusal with 200 and an `error`.
    if status != 200 or "error" in body:
        raise FlowFailed(
            f"the provider refused the {what} ({body.get('error') or status})",
            help=(
                "check the client id the source signs in with: its manifest's, or the one "
                "[mining.oauth.<source>] client_id configures; then start the sign-in again"
            ),
        )
    return body
