"""The job kinds the daemon can run, each with its parameters, priority, gate and handler.

A kind registers itself when its module is imported. The modules of `KIND_MODULES` are
imported at the first lookup, not when Django starts: they bring the store's SDK and the search
and graph machinery with them, which cost every CLI command 0.85 s of CPU that it never used
(a CLI command only talks to the daemon).
"""

from __future__ import annotations

import importlib
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
    # The memory-mode operation submitting one is, given the submitted parameters (before
    # `parse` checks them): a write is refused outside full mode; None is never gated (a demo,
    # an audit, a dry-run repair).
    gate: Callable[[Mapping[str, Any]], str | None]
    summary: str
    # A priority that depends on the parameters (an emergency checkpoint), else `priority`.
    priority_for: Callable[[Mapping[str, Any]], Priority] | None = None
    # Whether a queued, running or paused job of this kind holds off wing and room deletes.
    writes_palace: Callable[[Mapping[str, Any]], bool] | None = None


KIND_MODULES = (
    "jobs.demo",
    "palace.checkpoint",
    "palace.maintenance",
    "palace.embeddings.job",
    "sources.mining",
    "graph.extraction",
)

_KINDS: dict[str, JobKind] = {}


def register(kind: JobKind) -> JobKind:
    if kind.name in _KINDS:
        raise ValueError(f"job kind {kind.name!r} is registered twice")
    _KINDS[kind.name] = kind
    return kind


def _registered() -> dict[str, JobKind]:
    # Importing a module that is already imported is a dictionary lookup.
    for module in KIND_MODULES:
        importlib.import_module(module)
    return _KINDS


def get(name: str) -> JobKind | None:
    return _registered().get(name)


def names() -> list[str]:
    return sorted(_registered())
