"""An installed WebAssembly source as the pipeline sees it: an `Adapter` like the built-in ones.

Each method is one call of the component in a fresh sandbox (`sources.components`). What a call
is granted follows the manifest's `[permissions]`: `identify`, `discover` and `read` see the
granted directories read-only (the locator canonicalised, a file standing for its directory; the
listed absolute directories; `~/...` under the daemon's home; missing ones dropped) and may run
the listed programs; `normalize` is pure and is granted nothing. The caps are the daemon's
(`mining.source_memory_mib`, `mining.source_timeout_secs`), lowered by the manifest's `[limits]`.

Values cross as wasmtime gives them: records with the WIT field names, `Variant`s for the
`source-error` of a `result`. Whatever a source hands back is checked here, so a malformed
answer fails the job with `memcastle::source::failed` rather than anything later.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import wasmtime.component as wc

from kernel.errors import InputInvalid, MemCastleError
from sources.adapters import (
    Candidate,
    CanonicalDocument,
    Capabilities,
    CursorInvalid,
    Discovery,
    OptionSpec,
    RawDocument,
    SourceFailed,
    SourceRef,
)
from sources.components import Component, Grant, record
from sources.manifest import Manifest

KINDS = ("file", "manual", "transcript", "other")
# Variables a program started by `run-process` always gets, whatever the manifest lists.
BASE_ENV = ("PATH", "HOME")


@dataclass(frozen=True)
class Caps:
    """The daemon's caps on one call."""

    memory_mib: int
    timeout_secs: int


class ComponentAdapter:
    """A source installed as a package (or bundled), driven through its component."""

    def __init__(
        self,
        manifest: Manifest,
        component: Component,
        *,
        origin: str,
        caps: Caps,
        environ: Mapping[str, str] | None = None,
        access_token: Callable[[], str] | None = None,
    ) -> None:
        self.manifest = manifest
        self.name = manifest.name
        self.description = manifest.description
        self.origin = origin
        self.capabilities: Capabilities = manifest.capabilities
        self.triggers = manifest.triggers
        self.options: tuple[OptionSpec, ...] = manifest.options
        self._component = component
        self._environ = dict(os.environ if environ is None else environ)
        # The source's current access token, renewed as needed (`sources.access_tokens`):
        # None for a source that declares no sign-in.
        self._access_token = access_token
        limits = manifest.limits
        self._memory_mib = min(caps.memory_mib, limits.memory_mib or caps.memory_mib)
        self._timeout_secs = min(caps.timeout_secs, limits.timeout_secs or caps.timeout_secs)

    # The grants.

    def _home(self) -> str:
        return self._environ.get("HOME") or os.path.expanduser("~")

    def _call(self, locator: str | None, export: str, *args: Any) -> Any:
        """One call granted the manifest's permissions. A call that fails after the host refused
        it an access token fails with that refusal (`memcastle::credential::required`,
        `memcastle::credential::refresh_failed`), not as the source's own failure."""
        token = None if self._access_token is None else _Token(self._access_token)
        try:
            answer = self._component.call(self._grant(locator, token), export, *args)
        except SourceFailed:
            if token is not None and token.refused is not None:
                raise token.refused from None
            raise
        if isinstance(answer, wc.Variant) and token is not None and token.refused is not None:
            raise token.refused
        return answer

    def _grant(self, locator: str | None, token: _Token | None) -> Grant:
        permissions = self.manifest.permissions
        env = {name: self._environ[name] for name in BASE_ENV if name in self._environ}
        env.update({name: self._environ[name] for name in permissions.env if name in self._environ})
        return Grant(
            memory_mib=self._memory_mib,
            timeout_secs=self._timeout_secs,
            read_dirs=self._read_dirs(locator),
            programs=tuple(permissions.process),
            process_env=env,
            guest_env={"HOME": self._home()},
            network=permissions.network,
            access_token=token,
        )

    def _pure(self) -> Grant:
        return Grant(memory_mib=self._memory_mib, timeout_secs=self._timeout_secs)

    def _read_dirs(self, locator: str | None) -> tuple[str, ...]:
        granted: list[str] = []
        for entry in self.manifest.permissions.filesystem_read:
            if entry == "locator":
                path = _locator_dir(locator)
            elif entry.startswith("~/"):
                path = os.path.join(self._home(), entry[2:])
            else:
                path = entry
            if path is None:
                continue
            path = os.path.realpath(path)
            if os.path.isdir(path) and path not in granted:
                granted.append(path)
        return tuple(granted)

    # The contract.

    def identify(self, locator: str | None, options: Mapping[str, str]) -> SourceRef:
        # The source sees the granted directories at their real paths only, so a locator
        # reached through a symlink is handed over resolved.
        if locator is not None and os.path.isabs(locator):
            locator = os.path.realpath(locator)
        answer = self._call(locator, "identify", locator, sorted(options.items()))
        if isinstance(answer, wc.Variant):
            _raise(answer, field=_field_at_fault(answer, options))
        ref = _source_ref(answer)
        if ref.source != self.name:
            raise SourceFailed(
                f"the {self.name} source identified the place as {ref.source!r}'s, not its own"
            )
        return ref

    def default_wing(self, source: SourceRef) -> str:
        return _text(self._component.call(self._pure(), "default-wing", _wit_ref(source)), "wing")

    def default_room(self) -> str:
        return _text(self._component.call(self._pure(), "default-room"), "room")

    def discover(self, source: SourceRef, cursor: Any, limit: int) -> Discovery:
        answer = self._call(source.locator, "discover", _wit_ref(source), json.dumps(cursor), limit)
        if isinstance(answer, wc.Variant):
            _raise(answer)
        candidates = [_candidate(item) for item in _field(answer, "candidates", list)]
        if len(candidates) > limit:
            raise SourceFailed(
                f"the source discovered {len(candidates)} documents when asked for at most {limit}"
            )
        return Discovery(candidates=candidates, exhausted=_field(answer, "exhausted", bool))

    def read(self, source: SourceRef, candidate: Candidate) -> RawDocument | None:
        answer = self._call(source.locator, "read", _wit_ref(source), _wit_candidate(candidate))
        if isinstance(answer, wc.Variant):
            _raise(answer)
        if answer is None:
            return None
        metadata = _json(_field(answer, "metadata", str), "metadata")
        if not isinstance(metadata, dict):
            raise SourceFailed("the source's document metadata is not a JSON object")
        return RawDocument(
            external_id=_field(answer, "external-id", str),
            revision=_field(answer, "revision", str),
            body=_field(answer, "body", str),
            metadata=metadata,
            occurred_at=_optional(answer, "occurred-at"),
        )

    def normalize(self, raw: RawDocument) -> CanonicalDocument:
        document = record(
            {
                "external-id": raw.external_id,
                "revision": raw.revision,
                "body": raw.body,
                "metadata": json.dumps(raw.metadata),
                "occurred-at": raw.occurred_at,
            }
        )
        answer = self._component.call(self._pure(), "normalize", document)
        if isinstance(answer, wc.Variant):
            _raise(answer)
        kind = _field(answer, "kind", str)
        if kind not in KINDS:
            raise SourceFailed(f"the source gave the document a kind {kind!r}")
        return CanonicalDocument(
            kind=kind,
            segments=[_field(segment, "text", str) for segment in _field(answer, "segments", list)],
            title=_optional(answer, "title"),
            room=_optional(answer, "room"),
            name=_optional(answer, "name"),
            uri=_optional(answer, "uri"),
            tags=[_text(tag, "tag") for tag in _field(answer, "tags", list)],
        )


