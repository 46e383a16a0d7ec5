"""What the document says of job kinds: a drf-spectacular post-processing hook naming the kinds
this daemon runs, since a submission or a listing of any other kind is refused. The kinds are
registered by the apps (`jobs.kinds`), so they are read when the document is made."""

from __future__ import annotations

from typing import Any

from jobs import kinds


def declare_job_kinds(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    known = kinds.names()
    if not known:
        return result
    submission = result.get("components", {}).get("schemas", {}).get("JobSubmissionRequest", {})
    if "type" in submission.get("properties", {}):
        submission["properties"]["type"]["enum"] = known
    for parameter in (
        result.get("paths", {}).get("/api/jobs", {}).get("get", {}).get("parameters", [])
    ):
        if parameter.get("name") == "kind":
            parameter.setdefault("schema", {})["enum"] = known
    return result
