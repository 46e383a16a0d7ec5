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
    # The memory-mode operation submitting one is, given its parameters: a write is refused
    # outside full mode; None is never gated (a demo, an audit, a dry-run repair).
    gate: Callable[[Mapping[str, Any]], str | None]
    summary: str
    # A priority that depends on the parameters (an emergency checkpoint), else `priority`.
    priority_for: Callable[[Mapping[str, Any]], Priority] | None = None
    # Whether a queued, running or paused job of this kind holds off wing and room deletes.
    writes_palace: Callable[[Mapping[str, Any]], bool] | None = None


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
