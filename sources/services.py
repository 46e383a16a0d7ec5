"""What the interfaces ask of mining sources: the adapters this daemon has and the places mined;
and what a mine job keeps of a place: its cursor and its documents."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from kernel.config import MiningConfig
from kernel.context import RequestContext
from sources import registry
from sources.adapters import describe
from sources.repository import SourceRepository
from sources.shapes import Sources


class SourceService:
    def __init__(self, repository: SourceRepository, config: MiningConfig) -> None:
        self._repository = repository
        self.config = config

    def list_sources(self, ctx: RequestContext) -> dict[str, Any]:
        """Every adapter, with the options it accepts, and every source mined so far."""
        ctx.require_read("sources")
        adapters = registry.available(self.config)
        return Sources.render(
            {
                "adapters": [describe(adapters[name]) for name in sorted(adapters)],
                "sources": self._repository.list_sources(),
            }
        )

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

    def advance(self, source_id: str, cursor: Any, job_id: str, now: dt.datetime) -> None:
        """Move the place's cursor past what the job has filed and recorded."""
        self._repository.advance(source_id, cursor, job_id, now)
