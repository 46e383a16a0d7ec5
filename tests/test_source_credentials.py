"""The file credential store: owner-only modes, atomic writes, and the fingerprint that signs a
credential out when the manifest's client, endpoints or scopes change."""

from __future__ import annotations

import dataclasses
import stat
from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.errors
import pytest
from keyring.backend import KeyringBackend
from keyring.backends import fail

from sources.credentials import (
    Credential,
    FileCredentialStore,
    SystemCredentialStore,
    fingerprint,
)
from sources.manifest import OAuth

_OAUTH = OAuth(client_id="probe", token_url="https://auth.example/token", scopes=("read",))


def _credential() -> Credential:
    return Credential(fingerprint(_OAUTH), ("read",), 1_000.0, refresh_token="r-1")


def test_file_store_is_owner_only_and_leaves_no_temporary(tmp_path: Path) -> None:
    directory = tmp_path / "credentials"
    store = FileCredentialStore(directory)
    store.save("probe", _credential())
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE((directory / "probe.json").stat().st_mode) == 0o600
    assert [path.name for path in directory.iterdir()] == ["probe.json"]
    assert store.load("probe", _OAUTH) == _credential()


def test_a_changed_manifest_reads_as_signed_out(tmp_path: Path) -> None:
    store = FileCredentialStore(tmp_path)
    store.save("probe", _credential())
    wider = dataclasses.replace(_OAUTH, scopes=("read", "write"))
    moved = dataclasses.replace(_OAUTH, token_url="https://other.example/token")
    assert store.load("probe", wider) is None
    assert store.load("probe", moved) is None


def test_rotation_replaces_and_remove_signs_out(tmp_path: Path) -> None:
    store = FileCredentialStore(tmp_path)
    store.save("probe", _credential())
    store.save("probe", dataclasses.replace(_credential(), refresh_token="r-2"))
    loaded = store.load("probe", _OAUTH)
    assert loaded is not None and loaded.refresh_token == "r-2"
    store.remove("probe")
    assert store.load("probe", _OAUTH) is None
    store.remove("probe")


class _MemoryKeyring(KeyringBackend):
    """A keyring in memory, standing for the system's."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.entries.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.entries[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if self.entries.pop((service, username), None) is None:
            raise keyring.errors.PasswordDeleteError(username)


@pytest.fixture
def system_keyring() -> Iterator[_MemoryKeyring]:
    previous = keyring.get_keyring()
    backend = _MemoryKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)


def test_a_usable_keyring_is_preferred_and_leaves_no_probe(
    system_keyring: _MemoryKeyring, tmp_path: Path
) -> None:
    store = SystemCredentialStore(tmp_path / "credentials")
    assert store.stored_in == "keyring"
    assert system_keyring.entries == {}
    store.save("probe", _credential())
    assert store.load("probe", _OAUTH) == _credential()
    assert not (tmp_path / "credentials").exists()
    store.remove("probe")
    assert store.load("probe", _OAUTH) is None and system_keyring.entries == {}
    store.remove("probe")


def test_without_a_keyring_credentials_go_to_a_file(tmp_path: Path) -> None:
    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        store = SystemCredentialStore(tmp_path / "credentials")
        assert store.stored_in == "file"
    finally:
        keyring.set_keyring(previous)
