"""A local OAuth provider on 127.0.0.1, in a thread of the test process.

It has what a source's sign-in talks to: a device authorization endpoint (RFC 8628) whose codes
a test approves or denies, an authorization endpoint that redirects at once to the client's
`redirect_uri` with a code and the `state` it was given (the user agreeing in a browser), and a
token endpoint for the device code, the authorization code (checking the PKCE verifier against
the challenge, RFC 7636) and refresh tokens, which it rotates. A grant can be revoked, so the
next renewal answers `invalid_grant`. Tokens are random, so a test can look for them anywhere.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from tests.support.components import manifest


@dataclass
class _Device:
    user_code: str
    scope: str
    approved: bool | None = None


class OAuthProvider:
    def __init__(self, expires_in: int = 3600, interval: float = 0.1) -> None:
        self.expires_in = expires_in
        self.interval = interval
        self.refresh_tokens: set[str] = set()
        # Every token handed out, in order: what a test looks for where none may be.
        self.issued: list[str] = []
        self.access_tokens: list[str] = []
        self.renewals = 0
        self.authorize_requests: list[dict[str, str]] = []
        self.slow_down_once = False
        self._devices: dict[str, _Device] = {}
        self._codes: dict[str, dict[str, str]] = {}
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def token_url(self) -> str:
        return f"{self.base_url}/token"

    @property
    def device_url(self) -> str:
        return f"{self.base_url}/device"

    @property
    def authorize_url(self) -> str:
        return f"{self.base_url}/authorize"

    def start(self) -> OAuthProvider:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop answering: the port is closed, so the provider is unreachable. Stopping twice
        is allowed, so a test that stopped it early shares the fixture's teardown."""
        if not self._thread.is_alive():
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    # What the user does.

    def approve(self, user_code: str, *, agree: bool = True) -> None:
        with self._lock:
            for device in self._devices.values():
                if device.user_code == user_code:
                    device.approved = agree
                    return
        raise AssertionError(f"no device code has the user code {user_code}")

    def grant(self) -> str:
        """A refresh token the provider will honour, as a finished sign-in would leave."""
        with self._lock:
            return self._refresh_token()

    def revoke(self) -> None:
        with self._lock:
            self.refresh_tokens.clear()

    # Answers.

    def _refresh_token(self) -> str:
        token = f"ref-{secrets.token_hex(12)}"
        self.issued.append(token)
        self.refresh_tokens.add(token)
        return token

    def _tokens(self, scope: str) -> tuple[int, dict[str, Any]]:
        access = f"acc-{secrets.token_hex(12)}"
        self.access_tokens.append(access)
        return 200, {
            "access_token": access,
            "refresh_token": self._refresh_token(),
            "expires_in": self.expires_in,
            "token_type": "bearer",
            "scope": scope,
        }

    def device(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            code = f"dev-{secrets.token_hex(8)}"
            user_code = f"{secrets.randbelow(10**4):04d}-{len(self._devices):04d}"
            self._devices[code] = _Device(user_code, form.get("scope", ""))
            return 200, {
                "device_code": code,
                "user_code": user_code,
                "verification_uri": f"{self.base_url}/activate",
                "verification_uri_complete": f"{self.base_url}/activate?user_code={user_code}",
                "expires_in": 300,
                "interval": self.interval,
            }

    def authorize(self, query: dict[str, str]) -> str:
        """Where the browser is sent: the redirect URI with a code and the state."""
        with self._lock:
            self.authorize_requests.append(query)
            code = f"code-{secrets.token_hex(8)}"
            self._codes[code] = query
        answer = urlencode({"code": code, "state": query.get("state", "")})
        return f"{query['redirect_uri']}?{answer}"

    def token(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            grant = form.get("grant_type")
            if grant == "refresh_token":
                return self._renew(form)
            if grant == "urn:ietf:params:oauth:grant-type:device_code":
                return self._device_token(form)
            if grant == "authorization_code":
                return self._code_token(form)
            return 400, {"error": "unsupported_grant_type"}

    def _renew(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        if form.get("refresh_token") not in self.refresh_tokens:
            return 400, {"error": "invalid_grant"}
        self.refresh_tokens.discard(form["refresh_token"])
        self.renewals += 1
        return self._tokens("read")

    def _device_token(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        device = self._devices.get(form.get("device_code", ""))
        if device is None:
            return 400, {"error": "invalid_grant"}
        if self.slow_down_once:
            self.slow_down_once = False
            return 400, {"error": "slow_down"}
        if device.approved is None:
            return 400, {"error": "authorization_pending"}
        del self._devices[form["device_code"]]
        if not device.approved:
            return 400, {"error": "access_denied"}
        return self._tokens(device.scope)

    def _code_token(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        asked = self._codes.pop(form.get("code", ""), None)
        if asked is None or asked.get("redirect_uri") != form.get("redirect_uri"):
            return 400, {"error": "invalid_grant"}
        digest = hashlib.sha256(form.get("code_verifier", "").encode()).digest()
        challenge = base64.urlsafe_b64encode(digest).decode().rstrip("=")
        if asked.get("code_challenge_method") != "S256" or asked.get("code_challenge") != challenge:
            return 400, {"error": "invalid_grant", "error_description": "PKCE verification"}
        return self._tokens(asked.get("scope", ""))


def _handler(provider: OAuthProvider) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if parts.path != "/authorize":
                self._json(404, {"error": "not_found"})
                return
            query = {key: values[0] for key, values in parse_qs(parts.query).items()}
            self.send_response(302)
            self.send_header("Location", provider.authorize(query))
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            path = urlsplit(self.path).path
            answer = {"/token": provider.token, "/device": provider.device}.get(path)
            self._json(*(answer(form) if answer else (404, {"error": "not_found"})))

        def _json(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return _Handler


def oauth_manifest(provider: OAuthProvider, *, flow: str) -> str:
    """The probe fixture's manifest declaring a sign-in with `provider`: its device flow
    (`flow="device"`) or its browser flow."""
    endpoint = (
        f'device_authorization_url = "{provider.device_url}"'
        if flow == "device"
        else f'authorize_url = "{provider.authorize_url}"'
    )
    return (
        manifest("probe", incremental="true\nneeds_credentials = true")
        + f'\n[permissions.oauth]\nclient_id = "probe"\ntoken_url = "{provider.token_url}"\n'
        + f'{endpoint}\nscopes = ["read"]\ncallback_path = "/signed-in"\n'
    )
