"""The `demo` job: steps that take a while, to watch and try job control on.

Each step waits `step_ms`, then writes one `demo_step` row under a replay-safe id and saves
`{"next_step": n}`. The checkpoint also keeps `runs`, where each claim of the job started, so
a resumed job shows that it continued from its checkpoint. `fail_at_step` makes that step fail
once, so that `retry` can be tried: the failure is remembered in the checkpoint, which a retry
keeps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from jobs.kinds import JobKind
from jobs.replay import unit_id
from jobs.states import Priority
from kernel.errors import InputInvalid, MemCastleError

if TYPE_CHECKING:
    from jobs.run import JobRun
    from jobs.services import JobService

FIELDS = ("steps", "step_ms", "fail_at_step")
MAX_STEPS = 100_000
MAX_STEP_MS = 600_000


class DemoFailed(MemCastleError):
    code = "memcastle::jobs::demo_failed"
    help = "this failure was asked for with fail_at_step; retry the job to pass it"


def _bounded(body: Mapping[str, Any], field: str, default: int, low: int, high: int) -> int:
    value = body.get(field, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InputInvalid(field, f"must be a whole number from {low} to {high}")
    return value


class DemoServices(Protocol):
    @property
    def jobs(self) -> JobService: ...


def parse(body: Mapping[str, Any], services: object) -> dict[str, Any]:
    for field in body:
        if field not in FIELDS:
            raise InputInvalid(field, f"is not a demo job parameter (known: {', '.join(FIELDS)})")
    steps = _bounded(body, "steps", 5, 1, MAX_STEPS)
    params = {"steps": steps, "step_ms": _bounded(body, "step_ms", 500, 0, MAX_STEP_MS)}
    if body.get("fail_at_step") is not None:
        params["fail_at_step"] = _bounded(body, "fail_at_step", steps, 1, steps)
    return params


def run(job: JobRun[DemoServices]) -> dict[str, Any]:
    steps: int = job.params["steps"]
    step_secs = job.params["step_ms"] / 1000
    fail_at = job.params.get("fail_at_step")
    state = dict(job.checkpoint)
    start = int(state.get("next_step", 0))
    state["next_step"] = start
    state["runs"] = [*state.get("runs", []), {"attempt": job.attempt, "from_step": start}]
    job.save(state, current=start, total=steps, message=f"starting at step {start + 1}")
    for index in range(start, steps):
        job.sleep(step_secs)
        if index + 1 == fail_at and not state.get("failed_once"):
            state["failed_once"] = True
            job.save(state, current=index, total=steps, message=f"failing at step {index + 1}")
            raise DemoFailed(f"demo step {index + 1} failed, as asked by fail_at_step")
        _write_step(job, index)
        state["next_step"] = index + 1
        job.save(state, current=index + 1, total=steps, message=f"step {index + 1} of {steps}")
    written = job.services.jobs.demo_steps_written(job.job_id)
    return {"steps": steps, "written": written, "runs": state["runs"]}


def _write_step(job: JobRun[DemoServices], index: int) -> None:
    """Under a replay-safe id: a step replayed after a crash writes nothing."""
    step_id = unit_id(job.job_id, f"demo-step:{index}")
    job.services.jobs.write_demo_step(step_id, job.job_id, index, job.attempt)


DEMO = JobKind(
    name="demo",
    priority=Priority.NORMAL,
    parse=parse,
    run=run,
    gate=lambda params: None,
    summary="steps that take a while, to try job control on",
)
