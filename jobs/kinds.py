"""The job kinds and sweeps the apps give the job engine, each kind with its parameters,
priority, gate and handler.

The job engine knows no app: each app registers, from its own `AppConfig.ready()`, a function
that returns its kinds and its sweepers (`palace.apps`, `graph.apps`, ...). Those functions run
at the first lookup, not when Django starts: the kinds' modules bring the store's SDK, the
graph's fuzzy matching and the search machinery with them, 0.57 s of CPU that every CLI command
would pay and never use (a CLI command only talks to the daemon; `tests/test_apps.py` checks
that Django starts without them).

A kind's `parse` and `run` reach the services they call through the services the composition
root handed to the executor (`Executor.services`): `parse` is given them, `run` finds them on its
`JobRun`. Each app states what its handlers need as a protocol, which the composition root's
`Services` satisfies.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jobs.states import Priority

if TYPE_CHECKING:
    from jobs.run import JobRun
    from jobs.sweeper import Sweeper


@dataclass(frozen=True)
class JobKind:
    """`parse` validates the submitted parameters (raising `InputInvalid` naming the field),
    given the services, and returns them as stored in `kind`; `run` does the work and returns
    the job's result."""

    name: str
    priority: Priority
    parse: Callable[[Mapping[str, Any], Any], dict[str, Any]]
    run: Callable[[JobRun[Any]], dict[str, Any]]
    # The memory-mode operation submitting one is, given the submitted parameters (before
    # `parse` checks them): a write is refused outside full mode; None is never gated (a demo,
    # an audit, a dry-run repair).
    gate: Callable[[Mapping[str, Any]], str | None]
    summary: str
    # A priority that depends on the parameters (an emergency checkpoint), else `priority`.
    priority_for: Callable[[Mapping[str, Any]], Priority] | None = None
    # Whether a queued, running or paused job of this kind holds off wing and room deletes.
    writes_palace: Callable[[Mapping[str, Any]], bool] | None = None


@dataclass(frozen=True)
class AppJobs:
    """What one app gives the job engine: its job kinds, and its sweepers (each built from the
    services; a `Sweeper` subclass whose constructor takes them is one)."""

    kinds: tuple[JobKind, ...] = ()
    sweepers: tuple[Callable[[Any], Sweeper], ...] = ()


_loaders: list[Callable[[], AppJobs]] = []
_kinds: dict[str, JobKind] = {}
_sweepers: list[Callable[[Any], Sweeper]] = []
_lock = threading.Lock()


def register(load: Callable[[], AppJobs]) -> None:
    """Register an app's jobs, loaded by `load` at the first lookup."""
    with _lock:
        _loaders.append(load)


def _loaded() -> dict[str, JobKind]:
    with _lock:
        while _loaders:
            found = _loaders.pop(0)()
            for kind in found.kinds:
                if kind.name in _kinds:
                    raise ValueError(f"job kind {kind.name!r} is registered twice")
                _kinds[kind.name] = kind
            _sweepers.extend(found.sweepers)
        return _kinds


def get(name: str) -> JobKind | None:
    return _loaded().get(name)


def names() -> list[str]:
    return sorted(_loaded())


def sweepers(services: Any) -> list[Sweeper]:
    """One sweeper of each registered kind, built on `services`."""
    _loaded()
    return [make(services) for make in _sweepers]
