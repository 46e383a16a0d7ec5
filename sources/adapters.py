"""What a mining source is to the core: an adapter that finds, reads and normalizes documents.

The shapes mirror the WebAssembly contract (`memcastle:source`, world `source`), so a built-in
adapter and an installed component are driven the same way by the pipeline in
`sources.mining`. An adapter never touches the store or the job: the core owns chunking,
deduplication, drawers, documents, cursors and checkpoints.

Cursors are JSON values (None is the start), opaque to the core.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kernel.errors import InputInvalid, MemCastleError


@dataclass(frozen=True)
class SourceRef:
    """One place read by one adapter. `(source, account, locator)` is its identity; `options`
    narrow a run and never enter the identity."""

    source: str
    account: str | None
    locator: str
    options: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Candidate:
    external_id: str
    cursor_after: Any
    handle: str


@dataclass(frozen=True)
class Discovery:
    candidates: list[Candidate]
    exhausted: bool


@dataclass(frozen=True)
class RawDocument:
    external_id: str
    revision: str
    body: str
    metadata: dict[str, Any]
    occurred_at: str | None = None


@dataclass(frozen=True)
class CanonicalDocument:
    """A document as the core files it: `segments` are packed whole into chunks."""

    kind: str
    segments: list[str]
    title: str | None = None
    room: str | None = None
    name: str | None = None
    uri: str | None = None
    tags: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class OptionSpec:
    name: str
    description: str
    type: str  # string | path | date
    breadth: str | None = None  # include | opt_in_include | exclude | since

    def as_dict(self) -> dict[str, Any]:
        described: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "type": self.type,
        }
        if self.breadth is not None:
            described["breadth"] = self.breadth
        return described


@dataclass(frozen=True)
class Capabilities:
    incremental: bool = False
    retains_raw: bool = False
    needs_credentials: bool = False

    def as_dict(self) -> dict[str, bool]:
        return {
            "incremental": self.incremental,
            "retains_raw": self.retains_raw,
            "needs_credentials": self.needs_credentials,
        }


class CursorInvalid(MemCastleError):
    code = "memcastle::source::cursor_invalid"
    help = "mine it again from the beginning with full (`memcastle mine --full`)"


class SourceFailed(MemCastleError):
    code = "memcastle::source::failed"
    help = "read the job's error; run the mine again once the source is readable"


class Adapter(Protocol):
    """A mining source. Built-in adapters implement it in Python; installed WebAssembly
    components will be wrapped to implement it too."""

    name: str
    description: str
    origin: str  # builtin | package | bundled | registry | plugin
    capabilities: Capabilities
    options: tuple[OptionSpec, ...]
    # The triggers that may start it besides a timetable (`watch`, `webhook`).
    triggers: frozenset[str]

    def identify(self, locator: str | None, options: Mapping[str, str]) -> SourceRef:
        """Validate and normalize the place; equal places give equal refs. Raises
        `InputInvalid` naming the field at fault."""
        ...

    def default_wing(self, source: SourceRef) -> str: ...

    def default_room(self) -> str: ...

    def discover(self, source: SourceRef, cursor: Any, limit: int) -> Discovery:
        """Candidates strictly after `cursor` (None: from the start), in order, at most
        `limit`."""
        ...

    def read(self, source: SourceRef, candidate: Candidate) -> RawDocument | None:
        """The document, or None to skip it."""
        ...

    def normalize(self, raw: RawDocument) -> CanonicalDocument:
        """Pure: the canonical document of a raw one."""
        ...


def describe(adapter: Adapter) -> dict[str, Any]:
    """An adapter as `GET /api/sources` lists it."""
    return {
        "name": adapter.name,
        "description": adapter.description,
        "capabilities": adapter.capabilities.as_dict(),
        "origin": adapter.origin,
        "options": [option.as_dict() for option in adapter.options],
        "triggers": sorted(adapter.triggers),
    }


def check_options(adapter: Adapter, options: Mapping[str, str]) -> None:
    """Refuse an option key the adapter does not declare, naming the ones it accepts."""
    declared = [option.name for option in adapter.options]
    for key in sorted(options):
        if key not in declared:
            accepted = ", ".join(declared) if declared else "none"
            raise InputInvalid(
                "options",
                f"has a key {key!r} that the {adapter.name} source does not accept "
                f"(it accepts: {accepted})",
            )
