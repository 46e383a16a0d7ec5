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
from typing import Any

from jobs import kinds
from jobs.run import JobRun
from jobs.states import Priority, Status
from kernel.errors import InputInvalid
from kernel.validation import is_uuid
from memcastle_project import runtime

# The most ids a report lists; the counts are always whole.
LISTED = 1000


class BasedOnJobInvalid(InputInvalid):
    code = "memcastle::repair::based_on_job_invalid"


def parse_audit(body: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(body) - {"scope"})
    if unknown:
        raise InputInvalid(unknown[0], "is not an audit parameter (known: scope)")
    scope = body.get("scope")
    if scope is not None and (not isinstance(scope, str) or not scope):
        raise InputInvalid("scope", "must be a wing's name")
    return {"scope": scope} if scope else {}


def run_audit(job: JobRun) -> dict[str, Any]:
    store = job.store
    orphans = store.one(
        "SELECT VALUE record::id(id) FROM drawer WHERE !record::exists(type::record('room', room))"
    )
    job.check()
    dangling = store.one(
        "SELECT VALUE record::id(id) FROM drawer WHERE provenance.job_id != NONE "
        "AND !record::exists(type::record('job', provenance.job_id))"
    )
    job.check()
    jobs = store.query(
        "SELECT VALUE record::id(id) FROM job WHERE status = 'failed' "
        "AND error_code = 'memcastle::jobs::recovery_exhausted';"
        "SELECT count() AS n FROM job WHERE status = 'running' AND record::id(id) != $own_key "
        "GROUP ALL;",
        {"own_key": job.job_id},
    )
    scope = job.params.get("scope")
    default = runtime.current().embeddings.default
    drawers, embedded = store.query(
        "LET $wing = (SELECT VALUE record::id(id) FROM wing WHERE name = $scope)[0];"
        "SELECT VALUE record::id(id) FROM drawer WHERE $scope = NONE OR wing = $wing;"
        "SELECT VALUE drawer FROM embedding_key WHERE $profile = NONE OR profile = $profile;",
        {"scope": scope, "profile": default.name if default else None},
    )[1:]
    return {
        "orphan_drawers": {"count": len(orphans), "ids": orphans[:LISTED]},
        "dangling_job_refs": {"count": len(dangling), "ids": dangling[:LISTED]},
        "exhausted_jobs": {"count": len(jobs[0]), "ids": jobs[0][:LISTED]},
        "running_jobs": jobs[1][0]["n"] if jobs[1] else 0,
        # In the default embedding profile; with none, in any profile.
        "drawers_without_embedding": len(set(drawers) - set(embedded)),
        "scope": scope,
    }


def parse_repair(body: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(body) - {"dry_run", "based_on_job"})
    if unknown:
        raise InputInvalid(unknown[0], "is not a repair parameter (known: dry_run, based_on_job)")
    dry_run = body.get("dry_run", True)
    if not isinstance(dry_run, bool):
        raise InputInvalid("dry_run", "must be true or false")
    params: dict[str, Any] = {"dry_run": dry_run}
    based_on = body.get("based_on_job")
    if based_on is not None:
        params["based_on_job"] = _completed_audit(based_on)
    return params


def _completed_audit(raw: object) -> str:
    if not isinstance(raw, str) or not is_uuid(raw):
        raise BasedOnJobInvalid("based_on_job", "must be the UUID of a completed audit job")
    audit = runtime.current().jobs.repository.get(str(uuid.UUID(raw)))
    if audit is None or audit["kind"]["type"] != "audit" or audit["status"] != Status.COMPLETED:
        raise BasedOnJobInvalid(
            "based_on_job",
            f"must name a completed audit job ({raw} is not one)",
            help='run an audit (POST /api/jobs {"type": "audit"}) and wait for it to complete',
        )
    return str(audit["id"])


def run_repair(job: JobRun) -> dict[str, Any]:
    palace = runtime.current().palace
    store = job.store
    orphans = store.one(
        "SELECT id, wing, room, created_at FROM drawer "
        "WHERE !record::exists(type::record('room', room))"
    )
    based_on = job.params.get("based_on_job")
    if based_on is not None:
        orphans = _found_by(runtime.current().jobs.repository.get(based_on) or {}, orphans)
    planned = [drawer["id"] for drawer in orphans]
    deleted = 0
    if not job.params["dry_run"]:
        for drawer in orphans:
            job.check()
            palace.remove_orphan(drawer)
            deleted += 1
    return {
        "dry_run": job.params["dry_run"],
        "planned": {"count": len(planned), "ids": planned[:LISTED]},
        "deleted": deleted,
        "based_on_job": based_on,
    }


def _found_by(audit: Mapping[str, Any], orphans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The live orphans the audit found: by id when its report lists them all, else those
    filed before the audit ran (its report lists at most `LISTED` ids)."""
    report = (audit.get("result") or {}).get("orphan_drawers") or {}
    if report.get("count", 0) <= len(report.get("ids", [])):
        listed = set(report.get("ids", []))
        return [drawer for drawer in orphans if drawer["id"] in listed]
    return [drawer for drawer in orphans if drawer["created_at"] <= audit["started_at"]]


AUDIT = kinds.register(
    kinds.JobKind(
        name="audit",
        priority=Priority.NORMAL,
        parse=parse_audit,
        run=run_audit,
        gate=lambda params: None,
        summary="report orphan drawers, dangling job references and exhausted jobs",
    )
)
REPAIR = kinds.register(
    kinds.JobKind(
        name="repair",
        priority=Priority.NORMAL,
        parse=parse_repair,
        run=run_repair,
        # Only a dry run, the default, is never gated.
        gate=lambda submitted: None if submitted.get("dry_run", True) is True else "repair",
        summary="remove orphan drawers (a dry run unless dry_run is false)",
        writes_palace=lambda params: not params["dry_run"],
    )
)
