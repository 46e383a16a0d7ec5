"""What a mine job keeps of a place through `SourceService`, against the real engine (`mem://`):
the place's record, its cursor and its documents (sources.md 2)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import httpx
import pytest

from jobs.repository import JobRepository
from kernel.config import MiningConfig
from kernel.context import RequestContext
from kernel.store import Store
from sources.access_tokens import AccessTokens
from sources.components import ComponentRuntime
from sources.credentials import FileCredentialStore
from sources.packages import SourcePackages
from sources.repository import PackageRepository, SourceRepository
from sources.services import RunClaim, SourceService

PLACE = "0b2e6f1c-9a8b-4f3e-8d2c-1a2b3c4d5e6f"
AT = dt.datetime(2025, 3, 1, 9, 0, 0, 250, tzinfo=dt.UTC)


@pytest.fixture
def sources(store: Store, tmp_path: Path) -> SourceService:
    config = MiningConfig(sources_dir=tmp_path / "sources", bundled_dir=tmp_path / "bundled")
    tokens = AccessTokens(FileCredentialStore(tmp_path / "credentials"), httpx.Client())
    packages = SourcePackages(
        config, PackageRepository(store), ComponentRuntime(tmp_path), tokens=tokens
    )
    return SourceService(SourceRepository(store), packages)


def place(cursor: Any = None) -> dict[str, Any]:
    return {
        "id": PLACE,
        "source": "directory",
        "account": None,
        "locator": "/notes",
        "credential": {},
        "cursor": cursor,
        "created_at": AT,
        "updated_at": AT,
    }


def document(external_id: str, revision: str) -> dict[str, Any]:
    return {
        "external_id": external_id,
        "revision": revision,
        "raw_hash": f"hash of {revision}",
        "title": external_id,
        "metadata": {},
        "occurred_at": AT,
        "chunks": [{"index": 0, "hash": f"chunk of {revision}", "drawer": "d-1"}],
        "acquired_at": AT,
        "job": "job-1",
    }


def test_a_place_is_recorded_once(sources: SourceService) -> None:
    first = sources.ensure(place())
    again = sources.ensure(place(cursor="ignored: the place exists"))
    assert first["id"] == again["id"] == PLACE
    assert again["cursor"] is None
    assert again["locator"] == "/notes"


def test_the_cursor_moves_with_the_job(sources: SourceService) -> None:
    sources.ensure(place())
    later = AT + dt.timedelta(minutes=1)
    sources.advance(PLACE, "notes/b.md", "job-1", later)
    row = sources.ensure(place())
    assert (row["cursor"], row["last_job"], row["last_run_at"]) == ("notes/b.md", "job-1", later)


def test_documents_are_recorded_and_replaced(sources: SourceService) -> None:
    sources.ensure(place())
    assert sources.documents(PLACE, ["a.md"]) == {}
    sources.record_documents(PLACE, [document("a.md", "r1"), document("b.md", "r1")])
    sources.record_documents(PLACE, [document("a.md", "r2")])
    found = sources.documents(PLACE, ["a.md", "b.md", "c.md"])
    assert set(found) == {"a.md", "b.md"}
    assert found["a.md"]["revision"] == "r2"
    assert found["a.md"]["chunks"] == [{"index": 0, "hash": "chunk of r2", "drawer": "d-1"}]
    assert found["b.md"]["revision"] == "r1"
    listed = sources.list_sources(RequestContext.build())["sources"]
    assert [(row["id"], row["documents"]) for row in listed] == [(PLACE, 2)]


def running_job(store: Store, job_id: str, lease_until: dt.datetime) -> None:
    JobRepository(store).create(
        {
            "id": job_id,
            "kind": {"type": "mine", "path": "/notes"},
            "status": "running",
            "priority": 50,
            "created_at": AT,
            "updated_at": AT,
            "lease_owner": f"memcastle-1-{job_id}",
            "lease_expires_at": lease_until,
        }
    )


def test_a_place_is_mined_by_one_job_at_a_time_whatever_process_runs_it(
    sources: SourceService, store: Store
) -> None:
    """Two processes' mines of one place would both file a changed document, one beside the
    other's drawer (bench/chaos.py --remote found 46 texts stored twice): the second waits."""
    sources.ensure(place())
    lease = AT + dt.timedelta(seconds=30)
    running_job(store, "first", lease)
    running_job(store, "second", lease)

    assert sources.claim_run(PLACE, "first", AT)
    assert not sources.claim_run(PLACE, "second", AT)
    assert sources.claim_run(PLACE, "first", AT), "its own claim holds"
    # The first job's process died: once its lease has lapsed the place is free.
    assert sources.claim_run(PLACE, "second", lease + dt.timedelta(seconds=1))
    assert not sources.claim_run(PLACE, "first", AT)
    store.query("UPDATE job:second SET status = 'completed'")
    assert sources.claim_run(PLACE, "first", AT), "a job that ended holds nothing"


def test_a_claim_says_whether_the_run_before_it_ended_without_finishing(
    sources: SourceService, store: Store
) -> None:
    """A finished run releases the place; a run that did not (killed, failed, stopped) leaves
    it claimed, and the next claim says so: that run may have filed drawers it never
    recorded."""
    sources.ensure(place())
    lease = AT + dt.timedelta(seconds=30)
    for job_id in ("first", "second", "third"):
        running_job(store, job_id, lease)

    assert sources.claim_run(PLACE, "first", AT) == RunClaim(after_unfinished=False)
    assert sources.claim_run(PLACE, "first", AT) == RunClaim(after_unfinished=False)
    sources.release_run(PLACE, "first")
    assert sources.claim_run(PLACE, "second", AT) == RunClaim(after_unfinished=False)
    store.query("UPDATE job:second SET status = 'failed'")
    assert sources.claim_run(PLACE, "third", AT) == RunClaim(after_unfinished=True)
    sources.release_run(PLACE, "second")  # a late release of another job's run changes nothing
    assert sources.claim_run(PLACE, "third", AT) == RunClaim(after_unfinished=False)
