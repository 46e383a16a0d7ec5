"""The CLI's one way to reach the daemon: find it, send a request, map a failure.

The daemon is found through the registry file it writes for its palace, then at the configured
address. Every command but the local ones is a thin client: parse, `DaemonClient.call`, render.
"""

from __future__ import annotations

import json
import os
import sys
import time
from argparse import ArgumentParser
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from kernel.config import Config
from kernel.errors import MemCastleError
from memcastle_project.registry import RegistryFile
from palace.management.base import MemCastleCommand, RemoteRejected
from palace.management.render import Output, ProgressBar, job_card

REQUESTED_BY = "cli"
REQUEST_TIMEOUT_SECS = 60.0
JOB_POLL_SECS = 0.2
TERMINAL_STATUSES = ("completed", "failed", "cancelled")
_UNSPECIFIED = {"0.0.0.0": "127.0.0.1", "::": "::1"}


@dataclass(frozen=True)
class Endpoint:
    """Where the daemon should be, and how that was learnt (`registry` or `config`)."""

    url: str
    source: str
    registry: Path
    pid: int | None = None
    # A registry file whose process is gone: the daemon did not shut down cleanly.
    stale: bool = False


def process_alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_registry(path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def configured_url(config: Config) -> str:
    host = _UNSPECIFIED.get(config.bind, config.bind)
    return f"http://[{host}]:{config.port}" if ":" in host else f"http://{host}:{config.port}"


def locate(config: Config) -> Endpoint:
    """The registry file's address while its process lives, else the configured one."""
    path = RegistryFile(config).path
    record = read_registry(path)
    if record is not None and process_alive(record.get("pid")) and record.get("bind_addr"):
        return Endpoint(f"http://{record['bind_addr']}", "registry", path, pid=record["pid"])
    return Endpoint(configured_url(config), "config", path, stale=record is not None)


class NotRunning(MemCastleError):
    code = "memcastle::client::not_running"
    help = "start one with `memcastle daemon start` (or `memcastle serve` in the foreground)"

    def __init__(self, endpoint: Endpoint) -> None:
        super().__init__(
            f"no MemCastle daemon answered at {endpoint.url} (from the {endpoint.source})"
        )


class RequestFailed(MemCastleError):
    code = "memcastle::client::request_failed"
    help = "check that the daemon is healthy (`memcastle status`) and try again"


class DaemonClient:
    """HTTP to one daemon, with the token, the memory mode and `requested_by=cli`."""

    def __init__(
        self, endpoint: Endpoint, *, token: str | None, mode: str | None, verbose: int = 0
    ) -> None:
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if mode:
            headers["X-MemCastle-Mode"] = mode
        self.endpoint = endpoint
        self.verbose = verbose
        self.http = httpx.Client(
            base_url=endpoint.url, headers=headers, timeout=REQUEST_TIMEOUT_SECS
        )

    def call(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> Any:
        """One request and its JSON answer. A POST always says it came from the CLI; a refusal
        raises `RemoteRejected`, no answer `NotRunning`, a broken one `RequestFailed`."""
        payload = {**(body or {}), "requested_by": REQUESTED_BY} if method == "POST" else None
        query = {key: _param(value) for key, value in (params or {}).items() if value is not None}
        if self.verbose >= 2:
            sys.stderr.write(f"{method} {self.endpoint.url}{path} {query or ''}\n")
        try:
            response = self.http.request(method, path, params=query, json=payload)
        except httpx.ConnectError as exc:
            raise NotRunning(self.endpoint) from exc
        except httpx.HTTPError as exc:
            raise RequestFailed(f"{method} {path} failed: {exc}") from exc
        try:
            answer = response.json()
        except ValueError as exc:
            if response.is_success:
                raise RequestFailed(f"{method} {path} answered something that is not JSON") from exc
            answer = {}
        if not response.is_success:
            raise RemoteRejected(response.status_code, answer if isinstance(answer, dict) else {})
        return answer

    def healthy(self) -> bool:
        """Whether anything answers the health check (which needs no token)."""
        try:
            return self.http.get("/api/health", timeout=2).is_success
        except httpx.HTTPError:
            return False

    def wait_for_job(self, job: dict[str, Any], bar: ProgressBar) -> dict[str, Any]:
        """Poll the job until it completes, fails or is cancelled, drawing its progress."""
        while str(job["status"]) not in TERMINAL_STATUSES:
            bar.update(job)
            time.sleep(JOB_POLL_SECS)
            job = self.call("GET", f"/api/jobs/{job['id']}")
        bar.update(job)
        bar.finish()
        return job


def _param(value: object) -> object:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


class JobFailed(MemCastleError):
    """A job waited for ended without completing: the job's own error."""


class DaemonCommand(MemCastleCommand):
    """A command that is a client of the running daemon."""

    out: Output
    daemon: DaemonClient

    def handle(self, *args: Any, **options: Any) -> None:
        config = self.config(options)
        self.out = Output(json_flag=options["json"])
        self.daemon = DaemonClient(
            locate(config),
            token=config.auth_token,
            mode=options["mode"] or os.environ.get("MEMCASTLE_MODE"),
            verbose=options["verbose"],
        )
        self.run(options)

    def run(self, options: dict[str, Any]) -> None:
        raise NotImplementedError

    def submit_job(self, body: dict[str, Any], *, wait: bool) -> None:
        """Queue a job and print it; with `wait`, follow it to its end (a progress bar on a
        terminal) and fail when it does not complete."""
        job = self.daemon.call("POST", "/api/jobs", body=body)
        if wait:
            job = self.daemon.wait_for_job(job, ProgressBar(self.out))
        self.out.show(job, job_card)
        if wait and job["status"] != "completed":
            raise JobFailed(
                job.get("error") or f"job {job['id']} was {job['status']}",
                code=job.get("error_code") or f"memcastle::jobs::{job['status']}",
                help=f"see `memcastle job show {job['id']}`",
            )


def add_wait_flag(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--wait",
        action="store_true",
        help="follow the job until it ends (a progress bar on a terminal); exit 1 unless it "
        "completes",
    )
