"""What the interfaces ask of mining sources: the adapters this daemon has and the places mined;
and what a mine job keeps of a place: its cursor and its documents."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kernel.config import MiningConfig
from kernel.context import RequestContext
from sources.adapters import Adapter
from sources.packages import SourcePackages
from sources.repository import SourceRepository
from sources.shapes import Sources


@dataclass(frozen=True)
class RunClaim:
    """A mine job's hold on its place. `after_unfinished`: the run before it ended without
    finishing (killed, failed or stopped), so it may have filed drawers it never recorded."""

    after_unfinished: bool


class SourceService:
    def __init__(self, repository: SourceRepository, packages: SourcePackages) -> None:
        self._repository = repository
        self.packages = packages
        self.config: MiningConfig = packages.config

    def list_sources(self, ctx: RequestContext) -> dict[str, Any]:
        """Every adapter, built in or installed, with its state and the options it accepts,
        and every source mined so far."""
        ctx.require_read("sources")
        return Sources.render(
            {"adapters": self.packages.adapters(), "sources": self._repository.list_sources()}
        )

    def adapter(self, name: str) -> Adapter:
        """The adapter a mine job runs (refusing an unknown, disabled or unavailable source)."""
        return self.packages.adapter(name)

    def require_signed_in(self, name: str) -> None:
        """Refuse (`memcastle::credential::required`) a run of a source that signs in and is
        not signed in: checked before a run touches a cursor or a drawer."""
        self.packages.require_signed_in(name)

    # A mine job's place: the caller has checked the memory mode.

    def ensure(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """The place with `record["id"]`, recorded from `record` the first time it is mined."""
        return self._repository.ensure(record)

    def documents(self, source_id: str, external_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The documents of the place already recorded among `external_ids`, by external id."""
        return self._repository.documents(source_id, external_ids)

    def record_documents(self, source_id: str, documents: list[dict[str, Any]]) -> None:
        """Record (or replace) documents once their drawers are filed."""
        self._repository.record_documents(source_id, documents)

    def claim_run(self, source_id: str, job_id: str, now: dt.datetime) -> RunClaim | None:
        """The place claimed for `job_id`, or None while another process's job is mining it.
        Two runs of one place at once would both file a changed document, one of them beside
        the other's drawer instead of superseding it."""
        claimed, holder = self._repository.claim_run(source_id, job_id, now)
        if not claimed:
            return None
        return RunClaim(after_unfinished=holder is not None and holder != job_id)

    def release_run(self, source_id: str, job_id: str) -> None:
        """The run of `job_id` finished: the next run of the place follows a finished one."""
        self._repository.release_run(source_id, job_id)

    def advance(self, source_id: str, cursor: Any, job_id: str, now: dt.datetime) -> None:
        """Move the place's cursor past what the job has filed and recorded."""
        self._repository.advance(source_id, cursor, job_id, now)
