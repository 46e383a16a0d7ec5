"""Where a source's OAuth credential is kept (sources.md 7, ADR-039): the system keyring when one
is usable, else a file.

A credential is the refresh token, its scopes and expiry, and a fingerprint of the client,
endpoints and scopes it was granted for: a manifest that changes any of them makes the stored
credential a stranger, so it reads as signed out rather than being sent to another provider.
Access tokens are not kept unless the provider issues no refresh token, since a token on disk
outlives the process that needed it.

The file backend lives under the daemon's state directory, in a directory only its owner may
enter (0700), one file per source readable by its owner only (0600), written to a temporary file
then renamed so a crash never leaves half a token.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import logging
import os
import secrets
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import keyring
import keyring.errors
from keyring.backend import KeyringBackend
from keyring.backends import fail, null

from kernel.errors import Conflict, MemCastleError
from sources.manifest import OAuth

logger = logging.getLogger(__name__)

# The keyring's service name: one entry per source, its user name the source's name.
KEYRING_SERVICE = "memcastle-source"


class CredentialRequired(Conflict):
    """A run of a source that is not signed in (409 when a miner is asked to run)."""

    code = "memcastle::credential::required"
    help = "sign the source in (`memcastle source auth SOURCE`), then run it again"


class RefreshFailed(MemCastleError):
    """The provider could not renew the access token just now; the credential is kept."""

    status = 502
    code = "memcastle::credential::refresh_failed"
    help = "the sign-in is kept: retry when the provider can be reached"


class OAuthUnsupported(MemCastleError):
    status = 400
    code = "memcastle::credential::oauth_unsupported"
    help = "only a source whose manifest declares [permissions.oauth] signs in"


class FlowFailed(MemCastleError):
    """A sign-in declined, expired or refused, or a wait for a flow no longer there."""

    status = 502
    code = "memcastle::credential::flow_failed"
    help = "start the sign-in again with `memcastle source auth SOURCE`"


def instant(seconds: float | None) -> dt.datetime | None:
    """An expiry in seconds since the epoch as the instant the API shows (None for none)."""
    return None if seconds is None else dt.datetime.fromtimestamp(seconds, dt.UTC)


def fingerprint(oauth: OAuth) -> str:
    """SHA-256 of the client id, endpoints and scopes: what a credential was granted for."""
    normal = oauth.normalized()
    shape = {
        key: normal[key] for key in sorted(normal) if key not in ("callback_path", "on_demand")
    }
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Credential:
    """What survives a restart; `access_token` only when the provider gave no refresh token.
    `expires_at` is the access token's expiry in seconds since the epoch, None for never."""

    fingerprint: str
    scopes: tuple[str, ...]
    expires_at: float | None
    refresh_token: str | None = None
    access_token: str | None = None

    def text(self) -> str:
        return json.dumps(asdict(self))


def _parsed(text: str, oauth: OAuth) -> Credential | None:
    """The credential in `text`, or None when it is unreadable or granted for other terms."""
    try:
        raw: Any = json.loads(text)
        credential = Credential(
            fingerprint=str(raw["fingerprint"]),
            scopes=tuple(str(scope) for scope in raw["scopes"]),
            expires_at=None if raw["expires_at"] is None else float(raw["expires_at"]),
            refresh_token=raw.get("refresh_token"),
            access_token=raw.get("access_token"),
        )
    except (ValueError, TypeError, KeyError):
        return None
    return credential if credential.fingerprint == fingerprint(oauth) else None


class CredentialStore(Protocol):
    """Saves, loads and removes the credential of one source at a time."""

    @property
    def stored_in(self) -> str: ...

    def save(self, source: str, credential: Credential) -> None: ...

    def load(self, source: str, oauth: OAuth) -> Credential | None: ...

    def remove(self, source: str) -> None: ...


class FileCredentialStore:
    """One 0600 file per source in a 0700 directory, replaced atomically on every write."""

    stored_in = "file"

    def __init__(self, directory: Path) -> None:
        self._directory = directory

    def _path(self, source: str) -> Path:
        return self._directory / f"{source}.json"

    def save(self, source: str, credential: Credential) -> None:
        self._directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self._directory, 0o700)
        target = self._path(source)
        temporary = self._directory / f".{source}.{secrets.token_hex(8)}.tmp"
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                handle.write(credential.text())
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, target)
        finally:
            temporary.unlink(missing_ok=True)

    def load(self, source: str, oauth: OAuth) -> Credential | None:
        """The stored credential, or None when there is none or it was granted for another
        client, endpoints or scopes than `oauth` declares (a mismatch means signed out)."""
        try:
            text = self._path(source).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        return _parsed(text, oauth)

    def remove(self, source: str) -> None:
        self._path(source).unlink(missing_ok=True)


class KeyringCredentialStore:
    """One keyring entry per source, holding the credential as JSON."""

    stored_in = "keyring"

    def __init__(self, backend: KeyringBackend) -> None:
        self._backend = backend

    def save(self, source: str, credential: Credential) -> None:
        self._backend.set_password(KEYRING_SERVICE, source, credential.text())

    def load(self, source: str, oauth: OAuth) -> Credential | None:
        text = self._backend.get_password(KEYRING_SERVICE, source)
        return None if text is None else _parsed(text, oauth)

    def remove(self, source: str) -> None:
        with contextlib.suppress(keyring.errors.PasswordDeleteError):
            self._backend.delete_password(KEYRING_SERVICE, source)


def usable_keyring() -> KeyringBackend | None:
    """The active keyring backend, when it is a real one and a write, read and delete of a
    probe entry work (a locked or absent Secret Service fails here, not at sign-in)."""
    backend = keyring.get_keyring()
    if isinstance(backend, (fail.Keyring, null.Keyring)):
        return None
    probe = secrets.token_hex(8)
    try:
        backend.set_password(KEYRING_SERVICE, ".probe", probe)
        works = backend.get_password(KEYRING_SERVICE, ".probe") == probe
        backend.delete_password(KEYRING_SERVICE, ".probe")
    except Exception as error:  # any failure of the backend means it is not usable
        logger.info("the system keyring is not usable (%s): credentials go to a file", error)
        return None
    return backend if works else None


class SystemCredentialStore:
    """The keyring when one is usable, else the file store in `directory`, chosen when a
    credential is first needed rather than at start: a daemon whose sources never sign in never
    touches the keyring, and a locked one asks for its password only when it is wanted."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._chosen: CredentialStore | None = None
        self._lock = threading.Lock()

    def _store(self) -> CredentialStore:
        with self._lock:
            if self._chosen is None:
                backend = usable_keyring()
                self._chosen = (
                    FileCredentialStore(self._directory)
                    if backend is None
                    else KeyringCredentialStore(backend)
                )
            return self._chosen

    @property
    def stored_in(self) -> str:
        return self._store().stored_in

    def save(self, source: str, credential: Credential) -> None:
        self._store().save(source, credential)

    def load(self, source: str, oauth: OAuth) -> Credential | None:
        return self._store().load(source, oauth)

    def remove(self, source: str) -> None:
        self._store().remove(source)
