"""The WIT side of the bundled sources: converts the contract's types to and from the plain
values of `memcastle_transcripts`, and turns every Python exception into a `source-error`.

An exception left uncaught in a component aborts the instance (a trap the host reports without
the message), so each call that can fail runs through `guarded`: the source's own exceptions keep
their variant and message, anything else becomes `failed` naming what went wrong.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Protocol

from componentize_py_types import Err
from memcastle_transcripts import (
    Candidate,
    Canonical,
    CursorInvalid,
    InvalidInput,
    Page,
    RawDoc,
    Ref,
    SourceFailed,
)
from wit_world import exports
from wit_world.imports import types


class Source(Protocol):
    """What a bundled source implements in plain Python."""

    @property
    def name(self) -> str: ...
    @property
    def default_room(self) -> str: ...

    def identify(self, locator: str | None, options: list[tuple[str, str]]) -> Ref: ...
    def discover(self, ref: Ref, cursor: str, limit: int) -> Page: ...
    def read(self, ref: Ref, candidate: Candidate) -> RawDoc | None: ...
    def normalize(self, raw: RawDoc) -> Canonical: ...


def adapter_class(source: Source) -> type[exports.Adapter]:
    """The `Adapter` a bundled source's component exports: each method converts the WIT types
    and calls the plain-Python `source`."""

    class Adapter(exports.Adapter):
        def identify(self, locator: str | None, options: list[tuple[str, str]]) -> types.SourceRef:
            return identify(source, locator, options)

        def default_wing(self, ref: types.SourceRef) -> str:
            return source.name

        def default_room(self) -> str:
            return source.default_room

        def discover(self, ref: types.SourceRef, cursor: str, limit: int) -> types.Discovery:
            return discover(source, ref, cursor, limit)

        def read(
            self, ref: types.SourceRef, candidate: types.Candidate
        ) -> types.RawDocument | None:
            return read(source, ref, candidate)

        def normalize(self, raw: types.RawDocument) -> types.CanonicalDocument:
            return normalize(source, raw)

    return Adapter


def guarded[T](call: Callable[[], T]) -> T:
    try:
        return call()
    except Err:
        raise
    except InvalidInput as exc:
        raise Err(types.SourceError_InvalidInput(str(exc))) from None
    except CursorInvalid as exc:
        raise Err(types.SourceError_CursorInvalid(str(exc))) from None
    except SourceFailed as exc:
        raise Err(types.SourceError_Failed(str(exc))) from None
    except Exception as exc:
        raise Err(types.SourceError_Failed(f"unexpected {type(exc).__name__}: {exc}")) from None


def identify(
    source: Source, locator: str | None, options: list[tuple[str, str]]
) -> types.SourceRef:
    return guarded(lambda: _to_source_ref(source.identify(locator, options)))


def discover(source: Source, ref: types.SourceRef, cursor: str, limit: int) -> types.Discovery:
    def call() -> types.Discovery:
        page = source.discover(_from_source_ref(ref), cursor, limit)
        candidates = [
            types.Candidate(each.external_id, each.cursor_after, each.handle)
            for each in page.candidates
        ]
        return types.Discovery(candidates, page.exhausted)

    return guarded(call)


def read(
    source: Source, ref: types.SourceRef, candidate: types.Candidate
) -> types.RawDocument | None:
    def call() -> types.RawDocument | None:
        plain = Candidate(candidate.external_id, candidate.cursor_after, candidate.handle)
        raw = source.read(_from_source_ref(ref), plain)
        if raw is None:
            return None
        metadata = json.dumps(raw.metadata, ensure_ascii=False, sort_keys=True)
        return types.RawDocument(raw.external_id, raw.revision, raw.body, metadata, raw.occurred_at)

    return guarded(call)


def normalize(source: Source, raw: types.RawDocument) -> types.CanonicalDocument:
    def call() -> types.CanonicalDocument:
        try:
            metadata = json.loads(raw.metadata)
        except ValueError:
            metadata = None
        if not isinstance(metadata, dict):
            raise InvalidInput("the raw document's metadata is not a JSON object")
        plain = RawDoc(raw.external_id, raw.revision, raw.body, metadata, raw.occurred_at)
        document = source.normalize(plain)
        return types.CanonicalDocument(
            title=document.title,
            room=document.room,
            name=document.name,
            kind=types.SourceKind[document.kind.upper()],
            uri=document.uri,
            tags=list(document.tags),
            segments=[types.Segment(text) for text in document.segments],
        )

    return guarded(call)


def _to_source_ref(ref: Ref) -> types.SourceRef:
    return types.SourceRef(ref.source, ref.account, ref.locator, sorted(ref.options.items()))


def _from_source_ref(ref: types.SourceRef) -> Ref:
    """The place as `identify` gave it; the options are taken again from their strings, so a
    host that hands back what it stored gets the same run."""
    return Ref(ref.source, ref.account, ref.locator, dict(ref.options))
