"""The `audit` and `repair` jobs: find what is inconsistent in the palace, and remove orphans.

An audit only reads. A repair only ever removes orphan drawers (drawers whose room no longer
exists), is a dry run unless asked otherwise, and with `based_on_job` narrows the live scan to
the orphans a completed audit found. Neither keeps a checkpoint: a resumed run starts over,
which is safe (an audit reads; a repair recomputes the live orphan set, and deleting a deleted
drawer is a no-op).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from jobs.kinds import JobKind
from jobs.states import Priority, Status
from kernel.errors import InputInvalid
from kernel.validation import is_uuid

if TYPE_CHECKING:
    from jobs.run import JobRun
    from jobs.services import JobService
    from palace.embeddings.service import EmbeddingService
    from palace.hierarchy import HierarchyService
    from palace.repositories.maintenance import MaintenanceRepository

# The most ids a report lists; the counts are always whole.
LISTED = 1000


class BasedOnJobInvalid(InputInvalid):
    code = "memcastle::repair::based_on_job_invalid"


class MaintenanceServices(Protocol):
    @property
    def maintenance(self) -> Maintenance: ...
    @property
    def jobs(self) -> JobService: ...


class Maintenance:
    """What an audit reports and what a repair removes."""

    def __init__(
        self,
        repository: MaintenanceRepository,
        hierarchy: HierarchyService,
        embeddings: EmbeddingService,
        jobs: JobService,
    ) -> None:
        self._repository = repository
        self.hierarchy = hierarchy
        self.embeddings = embeddings
        self.jobs = jobs

    def audit(self, job: JobRun[Any]) -> dict[str, Any]:
        orphans = self._repository.orphan_drawer_ids()
        job.check()
        dangling = self._repository.dangling_job_refs()
        job.check()
        exhausted, running = self._repository.exhausted_and_running_jobs(job.job_id)
        scope = job.params.get("scope")
        default = self.embeddings.default
        drawers, embedded = self._repository.drawers_and_embedded(
            scope, default.name if default else None
        )
        return {
            "orphan_drawers": {"count": len(orphans), "ids": orphans[:LISTED]},
            "dangling_job_refs": {"count": len(dangling), "ids": dangling[:LISTED]},
            "exhausted_jobs": {"count": len(exhausted), "ids": exhausted[:LISTED]},
            "running_jobs": running,
            # In the default embedding profile; with none, in any profile.
            "drawers_without_embedding": len(set(drawers) - set(embedded)),
            "scope": scope,
        }

    def repair(self, job: JobRun[Any]) -> dict[str, Any]:
        orphans = self._repository.orphan_drawers()
        based_on = job.params.get("based_on_job")
        if based_on is not None:
            orphans = _found_by(self.jobs.record(based_on) or {}, orphans)
        planned = [drawer["id"] for drawer in orphans]
        deleted = 0
        if not job.params["dry_run"]:
            for drawer in orphans:
                job.check()
                self.hierarchy.remove_orphan(drawer)
                deleted += 1
        return {
            "dry_run": job.params["dry_run"],
            "planned": {"count": len(planned), "ids": planned[:LISTED]},
            "deleted": deleted,
            "based_on_job": based_on,
        }


def parse_audit(body: Mapping[str, Any], services: object) -> dict[str, Any]:
    unknown = sorted(set(body) - {"scope"})
    if unknown:
        raise InputInvalid(unknown[0], "is not an audit parameter (known: scope)")
    scope = body.get("scope")
    if scope is not None and (not isinstance(scope, str) or not scope):
        raise InputInvalid("scope", "must be a wing's name")
    return {"scope": scope} if scope else {}


def run_audit(job: JobRun[MaintenanceServices]) -> dict[str, Any]:
    return job.services.maintenance.audit(job)


def parse_repair(body: Mapping[str, Any], services: MaintenanceServices) -> dict[str, Any]:
    unknown = sorted(set(body) - {"dry_run", "based_on_job"})
    if unknown:
        raise InputInvalid(unknown[0], "is not a repair parameter (known: dry_run, based_on_job)")
    dry_run = body.get("dry_run", True)
    if not isinstance(dry_run, bool):
        raise InputInvalid("dry_run", "must be true or false")
    params: dict[str, Any] = {"dry_run": dry_run}
    based_on = body.get("based_on_job")
    if based_on is not None:
        params["based_on_job"] = _completed_audit(based_on, services.jobs)
    return params


def _completed_audit(raw: object, jobs: JobService) -> str:
    if not isinstance(raw, str) or not is_uuid(raw):
        raise BasedOnJobInvalid("based_on_job", "must be the UUID of a completed audit job")
    audit = jobs.record(str(uuid.UUID(raw)))
    if audit is None or audit["kind"]["type"] != "audit" or audit["status"] != Status.COMPLETED:
        raise BasedOnJobInvalid(
            "based_on_job",
            f"must name a completed audit job ({raw} is not one)",
            help='run an audit (POST /api/jobs {"type": "audit"}) and wait for it to complete',
        )
    return str(audit["id"])


def run_repair(job: JobRun[MaintenanceServices]) -> dict[str, Any]:
    return job.services.maintenance.repair(job)


def _found_by(audit: Mapping[str, Any], orphans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The live orphans the audit found: by id when its report lists them all, else those
    filed before the audit ran (its report lists at most `LISTED` ids)."""
    report = (audit.get("result") or {}).get("orphan_drawers") or {}
    if report.get("count", 0) <= len(report.get("ids", [])):
        listed = set(report.get("ids", []))
        return [drawer for drawer in orphans if drawer["id"] in listed]
    return [drawer for drawer in orphans if drawer["created_at"] <= audit["started_at"]]


AUDIT = JobKind(
    name="audit",
    priority=Priority.NORMAL,
    parse=parse_audit,
    run=run_audit,
    gate=lambda params: None,
    summary="report orphan drawers, dangling job references and exhausted jobs",
)
REPAIR = JobKind(
    name="repair",
    priority=Priority.NORMAL,
    parse=parse_repair,
    run=run_repair,
    # Only a dry run, the default, is never gated.
    gate=lambda submitted: None if submitted.get("dry_run", True) is True else "repair",
    summary="remove orphan drawers (a dry run unless dry_run is false)",
    writes_palace=lambda params: not params["dry_run"],
)
