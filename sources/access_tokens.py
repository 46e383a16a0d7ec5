"""Access tokens for signed-in sources, renewed from the stored refresh token (sources.md 7).

An access token lives in this process's memory only. It is renewed when fewer than 60 s remain,
under one lock per source so concurrent callers wait for a single renewal instead of spending
the refresh token twice (a provider that rotates refresh tokens would revoke the grant on the
second use). A rotated refresh token is written back before the new access token is handed out.
A provider that answers `invalid_grant` has revoked the grant: the credential is removed and the
caller is told to sign in again. A provider that cannot be reached keeps the credential, since
the grant may be perfectly good.
"""

from __future__ import annotations

import dataclasses
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from sources.credentials import (
    Credential,
    CredentialRequired,
    CredentialStore,
    RefreshFailed,
    fingerprint,
)
from sources.manifest import OAuth

RENEW_BEFORE_SECONDS = 60.0


@dataclass(frozen=True)
class _Live:
    token: str
    expires_at: float | None


def post_token(client: httpx.Client, url: str, form: Mapping[str, str]) -> tuple[int, Any]:
    """POST `form` to a token endpoint: its status and JSON body ({} when it is not JSON)."""
    answer = client.post(url, data=dict(form), headers={"Accept": "application/json"})
    try:
        body = answer.json()
    except ValueError:
        body = {}
    return answer.status_code, body if isinstance(body, dict) else {}


class AccessTokens:
    """Hands out a current access token per source, renewing it at most once at a time."""

    def __init__(
        self,
        store: CredentialStore,
        client: httpx.Client,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.client = client
        self.clock = clock
        # By (source, fingerprint): a changed manifest never gets the old sign-in's token.
        self._live: dict[tuple[str, str], _Live] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def _lock(self, source: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(source, threading.Lock())

    def _fresh(self, live: _Live) -> bool:
        return live.expires_at is None or live.expires_at - self.clock() >= RENEW_BEFORE_SECONDS

    def status(self, source: str, oauth: OAuth) -> Credential | None:
        """The stored credential for these terms, or None when the source is signed out."""
        return self.store.load(source, oauth)

    def record(self, source: str, oauth: OAuth, granted: Mapping[str, Any]) -> Credential:
        """Keep what a finished sign-in granted: the refresh token stored, the access token
        in memory (stored only when no refresh token came with it)."""
        expires_at = self._expiry(granted)
        refresh = granted.get("refresh_token")
        scope = granted.get("scope")
        credential = Credential(
            fingerprint=fingerprint(oauth),
            scopes=_scopes(scope) if isinstance(scope, str) else oauth.scopes,
            expires_at=expires_at,
            refresh_token=str(refresh) if refresh else None,
            access_token=None if refresh else str(granted["access_token"]),
        )
        with self._lock(source):
            self.store.save(source, credential)
            self._live[(source, credential.fingerprint)] = _Live(
                str(granted["access_token"]), expires_at
            )
        return credential

    def forget(self, source: str) -> None:
        """Sign the source out: its stored credential and tokens in memory go."""
        with self._lock(source):
            self.store.remove(source)
            self._drop(source)

    def _drop(self, source: str) -> None:
        for key in [key for key in self._live if key[0] == source]:
            del self._live[key]

    def require_signed_in(self, source: str, oauth: OAuth) -> None:
        """Raise `credential::required` unless a credential for these terms is stored."""
        if self.store.load(source, oauth) is None:
            raise CredentialRequired(f"the {source} source is not signed in")

    def access_token(self, source: str, oauth: OAuth) -> str:
        """A current access token of `source`, renewed first when under 60 s remain."""
        key = (source, fingerprint(oauth))
        with self._lock(source):
            live = self._live.get(key)
            if live is not None and self._fresh(live):
                return live.token
            credential = self.store.load(source, oauth)
            if credential is None:
                self._drop(source)
                raise CredentialRequired(f"the {source} source is not signed in")
            if credential.refresh_token is None:
                return self._unrenewable(source, credential)
            live = self._renew(source, oauth, credential)
            self._live[key] = live
            return live.token

    def _unrenewable(self, source: str, credential: Credential) -> str:
        """The stored access token of a provider that issues no refresh token, while fresh."""
        token = credential.access_token
        if token and self._fresh(_Live(token, credential.expires_at)):
            return token
        self.store.remove(source)
        self._drop(source)
        raise CredentialRequired(f"the sign-in of the {source} source has expired")

    def _renew(self, source: str, oauth: OAuth, credential: Credential) -> _Live:
        form = {
            "grant_type": "refresh_token",
            "refresh_token": str(credential.refresh_token),
            "client_id": oauth.client_id,
        }
        try:
            status, body = post_token(self.client, oauth.token_url, form)
        except httpx.HTTPError as error:
            raise RefreshFailed(
                f"renewing the sign-in of the {source} source failed: the provider at "
                f"{oauth.token_url} cannot be reached ({type(error).__name__})"
            ) from None
        if body.get("error") == "invalid_grant":
            self.store.remove(source)
            self._drop(source)
            raise CredentialRequired(
                f"the provider revoked the sign-in of the {source} source: sign in again"
            )
        if status != 200 or not isinstance(body.get("access_token"), str):
            raise RefreshFailed(
                f"renewing the sign-in of the {source} source failed: the provider answered "
                f"{status}"
            )
        expires_at = self._expiry(body)
        self.store.save(
            source,
            dataclasses.replace(
                credential,
                refresh_token=str(body.get("refresh_token") or credential.refresh_token),
                expires_at=expires_at,
            ),
        )
        return _Live(body["access_token"], expires_at)

    def _expiry(self, granted: Mapping[str, Any]) -> float | None:
        expires_in = granted.get("expires_in")
        try:
            return None if expires_in is None else self.clock() + float(expires_in)
        except (TypeError, ValueError):
            return None


def _scopes(granted: str) -> tuple[str, ...]:
    """The scopes a token answer grants: space-separated (RFC 6749), or comma-separated as
    GitHub sends them."""
    return tuple(scope for scope in re.split(r"[\s,]+", granted) if scope)
