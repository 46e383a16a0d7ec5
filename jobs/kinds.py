"""The job kinds the daemon can run, each with its parameters, priority, gate and handler.

A kind registers itself when its module is imported; `jobs.apps` imports them all when Django
starts, so the REST views, the worker and the CLI see the same set. Later kinds (`checkpoint`,
`mine`, `audit`, `repair`, `embed`, `extract`) register the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jobs.states import Priority

if TYPE_CHECKING:
    from jobs.run import JobRun


@dataclass(frozen=True)
class JobKind:
    """`parse` validates the submitted parameters (raising `InputInvalid` naming the field) and
    returns them as stored in `kind`; `run` does the work and returns the job's result."""

    name: str
    priority: Priority
    parse: Callable[[Mapping[str, Any]], dict[str, Any]]
    run: Callable[[JobRun], dict[str, Any]]
    # Whether submitting one is a write under the memory mode (a demo is never gated).
    writes_memory: bool
    summary: str


_KINDS: dict[str, JobKind] = {}


def register(kind: JobKind) -> JobKind:
    if kind.name in _KINDS:
        raise ValueError(f"job kind {kind.name!r} is registered twice")
    _KINDS[kind.name] = kind
    return kind


def get(name: str) -> JobKind | None:
    return _KINDS.get(name)


def names() -> list[str]:
    return sorted(_KINDS)
