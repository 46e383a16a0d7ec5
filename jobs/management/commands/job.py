"""`memcastle job ...`: list, show and control jobs, remove old ones, and queue a demo one
(alias `jobs`)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from jobs.states import Status
from memcastle_project.cli import (
    DaemonCommand,
    Output,
    ProgressBar,
    add_wait_flag,
    confirm,
    job_card,
    job_detail,
    progress_text,
    table,
)

CONTROLS = {
    "pause": "ask a running job to pause, or pause a queued one",
    "resume": "queue a paused job again",
    "cancel": "cancel a job (asks first)",
    "force-cancel": "cancel a job whose worker is gone (asks first)",
    "retry": "queue a failed job again from its checkpoint",
}
CONFIRMED = ("cancel", "force-cancel")


class Command(DaemonCommand):
    help = "List, show, pause, resume, cancel, retry or prune jobs, or queue a demo job."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = self.subcommands(parser)
        listing = actions.add("list", "jobs, newest first")
        listing.add_argument(
            "--status", choices=[status.value for status in Status], help="only jobs in this state"
        )
        listing.add_argument("--kind", help="only jobs of this kind, e.g. mine")
        listing.add_argument("--limit", type=int, help="jobs at most (50, at most 200)")
        show = actions.add("show", "a job's status, progress, result and error")
        show.add_argument("id", metavar="ID", help="the job's UUID")
        add_wait_flag(show)
        for name, help in CONTROLS.items():
            control = actions.add(name, help)
            control.add_argument("id", metavar="ID", help="the job's UUID")
            if name in CONFIRMED:
                control.add_argument("-y", "--yes", action="store_true", help="do not ask")
        prune = actions.add(
            "prune", "remove finished jobs older than jobs.retention_days (what they filed stays)"
        )
        prune.add_argument(
            "--older-than",
            type=int,
            metavar="DAYS",
            help="remove those that finished more than DAYS days ago (0: every finished job)",
        )
        demo = actions.add("demo", "queue a demo job that counts steps")
        demo.add_argument("--steps", type=int, help="steps (5)")
        demo.add_argument("--step-ms", type=int, help="milliseconds per step (500)")
        demo.add_argument("--fail-at-step", type=int, help="this step fails once")
        add_wait_flag(demo)

    def run(self, options: dict[str, Any]) -> None:
        action = options["action"]
        if action == "list":
            params = {key: options[key] for key in ("status", "kind", "limit")}
            answer = self.daemon.call("GET", "/api/jobs", params=params)
            self.out.show(answer["jobs"], _listing)
        elif action == "show":
            job = self.daemon.call("GET", f"/api/jobs/{options['id']}")
            if options["wait"]:
                job = self.daemon.wait_for_job(job, ProgressBar(self.out))
            self.out.show(job, job_card)
        elif action == "prune":
            body = (
                {} if options["older_than"] is None else {"older_than_days": options["older_than"]}
            )
            answer = self.daemon.call("POST", "/api/jobs/prune", body=body)
            self.out.show(answer, _pruned)
        elif action == "demo":
            body = {
                "type": "demo",
                "steps": options["steps"],
                "step_ms": options["step_ms"],
                "fail_at_step": options["fail_at_step"],
            }
            self.submit_job(
                {key: value for key, value in body.items() if value is not None},
                wait=options["wait"],
            )
        else:
            if action in CONFIRMED:
                confirm(f"{action.capitalize()} job {options['id']}?", yes=options["yes"])
            job = self.daemon.call("POST", f"/api/jobs/{options['id']}/{action}")
            self.out.show(job, job_card)


def _listing(out: Output, jobs: list[dict[str, Any]]) -> str:
    rows = [
        [
            job["id"],
            job["kind"]["type"],
            out.status(job["status"]),
            progress_text(job.get("progress") or {}),
            job["created_at"],
            job_detail(job),
        ]
        for job in jobs
    ]
    return table(["ID", "KIND", "STATUS", "PROGRESS", "CREATED", "DETAIL"], rows, empty="(no jobs)")


def _pruned(out: Output, answer: dict[str, Any]) -> str:
    return f"removed {answer['removed']} finished jobs (ended before {answer['finished_before']})"