class _Token:
    """The access token as one call asks for it, keeping the host's refusal, if any."""

    def __init__(self, fetch: Callable[[], str]) -> None:
        self._fetch = fetch
        self.refused: MemCastleError | None = None

    def __call__(self) -> str:
        try:
            return self._fetch()
        except MemCastleError as exc:
            self.refused = exc
            raise


def _locator_dir(locator: str | None) -> str | None:
    """The directory a locator grants: itself, or a file's directory."""
    if locator is None or not os.path.isabs(locator):
        return None
    path = Path(locator)
    return str(path if not path.is_file() else path.parent)


def _field_at_fault(error: wc.Variant, options: Mapping[str, str]) -> str:
    """The parameter an `invalid-input` of `identify` is about: an option it names, else the
    locator."""
    message = str(error.payload)
    return "options" if any(key in message for key in options) else "locator"


def _raise(error: wc.Variant, *, field: str | None = None) -> None:
    message = error.payload if isinstance(error.payload, str) else repr(error.payload)
    if error.tag == "cursor-invalid":
        raise CursorInvalid(f"the stored cursor is not one this source made: {message}")
    if error.tag == "invalid-input" and field is not None:
        raise InputInvalid(field, message)
    if error.tag in ("invalid-input", "failed"):
        raise SourceFailed(message)
    raise SourceFailed(f"the source answered an unknown error {error.tag!r}: {message}")


def _source_ref(answer: Any) -> SourceRef:
    options = _field(answer, "options", list)
    return SourceRef(
        source=_field(answer, "source", str),
        account=_optional(answer, "account"),
        locator=_field(answer, "locator", str),
        options={_text(key, "option"): _text(value, "option") for key, value in options},
    )


def _wit_ref(ref: SourceRef) -> wc.Record:
    return record(
        {
            "source": ref.source,
            "account": ref.account,
            "locator": ref.locator,
            "options": sorted(ref.options.items()),
        }
    )


def _candidate(answer: Any) -> Candidate:
    return Candidate(
        external_id=_field(answer, "external-id", str),
        cursor_after=_json(_field(answer, "cursor-after", str), "cursor"),
        handle=_field(answer, "handle", str),
    )


def _wit_candidate(candidate: Candidate) -> wc.Record:
    return record(
        {
            "external-id": candidate.external_id,
            "cursor-after": json.dumps(candidate.cursor_after),
            "handle": candidate.handle,
        }
    )


def _field(answer: Any, name: str, kind: type) -> Any:
    value = getattr(answer, name, None)
    if not isinstance(value, kind):
        raise SourceFailed(f"the source's answer has no valid `{name}`")
    return value


def _optional(answer: Any, name: str) -> str | None:
    value = getattr(answer, name, None)
    if value is not None and not isinstance(value, str):
        raise SourceFailed(f"the source's answer has an invalid `{name}`")
    return value


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise SourceFailed(f"the source gave a {what} that is not text")
    return value


def _json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise SourceFailed(f"the source's {what} is not JSON: {text[:80]!r}") from None
