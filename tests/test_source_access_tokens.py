"""Access-token renewal against a local provider: renewal under 60 s, one renewal at a time,
rotation written back, revocation removing the credential, an unreachable provider keeping it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from kernel.errors import MemCastleError
from sources.access_tokens import AccessTokens
from sources.credentials import Credential, FileCredentialStore, fingerprint
from sources.manifest import OAuth
from tests.support.oauth_provider import OAuthProvider


class _Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def provider() -> Iterator[OAuthProvider]:
    provider = OAuthProvider(expires_in=120).start()
    try:
        yield provider
    finally:
        provider.stop()


def _setup(
    provider: OAuthProvider, tmp_path: Path
) -> tuple[AccessTokens, FileCredentialStore, OAuth, _Clock]:
    oauth = OAuth(client_id="probe", token_url=provider.token_url, scopes=("read",))
    store = FileCredentialStore(tmp_path / "credentials")
    store.save(
        "probe",
        Credential(fingerprint(oauth), ("read",), None, refresh_token=provider.grant()),
    )
    clock = _Clock()
    return AccessTokens(store, httpx.Client(timeout=5), clock), store, oauth, clock


def test_renewal_rotation_and_one_renewal_at_a_time(
    provider: OAuthProvider, tmp_path: Path
) -> None:
    tokens, store, oauth, clock = _setup(provider, tmp_path)
    answers: list[str] = []
    threads = [
        threading.Thread(target=lambda: answers.append(tokens.access_token("probe", oauth)))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == [provider.access_tokens[0]] * 4 and provider.renewals == 1
    stored = store.load("probe", oauth)
    assert stored is not None and stored.refresh_token == provider.issued[-1]
    assert stored.access_token is None
    clock.now += 59.0  # 61 s left: still fresh
    assert tokens.access_token("probe", oauth) == provider.access_tokens[0]
    clock.now += 2.0  # 59 s left: renewed with the rotated refresh token
    assert tokens.access_token("probe", oauth) == provider.access_tokens[1]
    assert provider.renewals == 2
    stored = store.load("probe", oauth)
    assert stored is not None and stored.refresh_token == provider.issued[-1]
    files = list((tmp_path / "credentials").iterdir())
    assert [path.name for path in files] == ["probe.json"]
    assert not any(token in files[0].read_text() for token in provider.access_tokens)


def test_revoked_grant_removes_the_credential(provider: OAuthProvider, tmp_path: Path) -> None:
    tokens, store, oauth, _ = _setup(provider, tmp_path)
    provider.revoke()
    with pytest.raises(MemCastleError) as refused:
        tokens.access_token("probe", oauth)
    assert refused.value.code == "memcastle::credential::required"
    assert store.load("probe", oauth) is None
    with pytest.raises(MemCastleError) as again:
        tokens.require_signed_in("probe", oauth)
    assert again.value.code == "memcastle::credential::required"


def test_unreachable_provider_keeps_the_credential(provider: OAuthProvider, tmp_path: Path) -> None:
    tokens, store, oauth, _ = _setup(provider, tmp_path)
    before = store.load("probe", oauth)
    provider.stop()
    with pytest.raises(MemCastleError) as refused:
        tokens.access_token("probe", oauth)
    assert refused.value.code == "memcastle::credential::refresh_failed"
    assert not any(token in refused.value.message for token in provider.issued)
    assert store.load("probe", oauth) == before


def test_a_sign_in_is_recorded_with_its_scopes_and_no_access_token_on_disk(
    provider: OAuthProvider, tmp_path: Path
) -> None:
    tokens, store, oauth, clock = _setup(provider, tmp_path)
    granted = {"access_token": "a-1", "refresh_token": "r-1", "scope": "repo,read:user"}
    credential = tokens.record("probe", oauth, {**granted, "expires_in": 600})
    assert credential.scopes == ("repo", "read:user") and credential.access_token is None
    assert store.load("probe", oauth) == credential
    assert tokens.access_token("probe", oauth) == "a-1" and provider.renewals == 0
    # A provider that issues no refresh token: the access token is kept until it expires.
    tokens.record("probe", oauth, {"access_token": "a-2", "expires_in": 600})
    tokens.forget("probe")
    assert store.load("probe", oauth) is None
    tokens.record("probe", oauth, {"access_token": "a-3", "expires_in": 600})
    stored = store.load("probe", oauth)
    assert stored is not None and stored.access_token == "a-3" and stored.refresh_token is None
    clock.now += 541.0
    with pytest.raises(MemCastleError) as expired:
        tokens.access_token("probe", oauth)
    assert expired.value.code == "memcastle::credential::required"
    assert store.load("probe", oauth) is None
