"""Jobs through the CLI: queuing (demo, mine, audit, repair, embed, extract), waiting with a
progress bar, listing, showing and controlling them, and the sources."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx

from tests.support.cli import cli, cli_json, in_terminal, refused, together
from tests.support.daemon import Daemon
from tests.support.waits import wait_for


def job_status(daemon: Daemon, job_id: str) -> dict[str, Any]:
    with httpx.Client(base_url=daemon.base_url, timeout=30) as client:
        return client.get(f"/api/jobs/{job_id}").json()


def reaches(daemon: Daemon, job_id: str, status: str) -> None:
    wait_for(
        lambda: job_status(daemon, job_id)["status"] == status,
        timeout=30,
        what=f"job {job_id} to be {status}",
    )


def test_demo_jobs_waited_listed_and_retried(daemon: Daemon) -> None:
    done = cli_json(daemon, "job", "demo", "--steps", "2", "--step-ms", "1", "--wait")
    assert done["status"] == "completed" and done["requested_by"] == "cli"
    listed = cli_json(daemon, "jobs", "list", "--status", "completed", "--kind", "demo")
    assert done["id"] in [job["id"] for job in listed]

    failing = cli(
        daemon, "job", "demo", "--steps", "2", "--step-ms", "1", "--fail-at-step", "1", "--wait"
    )
    assert failing.returncode == 1
    assert "demo step 1 failed" in failing.stderr
    failed_id = re.search(r"memcastle job show ([0-9a-f-]{36})", failing.stderr).group(1)
    retried = cli_json(daemon, "job", "retry", failed_id)
    assert retried["status"] == "queued"
    shown = cli_json(daemon, "job", "show", failed_id, "--wait")
    assert shown["status"] == "completed"

    refused(
        cli(daemon, "job", "force-cancel", done["id"]),
        "memcastle::client::remote_rejected (400, memcastle::jobs::transition_invalid)",
    )


def test_pause_resume_and_cancel(daemon: Daemon) -> None:
    job = cli_json(daemon, "job", "demo", "--steps", "200", "--step-ms", "100")
    paused = cli_json(daemon, "job", "pause", job["id"])
    assert paused["status"] == "paused" or paused["pause_requested"]
    reaches(daemon, job["id"], "paused")
    assert cli_json(daemon, "job", "resume", job["id"])["status"] == "queued"
    cancelled = cli_json(daemon, "job", "cancel", job["id"])
    assert cancelled["status"] == "cancelled" or cancelled["cancel_requested"]
    reaches(daemon, job["id"], "cancelled")


def test_jobs_on_a_terminal(daemon: Daemon) -> None:
    status, shown = in_terminal(daemon, "job", "demo", "--steps", "3", "--step-ms", "50", "--wait")
    assert status == 0, shown
    assert "[##############################] 3/3" in shown
    assert "\x1b[32mcompleted\x1b[0m" in shown
    assert "follow with" not in shown
    status, shown = in_terminal(daemon, "job", "list", "--limit", "3")
    assert status == 0
    assert re.search(r"ID\s+KIND\s+STATUS\s+PROGRESS\s+CREATED\s+DETAIL", shown)

    queued = cli_json(daemon, "job", "demo", "--steps", "200", "--step-ms", "100")
    status, shown = in_terminal(daemon, "job", "cancel", queued["id"], answer="n")
    assert status == 1 and "memcastle::cli::aborted" in shown
    assert job_status(daemon, queued["id"])["status"] in ("queued", "running")
    assert cli_json(daemon, "job", "cancel", queued["id"], "--yes")["id"] == queued["id"]


def test_mine_a_directory_and_list_sources(daemon: Daemon, wing_name: str, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("how to mine things\n")
    job = cli_json(daemon, "mine", "docs", "--wing", wing_name, "--wait", cwd=tmp_path)
    assert job["status"] == "completed"
    assert job["kind"]["path"] == str(docs)
    sources, listed, mined, unknown, twice = together(
        lambda: cli_json(daemon, "sources"),
        lambda: in_terminal(daemon, "sources"),
        lambda: in_terminal(daemon, "mine", str(docs), "--wing", wing_name, "--wait"),
        lambda: cli(daemon, "mine", "nosuchsource"),
        lambda: cli(daemon, "mine", "directory", str(docs), "since=2020-01-01", "since=2021"),
    )
    assert "directory" in [adapter["name"] for adapter in sources["adapters"]]
    assert str(docs) in [mined["locator"] for mined in sources["sources"]]
    assert listed[0] == 0 and "SOURCE" in listed[1] and str(docs) in listed[1]
    assert mined[0] == 0 and re.search(r"\[[#-]{30}\] \d+", mined[1]) and "completed" in mined[1]
    assert "sources: chatgpt, claude, codex, directory" in refused(
        unknown, "memcastle::input::invalid"
    )
    assert "`since` is given twice" in refused(twice, "memcastle::input::invalid")


def test_maintenance_jobs(daemon: Daemon) -> None:
    audit, embed, extract, repair_apply = together(
        lambda: cli_json(daemon, "audit", "--wait"),
        lambda: cli(daemon, "embed", "--wing", "nowhere"),
        lambda: cli(daemon, "extract"),
        lambda: in_terminal(daemon, "repair", "--apply", answer="n"),
    )
    assert audit["status"] == "completed" and audit["kind"]["type"] == "audit"
    refused(embed, "memcastle::client::remote_rejected (404, memcastle::palace::wing_not_found)")
    refused(extract, "memcastle::client::remote_rejected (400, memcastle::extract::not_configured)")
    status, shown = repair_apply
    assert status == 1 and "[y/N]" in shown and "memcastle::cli::aborted" in shown
    repair = cli_json(daemon, "repair", "--based-on-job", audit["id"])
    assert repair["kind"]["dry_run"] is True
