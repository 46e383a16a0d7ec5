"""Signing a source in (ADR-039): start a flow, and tell a waiting client how it ended.

A flow runs on a thread of its own, so the request that starts it answers at once with what the
user must do, and a client long-polls for the outcome. Flows are held in memory by an id; a new
flow for a source replaces (and cancels) the one before. An outcome is told once: the flow is
forgotten then, and a later wait for it is `flow_failed`, as is a wait for a replaced flow.
Neither answer ever carries a token.
"""

from __future__ import annotations

import logging
import secrets
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kernel.errors import InputInvalid, MemCastleError
from sources.access_tokens import AccessTokens
from sources.credentials import Credential, FlowFailed, instant
from sources.manifest import OAuth
from sources.oauth_flows import BrowserFlow, DeviceFlow, Started

if TYPE_CHECKING:
    from sources.packages import SourcePackages

logger = logging.getLogger(__name__)

# How long one wait holds the request before answering `pending`.
WAIT_SECONDS = 25.0


class Flow(Protocol):
    started: Started

    def finish(self) -> dict[str, Any]: ...

    def cancel(self) -> None: ...


@dataclass
class _Running:
    id: str
    source: str
    flow: Flow
    done: threading.Event = field(default_factory=threading.Event)
    outcome: dict[str, Any] | None = None
    error: MemCastleError | None = None


def signed_in(source: str, credential: Credential, stored_in: str) -> dict[str, Any]:
    return {
        "source": source,
        "status": "signed_in",
        "signed_in": True,
        "expires_at": instant(credential.expires_at),
        "scopes": list(credential.scopes),
        "stored_in": stored_in,
    }


class SignIns:
    """The sign-in flows running in this daemon, one per source at most."""

    def __init__(self, packages: SourcePackages, tokens: AccessTokens) -> None:
        self._packages = packages
        self._tokens = tokens
        self._running: dict[str, _Running] = {}
        self._lock = threading.Lock()

    def start(self, name: str) -> dict[str, Any]:
        """Start signing `name` in: device flow when the provider has a device endpoint,
        else the browser flow. Answers what the user must do."""
        oauth = self._packages.oauth(name)
        flow: Flow
        if oauth.device_authorization_url is not None:
            flow = DeviceFlow(oauth, self._tokens.client, self._tokens.clock)
        else:
            flow = BrowserFlow(oauth, self._tokens.client, self._tokens.clock)
        running = _Running(secrets.token_urlsafe(16), name, flow)
        with self._lock:
            previous = self._running.get(name)
            self._running[name] = running
        if previous is not None:
            previous.flow.cancel()
        threading.Thread(
            target=self._run, args=(running, oauth), name=f"sign-in-{name}", daemon=True
        ).start()
        return self._instructions(running)

    @staticmethod
    def _instructions(running: _Running) -> dict[str, Any]:
        started = running.flow.started
        answer: dict[str, Any] = {
            "source": running.source,
            "flow": running.id,
            "kind": started.kind,
            "url": started.url,
            "expires_at": instant(started.expires_at),
        }
        if started.kind == "device":
            answer.update(user_code=started.user_code, verification_uri=started.verification_uri)
        return answer

    def _run(self, running: _Running, oauth: OAuth) -> None:
        try:
            granted = running.flow.finish()
            # Read again: a source removed, or updated to other terms, while the user was
            # agreeing must not be left with a credential for what it no longer is.
            if self._packages.oauth(running.source) != oauth:
                raise FlowFailed(f"the {running.source} source changed during its sign-in")
            credential = self._tokens.record(running.source, oauth, granted)
            running.outcome = signed_in(running.source, credential, self._tokens.store.stored_in)
            logger.info("the %s source is signed in", running.source)
        except MemCastleError as error:
            running.error = error
            logger.info("signing the %s source in failed: %s", running.source, error.message)
        except Exception:
            logger.exception("signing the %s source in failed", running.source)
            running.error = FlowFailed("the sign-in failed: the daemon log says why")
        finally:
            running.done.set()

    def wait(self, name: str, flow: str, timeout: object = None) -> dict[str, Any]:
        """The outcome of flow `flow` once it has one (told once), or `pending` after
        `timeout` seconds (as given: a number or its text, `WAIT_SECONDS` when absent)."""
        seconds = _seconds(timeout)
        self._packages.oauth(name)
        with self._lock:
            running = self._running.get(name)
        if running is None or running.id != flow:
            raise FlowFailed(
                f"no sign-in {flow!r} of the {name} source is waiting: it was replaced, "
                "forgotten or already reported"
            )
        if not running.done.wait(seconds):
            return {"source": name, "flow": flow, "status": "pending"}
        with self._lock:
            if self._running.get(name) is not running:
                raise FlowFailed(f"the sign-in {flow!r} of the {name} source was already reported")
            del self._running[name]
        if running.error is not None:
            raise running.error
        assert running.outcome is not None
        return running.outcome


def _seconds(raw: object) -> float:
    """A wait's `timeout`: 0 to `WAIT_SECONDS` seconds."""
    if raw is None:
        return WAIT_SECONDS
    try:
        value = float(raw) if isinstance(raw, str | int | float) else -1.0
    except ValueError:
        value = -1.0
    if not 0 <= value <= WAIT_SECONDS:
        raise InputInvalid("timeout", f"must be a number of seconds from 0 to {WAIT_SECONDS:g}")
    return value
